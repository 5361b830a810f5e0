// Reproducible, compensated floating-point sum.
//
// What decides the result depends on the data's length alone, never on the launch:
//   1. the input is cut into tiles of kReproTile elements; one warp sums a tile, lane l taking
//      the 16-byte vectors l, l + 32, l + 64, ... of the tile, element by element, in order,
//      into two accumulators (even and odd elements);
//   2. float-valued sums (float, half, bfloat16 inputs): each lane's partial of the tile (the
//      sum of its two float chains, joined in double, and the double sum of its rounding
//      errors: LanePartial) is added *exactly* into the lane's
//      own fixed-point accumulator in shared memory. Double sums: the 32 lane partials combine
//      in a fixed xor-butterfly into the tile's double-double partial, whose two halves are
//      added exactly into the warp's fixed-point accumulator;
//   3. the fixed-point accumulators (ExactSum: 32-bit limbs held in 64-bit integers) add up per
//      warp, then per block, then over the grid. Integer addition is associative, so which warp,
//      block or SM sums a tile and in what order the accumulators meet cannot change a bit: the
//      result is the exact sum of the lane (float) or tile (double) partials, rounded once.
// Which block or warp sums a tile changes with the GPU and max_blocks; the arithmetic does not.
//
// Elements enter a lane's sum through TwoSum (exact rounding errors kept: see FloatLane and
// DoubleLane). Only correctly rounded additions are used (nothing for the compiler to contract
// into FMAs), which every CUDA GPU implements identically. Infinities and NaN are tracked apart
// from the finite sum and give the IEEE result. (A lane's even or odd chain is a float sum of up
// to 64 elements and can overflow to infinity where their exact sum would not: float or bfloat16
// inputs near the float limit, 3.4e38, are not supported. The two chains join in double, which
// cannot overflow.)
#pragma once

#include <algorithm>
#include <type_traits>

#include "fastreduce/detail/policy.hpp"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/detail/exact_sum.cuh"
#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/vector.cuh"
#include "fastreduce/detail/warp_reduce.cuh"

namespace fastreduce::engine {

using primitives::DoubleDouble;
using primitives::kVecElems;
using primitives::Vec;

// Adds x to a lane accumulator with TwoSum (exact error term, no ordering assumption).
__device__ __forceinline__ DoubleDouble two_sum_add(DoubleDouble a, double x) {
  const primitives::TwoSum s = primitives::two_sum(a.hi, x);
  return {s.sum, __dadd_rn(a.lo, s.error)};
}

// Normalised double-double addition; non-finite sums pass through as IEEE would give them.
__device__ __forceinline__ DoubleDouble dd_add(DoubleDouble a, DoubleDouble b) {
  const primitives::TwoSum s = primitives::two_sum(a.hi, b.hi);
  if (!isfinite(s.sum)) return {s.sum, 0.0};
  const double lo = __dadd_rn(__dadd_rn(a.lo, b.lo), s.error);
  const double hi = __dadd_rn(s.sum, lo);  // FastTwoSum: |s| >= |lo| here
  return {hi, __dsub_rn(lo, __dsub_rn(hi, s.sum))};
}

__device__ __forceinline__ DoubleDouble warp_dd_reduce(DoubleDouble v) {
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    DoubleDouble other;
    other.hi = __shfl_xor_sync(primitives::kFullMask, v.hi, offset);  // partner lane's partial
    other.lo = __shfl_xor_sync(primitives::kFullMask, v.lo, offset);
    // Both lanes must compute the same value: order the operands by lane, not by caller.
    v = (threadIdx.x & offset) ? dd_add(other, v) : dd_add(v, other);
  }
  return v;
}

template <class T, class A>
struct ReproArgs {
  const T* in;
  std::size_t n;
  std::size_t tiles;
  bool aligned;                // in is 16-byte aligned: vector loads
  unsigned long long* rows;    // per block: its accumulator's limbs and its special-value flags
  A* out;
  primitives::ResultType result;  // the type of *out (ResultType::Acc: A)
};

// A lane's running sum of 32-bit (or narrower) inputs: a float `sum` with every rounding error
// of it kept exactly (TwoSum in float) and added to a double `error`. sum + error equals the
// exact sum of the lane's elements up to the double additions' rounding (about 2^-53 of the
// errors, themselves 2^-24 of the sum), while most of the work stays in the float pipeline:
// per element six float additions, one conversion and one double addition.
struct FloatLane {
  float sum = 0.0f;
  double error = 0.0;
  __device__ __forceinline__ void add(float x) {
    const primitives::TwoSumFloat t = primitives::two_sum_float(sum, x);
    error = __dadd_rn(error, static_cast<double>(t.error));
    sum = t.sum;
  }
};

// A lane's running sum of doubles: TwoSum in double, errors in lo.
struct DoubleLane {
  DoubleDouble acc{0.0, 0.0};
  __device__ __forceinline__ void add(double x) { acc = two_sum_add(acc, x); }
  __device__ __forceinline__ DoubleDouble total() const { return acc; }
};

template <class T>
using Lane = std::conditional_t<std::is_same_v<T, double>, DoubleLane, FloatLane>;

// Mode::Exact's lanes (ExactFloatLane, ExactDoubleLane): detail/exact_arith.hpp.
using primitives::ExactDoubleLane;
using primitives::ExactFloatLane;

// No spills: the reproducible lanes round instead.
struct NoSpill {
  __device__ __forceinline__ void operator()(double) const {}
};

// A lane's partial of a tile for float-valued sums: the sum of its two chains, and the double sum
// of every rounding error. The chains join in double with TwoSum: the sum of two floats cannot
// overflow a double, and the join's own error (zero unless the chains differ by more than 2^29)
// is kept exactly like the others. Both halves are whole multiples of 2^-149.
struct LanePartial {
  double sum;
  double error;
};

__device__ __forceinline__ LanePartial lane_partial(const FloatLane (&lanes)[2]) {
  const primitives::TwoSum join = primitives::two_sum(lanes[0].sum, lanes[1].sum);
  return {join.sum, __dadd_rn(__dadd_rn(lanes[0].error, lanes[1].error), join.error)};
}

// What an exact double lane adds for element x (and y, the second input's element at the same
// index): x itself (a double), its square (LaneTerm::Square: the L2 norm of float, half and
// bfloat16 inputs) or the product x y (LaneTerm::Product: their dot product), in double. A
// square or product of two such values is exact in double (a significand of at most 48 bits
// between 2^-298 and 2^256), and __dmul_rn is never contracted into an FMA with the addition it
// feeds.
template <LaneTerm Term, class E>
__device__ __forceinline__ double lane_value(const E& x, const E& y) {
  if constexpr (Term == LaneTerm::Element) {
    static_assert(std::is_same_v<E, double>, "exact double lanes add doubles, squares or products");
    return x;
  } else {
    const double d = static_cast<double>(primitives::to_acc<float>(x));
    if constexpr (Term == LaneTerm::Square) return __dmul_rn(d, d);
    else return __dmul_rn(d, static_cast<double>(primitives::to_acc<float>(y)));
  }
}

// Mode::Exact's lanes of the variance of float, half and bfloat16 inputs: one load feeds both exact
// sums, of the elements (`first`, the exact Sum's lane) and of their squares (`second`, an exact
// double lane; each square is exact in double). try_add says whether both additions were exact.
struct ExactMomentLane {
  ExactFloatLane first;
  ExactDoubleLane second;
  __device__ __forceinline__ bool try_add(float x) {
    const bool element = first.try_add(x);
    return second.try_add(lane_value<LaneTerm::Square>(x, x)) & element;
  }
};

// Adds one vector to the lane's two accumulators (even and odd elements: two dependency chains).
// Exact lanes hand what would round to `spill`: float-valued sums element by element (the
// lane's own limbs), double lanes once per pair of elements (spill(pending) with the two chains'
// leftovers, 0 where none: the warp's row of limbs, WarpSpillRow). Term: the elements' squares,
// or their products with w's (exact double lanes only); w is not read otherwise.
template <class T, class L, LaneTerm Term = LaneTerm::Element, class Spill>
__device__ __forceinline__ void add_vector(L (&lanes)[2], const Vec<T>& v, const Vec<T>& w, Spill& spill) {
  static_assert(Term == LaneTerm::Element || std::is_same_v<L, ExactDoubleLane>,
                "squares and products go to the exact double lanes");
  if constexpr (std::is_same_v<L, ExactDoubleLane> || std::is_same_v<L, ExactMomentLane>) {
    double pending[2] = {0.0, 0.0};
#pragma unroll
    for (unsigned c = 0; c < kVecElems<T>; ++c) {
      double left;
      if constexpr (std::is_same_v<L, ExactMomentLane>) {
        // The element as the exact Sum's lanes take it (spill(x): the lane's limbs), its square on
        // the exact double lane.
        const float x = primitives::to_acc<float>(v.elem[c]);
        lanes[c % 2].first.add(x, spill);
        left = lanes[c % 2].second.add(lane_value<LaneTerm::Square>(x, x));
      } else {
        left = lanes[c % 2].add(lane_value<Term>(v.elem[c], w.elem[c]));
      }
      if (left != 0.0) pending[c % 2] = left;  // one element per chain between two spills
      if (c % 2 == 1) {
        spill(pending);
        pending[0] = pending[1] = 0.0;
      }
    }
  } else {
#pragma unroll
    for (unsigned c = 0; c < kVecElems<T>; ++c) {
      if constexpr (std::is_same_v<L, ExactFloatLane>) lanes[c % 2].add(primitives::to_acc<float>(v.elem[c]), spill);
      else if constexpr (std::is_same_v<T, double>) lanes[c % 2].add(v.elem[c]);
      else lanes[c % 2].add(primitives::to_acc<float>(v.elem[c]));
    }
  }
}

// Loads batch b (kReproLoadBatch vectors per lane) of `tile` for this lane: 16-byte loads for a
// whole, aligned tile; element loads in the same order for a misaligned pointer or the last,
// partial tile, with elements past n read as +0.0 (which leaves every partial unchanged).
// Vectors per lane per batch: two batches live in registers; 2-byte types unpack to twice the
// floats, so they take half as many.
template <class T>
inline constexpr unsigned kLaneVectors = kReproTile / kVecElems<T> / 32;  // a lane's vectors per tile
template <class T>
inline constexpr unsigned kBatch = std::min(sizeof(T) == 2 ? kReproLoadBatch / 2 : kReproLoadBatch, kLaneVectors<T>);
// Squares (the exact L2 norm) take half a batch: their double lanes need the registers, and a kernel
// of at most 128 registers a thread runs two blocks an SM, whose warps hide the double additions'
// latency. Products (the exact dot product) load two inputs: a quarter of a batch from each.
template <class T, LaneTerm Term = LaneTerm::Element>
inline constexpr unsigned kBatchOf = Term == LaneTerm::Square    ? kBatch<T> / 2
                                     : Term == LaneTerm::Product ? kBatch<T> / 4
                                                                 : kBatch<T>;
// The batch of lanes L. Mode::Exact's float-valued sums (ExactFloatLane) and the variance's lanes
// (ExactMomentLane) take half a batch, as the squares do, so that their kernels fit two blocks an
// SM (repro_sum_kernel and exact_moments_kernel ask for it; the rows' and segments' kernels come to
// 126-128 registers): their additions (in double) need the warps more than the loads need the
// registers. (Doubles keep the whole batch and one block an SM: measured faster, being bound by
// memory.)
template <class T, class L, LaneTerm Term>
inline constexpr unsigned kLaneBatch =
    std::is_same_v<L, ExactMomentLane> || std::is_same_v<L, ExactFloatLane> ? kBatch<T> / 2 : kBatchOf<T, Term>;

template <class T, unsigned B>
__device__ __forceinline__ void load_batch(Vec<T> (&batch)[B], const T* in, std::size_t n,
                                           std::size_t tile, unsigned b, bool aligned, unsigned lane) {
  constexpr unsigned V = kVecElems<T>;
  const std::size_t base = tile * kReproTile;
  if (aligned && base + kReproTile <= n) {
    const Vec<T>* v = reinterpret_cast<const Vec<T>*>(in + base) + lane;
#pragma unroll
    for (unsigned j = 0; j < B; ++j) batch[j] = primitives::load_vec(v + (b * B + j) * 32);
  } else {
#pragma unroll
    for (unsigned j = 0; j < B; ++j) {
      const std::size_t first = base + (std::size_t(b * B + j) * 32 + lane) * V;
#pragma unroll
      for (unsigned c = 0; c < V; ++c) batch[j].elem[c] = first + c < n ? in[first + c] : T(0.0f);
    }
  }
}


// Mode::Exact's lanes: their hot loop keeps the exact additions (try_add) and a batch with one
// that was not is summed again with spills (add_batch_again).
template <class L>
inline constexpr bool kExactLane =
    std::is_same_v<L, ExactFloatLane> || std::is_same_v<L, ExactDoubleLane> || std::is_same_v<L, ExactMomentLane>;

// Mode::Exact's hot loop: one vector into the lane's two chains with try_add (add_vector's
// order); `exact` and-ed with whether every addition was exact.
template <class T, class L, LaneTerm Term = LaneTerm::Element>
__device__ __forceinline__ bool try_vector(L (&lanes)[2], const Vec<T>& v, const Vec<T>& w, bool exact) {
#pragma unroll
  for (unsigned c = 0; c < kVecElems<T>; ++c) {
    if constexpr (std::is_same_v<L, ExactDoubleLane>) exact = lanes[c % 2].try_add(lane_value<Term>(v.elem[c], w.elem[c])) & exact;
    else exact = lanes[c % 2].try_add(primitives::to_acc<float>(v.elem[c])) & exact;
  }
  return exact;
}

// Mode::Exact's slow path: batch b of this lane's share of `tile` loaded again, element by element
// (past n: +0.0, as load_batch), and added with spills, from the lane sums the batch started
// with. Only the lanes whose batch had an inexact addition come here (every spill is a lane's
// own). A loop, not unrolled: one copy of the spill's code per batch of the hot loop. Abs: the
// elements' magnitudes (the L1 norm); Term: their squares (the L2 norm) or their products with
// in2's elements (the dot product).
template <class T, bool Abs, LaneTerm Term, class L, class Spill>
__device__ __forceinline__ void add_batch_again(L (&lanes)[2], const T* in, const T* in2, std::size_t n,
                                                std::size_t tile, unsigned b, unsigned lane, Spill& spill) {
  constexpr unsigned V = kVecElems<T>;
  constexpr unsigned B = kLaneBatch<T, L, Term>;
#pragma unroll 1
  for (unsigned j = 0; j < B; ++j) {
    const std::size_t first = tile * kReproTile + (std::size_t(b * B + j) * 32 + lane) * V;
    Vec<T> v, w;
#pragma unroll
    for (unsigned c = 0; c < V; ++c) v.elem[c] = first + c < n ? in[first + c] : T(0.0f);
    if constexpr (Term == LaneTerm::Product) {
#pragma unroll
      for (unsigned c = 0; c < V; ++c) w.elem[c] = first + c < n ? in2[first + c] : T(0.0f);
    } else {
      w = v;
    }
    if constexpr (Abs) v = primitives::magnitudes(v);
    add_vector<T, L, Term>(lanes, v, w, spill);
  }
}

// A warp sums its tiles (first, first + step, ...) one after the other; lane l owns vectors
// l, l + 32, ... of each tile and adds them in increasing order. The loads of the next batch
// (of this tile or the next) are in flight while the current batch is added. After each tile,
// add_tile(lanes) takes the lane's two accumulators. Abs: each element's magnitude instead (the
// sign bits cleared as the batch is taken from the loads); Term: its square, or its product with
// in2's element at the same index (exact double lanes; `aligned`: in and in2 are both 16-byte
// aligned; in2 is read for products only).
template <class L, bool Abs, LaneTerm Term = LaneTerm::Element, class T, class Spill, class AddTile>
__device__ __forceinline__ void sum_tiles_with(const T* in, const T* in2, std::size_t n, std::size_t tiles,
                                               std::size_t first, std::size_t step, bool aligned, unsigned lane,
                                               Spill& spill, AddTile&& add_tile) {
  constexpr bool kTwo = Term == LaneTerm::Product;
  constexpr unsigned B = kLaneBatch<T, L, Term>;
  constexpr unsigned batches = kReproTile / kVecElems<T> / 32 / B;
  static_assert(batches * B * 32 * kVecElems<T> == kReproTile);
  if (first >= tiles) return;
  Vec<T> next[B], next2[kTwo ? B : 1];
  load_batch(next, in, n, first, 0, aligned, lane);
  if constexpr (kTwo) load_batch(next2, in2, n, first, 0, aligned, lane);
  for (std::size_t tile = first; tile < tiles; tile += step) {
    L lanes[2];
#pragma unroll
    for (unsigned b = 0; b < batches; ++b) {
      Vec<T> current[B], current2[kTwo ? B : 1];
#pragma unroll
      for (unsigned j = 0; j < B; ++j) current[j] = primitives::magnitudes_if<Abs>(next[j]);
      if constexpr (kTwo) {
#pragma unroll
        for (unsigned j = 0; j < B; ++j) current2[j] = next2[j];
      }
      if (b + 1 < batches) {
        load_batch(next, in, n, tile, b + 1, aligned, lane);
        if constexpr (kTwo) load_batch(next2, in2, n, tile, b + 1, aligned, lane);
      } else if (tile + step < tiles) {
        load_batch(next, in, n, tile + step, 0, aligned, lane);
        if constexpr (kTwo) load_batch(next2, in2, n, tile + step, 0, aligned, lane);
      }
      if constexpr (kExactLane<L>) {
        const L saved[2] = {lanes[0], lanes[1]};
        bool exact = true;
#pragma unroll
        for (unsigned j = 0; j < B; ++j) {
          if constexpr (kTwo) exact = try_vector<T, L, Term>(lanes, current[j], current2[j], exact);
          else exact = try_vector<T, L, Term>(lanes, current[j], current[j], exact);
        }
        if (!exact) {
          lanes[0] = saved[0];
          lanes[1] = saved[1];
          add_batch_again<T, Abs, Term>(lanes, in, in2, n, tile, b, lane, spill);
        }
      } else {
#pragma unroll
        for (unsigned j = 0; j < B; ++j) add_vector<T>(lanes, current[j], current[j], spill);
      }
    }
    add_tile(lanes);
  }
}

// The reproducible lanes (Lane<T>), which round instead of spilling.
template <bool Abs, class T, class AddTile>
__device__ __forceinline__ void sum_tiles(const T* in, std::size_t n, std::size_t tiles, std::size_t first,
                                          std::size_t step, bool aligned, unsigned lane, AddTile&& add_tile) {
  NoSpill none;
  sum_tiles_with<Lane<T>, Abs>(in, in, n, tiles, first, step, aligned, lane, none, add_tile);
}

template <class A>
using ReproShared = primitives::ExactShared<A, kReproThreads / 32>;

// LaneExact::into adds, per limb, 32 lanes' sums and errors rows, each at most one 32-bit piece
// per tile a warp sums (a grid of one block: kReproMaxElements / kReproTile / warps tiles).
static_assert(double(kReproMaxElements / kReproTile / (kReproThreads / 32)) * 64 * 4294967295.0 < 9223372036854775808.0,
              "the lane limbs of float-valued sums could overflow: lower kReproMaxElements");

// Mode::Exact, doubles: what the warp's lanes hand on (their chains' leftovers), added exactly to
// a row of limbs in shared memory with integer atomics, each lane on its own (no lane waits for
// another, whatever the data); the row joins the warp's accumulator, and is cleared, after each
// tile that spilled (flush). Between two flushes a limb gathers at most two pieces below 2^32 per
// element of a tile.
struct WarpSpillRow {
  static constexpr unsigned K = primitives::ExactSum<double>::K;
  long long* limbs;   // the warp's ExactSum<double>::kLimbs words
  unsigned* special;  // kPlusInf | kMinusInf | kNaN handed on
  bool spilled = false;  // this lane handed something on since the last flush

  // Called by every lane of the warp.
  __device__ __forceinline__ WarpSpillRow(long long* row, unsigned* flags, unsigned lane) : limbs(row), special(flags) {
#pragma unroll
    for (unsigned k = 0; k < K; ++k) limbs[lane + 32 * k] = 0;
    if (lane == 0) *special = 0;
    __syncwarp();
  }
  // The leftovers of a lane's two chains (0: none).
  __device__ __forceinline__ void operator()(const double (&pending)[2]) {
#pragma unroll
    for (unsigned c = 0; c < 2; ++c) {
      if (pending[c] != 0.0) {
        primitives::atomic_add_exact<double>(limbs, special, pending[c]);
        spilled = true;
      }
    }
  }
  // Called by every lane: where any lane spilled, the row is added into `exact` and cleared.
  // Returns whether it was.
  __device__ __forceinline__ bool flush(primitives::ExactSum<double>& exact, unsigned lane) {
    if (!__any_sync(primitives::kFullMask, spilled)) return false;
    __syncwarp();  // every lane's atomics are done
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      exact.limb[k] += limbs[lane + 32 * k];
      limbs[lane + 32 * k] = 0;
    }
    exact.special |= *special;
    __syncwarp();  // every lane has read the flags
    if (lane == 0) *special = 0;
    __syncwarp();
    spilled = false;
    return true;
  }
};

using primitives::exact_pair_add;
using primitives::ExactPair;

// Mode::Exact, doubles, at the end of a tile: the warp's 64 chains (a sum and an error each) meet
// in a fixed xor butterfly of exact pairs, and the tile's pair goes into the warp's accumulator
// (two additions, as the reproducible sum's double-double). Where some addition would round
// (data spread over more than about 2^50), every lane's chains go to `spill` instead. A tile hands
// on at most two pieces per limb per element: after a tile that did, the row joins the
// accumulator, which is carried, so that no limb comes near 2^63.
__device__ __forceinline__ void add_exact_double_tile(primitives::ExactSum<double>& exact,
                                                      const ExactDoubleLane (&lanes)[2], unsigned lane,
                                                      WarpSpillRow& spill) {
  ExactPair v = exact_pair_add({lanes[0].sum, lanes[0].error, true}, {lanes[1].sum, lanes[1].error, true});
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    ExactPair other;
    other.sum = __shfl_xor_sync(primitives::kFullMask, v.sum, offset);
    other.error = __shfl_xor_sync(primitives::kFullMask, v.error, offset);
    other.ok = __shfl_xor_sync(primitives::kFullMask, v.ok, offset);
    // Both lanes must compute the same value: order the operands by lane, not by caller.
    v = (lane & offset) ? exact_pair_add(other, v) : exact_pair_add(v, other);
  }
  if (__all_sync(primitives::kFullMask, v.ok)) {
    exact.add(v.sum, lane);
    exact.add(v.error, lane);
  } else {
    for (unsigned c = 0; c < 2; ++c) {
      const double pending[2] = {lanes[c].sum, lanes[c].error};
      spill(pending);
    }
  }
  if (spill.flush(exact, lane)) exact.carry(lane);
}

// A warp's tiles (first, first + step, ... below `tiles`) of a float-valued sum, added exactly to
// its lanes' limbs: the reproducible lanes' partials, or (Exact) Mode::Exact's chains and spills.
// Abs: the sum of the elements' magnitudes.
template <class T, bool Exact, bool Abs = false>
__device__ __forceinline__ void add_float_tiles(primitives::LaneExact& lane_exact, const T* in, std::size_t n,
                                                std::size_t tiles, std::size_t first, std::size_t step, bool aligned,
                                                unsigned lane) {
  if constexpr (Exact) {
    auto spill = [&](double x) { lane_exact.spill(x); };
    sum_tiles_with<ExactFloatLane, Abs>(in, in, n, tiles, first, step, aligned, lane, spill, [&](ExactFloatLane (&lanes)[2]) {
      lane_exact.add_chains(lanes[0].sum, lanes[1].sum);
    });
  } else {
    sum_tiles<Abs>(in, n, tiles, first, step, aligned, lane, [&](FloatLane (&lanes)[2]) {
      const LanePartial partial = lane_partial(lanes);
      lane_exact.add(partial.sum, partial.error);
    });
  }
}

// The same for double sums, into the warp's accumulator. Exact: `spill_row` and `spill_flags`,
// the warp's row of ExactSum<double>::kLimbs words and a flags word in shared memory. Term: the
// squares of float, half or bfloat16 elements, or their products with in2's, each exact in
// double, on the exact double lanes.
template <bool Exact, bool Abs = false, LaneTerm Term = LaneTerm::Element, class T = double>
__device__ __forceinline__ void add_double_tiles(primitives::ExactSum<double>& exact, const T* in, std::size_t n,
                                                 std::size_t tiles, std::size_t first, std::size_t step, bool aligned,
                                                 unsigned lane, long long* spill_row = nullptr,
                                                 unsigned* spill_flags = nullptr, const T* in2 = nullptr) {
  if constexpr (Exact) {
    WarpSpillRow spill(spill_row, spill_flags, lane);
    sum_tiles_with<ExactDoubleLane, Abs, Term>(in, in2, n, tiles, first, step, aligned, lane, spill, [&](ExactDoubleLane (&lanes)[2]) {
      add_exact_double_tile(exact, lanes, lane, spill);
    });
  } else {
    static_assert(Term == LaneTerm::Element && std::is_same_v<T, double>, "the reproducible double lanes sum doubles");
    sum_tiles<Abs>(in, n, tiles, first, step, aligned, lane, [&](DoubleLane (&lanes)[2]) {
      exact.add(warp_dd_reduce(dd_add(lanes[0].total(), lanes[1].total())), lane);
    });
  }
}

// A run of whole tiles (and at most one partial tile, the last) that one grid sums: tile t is
// in[t * kReproTile, ...), elements at or past n read as +0.0. `aligned`: in (and in2, where
// read) is 16-byte aligned. in2: the second input of a sum of products (LaneTerm::Product).
template <class T>
struct ReproSpan {
  const T* in;
  std::size_t n;
  std::size_t tiles;
  bool aligned;
  const T* in2 = nullptr;
};

// The accumulator format of the exact kernels: the sum's (acc_t), or double for the squares and
// products of float, half and bfloat16 inputs (LaneTerm::Square, LaneTerm::Product), which reach
// below a float's lowest bit.
template <class T, LaneTerm Term = LaneTerm::Element>
using exact_acc_t = std::conditional_t<Term != LaneTerm::Element, double, acc_t<T, Sum>>;

// The block's share of every span's tiles (tiles round the grid's warps, blocks first, so that a
// small input still spreads over many SMs), summed into its warps' exact accumulators; stores
// the block's row of limbs at rows + blockIdx.x * kExactRowWords. Ends with the block's threads
// done with `shared`. Term: the elements' squares, or their products with in2's (Exact only).
template <class T, std::size_t Spans, bool Exact = false, bool Abs = false, LaneTerm Term = LaneTerm::Element>
__device__ __forceinline__ void repro_block_row(const ReproSpan<T> (&spans)[Spans], unsigned long long* rows,
                                                ReproShared<exact_acc_t<T, Term>>& shared) {
  static_assert(Term == LaneTerm::Element || (Exact && !Abs), "squares and products take Mode::Exact's lanes");
  using A = exact_acc_t<T, Term>;
  constexpr unsigned warps = kReproThreads / 32;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  primitives::ExactSum<A> exact;
  const std::size_t first = blockIdx.x + std::size_t(warp) * gridDim.x;
  const std::size_t step = std::size_t(gridDim.x) * warps;
  if constexpr (std::is_same_v<A, float>) {
    __shared__ primitives::LaneLimbs lane_limbs[warps];
    primitives::LaneExact lane_exact(lane_limbs[warp], lane);
#pragma unroll
    for (std::size_t s = 0; s < Spans; ++s) {
      add_float_tiles<T, Exact, Abs>(lane_exact, spans[s].in, spans[s].n, spans[s].tiles, first, step, spans[s].aligned, lane);
    }
    lane_exact.into(exact);
  } else {
    __shared__ long long spill_rows[Exact ? warps : 1][Exact ? primitives::ExactSum<double>::kLimbs : 1];
    __shared__ unsigned spill_flags[warps];
#pragma unroll
    for (std::size_t s = 0; s < Spans; ++s) {
      add_double_tiles<Exact, Abs, Term>(exact, spans[s].in, spans[s].n, spans[s].tiles, first, step, spans[s].aligned,
                                         lane, spill_rows[Exact ? warp : 0], &spill_flags[warp], spans[s].in2);
    }
  }
  unsigned long long* row = rows + std::size_t(blockIdx.x) * primitives::kExactRowWords<A>;
  primitives::store_exact_row(exact, shared, row);
}

// Each block sums its tiles into its warps' exact accumulators and stores the block's row of
// limbs. A grid of one block then rounds its own row; a larger grid leaves the rows to
// repro_finish_kernel, which runs after it.
// Exact: Mode::Exact's lanes, which never round (the total is the exact sum, rounded once).
// Op: the sum, the sum of the elements' magnitudes (the L1 norm) or the sum divided by n (the mean).
template <class T, bool Exact = false, primitives::ExactOp Op = primitives::ExactOp::Sum>
__global__ void __launch_bounds__(kReproThreads, Exact && !std::is_same_v<T, double> ? 2 : 1)
    repro_sum_kernel(ReproArgs<T, acc_t<T, Sum>> args) {
  __shared__ ReproShared<acc_t<T, Sum>> shared;
  const ReproSpan<T> spans[1] = {{args.in, args.n, args.tiles, args.aligned}};
  repro_block_row<T, 1, Exact, primitives::kMagnitudesOf<Op>>(spans, args.rows, shared);
  if (gridDim.x == 1) {
    primitives::finish_exact_rows<T, primitives::kDividesBy<Op>>(args.rows, 1, shared, args.out, args.result, args.n);
  }
}

// One block, after repro_sum_kernel's grid: the rounded exact total of its rows (Divide: divided
// by `divisor`, the mean).
template <class A, bool Divide = false>
__global__ void __launch_bounds__(kReproThreads) repro_finish_kernel(const unsigned long long* rows, unsigned count, A* out,
                                                                     primitives::ResultType result,
                                                                     std::uint64_t divisor) {
  __shared__ ReproShared<A> shared;
  primitives::wait_for_prior_grid();
  primitives::finish_exact_rows<primitives::AnyNarrow, Divide>(rows, count, shared, out, result, divisor);
}

// The sums of squares and products (the L2 norm and the dot product of float, half and bfloat16
// inputs, in Mode::Exact and Mode::Reproducible): x and (products) y, n elements in `tiles` tiles;
// `aligned`: both 16-byte aligned. O: the result's type (float; the L2 norm of half and bfloat16
// inputs also in their own type).
template <class T, class O = float>
struct TermArgs {
  const T* x;
  const T* y;  // LaneTerm::Product only
  std::size_t n;
  std::size_t tiles;
  bool aligned;
  unsigned long long* rows;  // per block: its accumulator's limbs and its special-value flags
  O* out;
};

// The finish of a sum of squares or products from its exact total (normalised limbs of the double
// format, its sign and special-value flags) into out[q], by one warp (lane 0 stores):
// - Square (the L2 norm): the square root of the exact sum of squares, the sum rounded once to
//   double, its square root rounded to double, then once to O (float, half or bfloat16: within an
//   ulp of the correctly rounded norm; the bits a function of the data alone);
// - Product (the dot product): the exact sum of the products rounded once to float (correctly
//   rounded).
// The 1-D result (finish_term_rows), each output along an axis and each segment alike.
template <LaneTerm Term, class O>
__device__ __forceinline__ void store_term_total(O* out, std::size_t q, const unsigned long long* limbs, bool negative,
                                                 unsigned special, unsigned lane) {
  static_assert(Term != LaneTerm::Element);
  static_assert(std::is_same_v<O, float> || Term == LaneTerm::Square, "the exact dot product's result is a float");
  if constexpr (Term == LaneTerm::Square) {
    const double squares = primitives::round_exact<double>(limbs, negative, special, lane);
    if (lane == 0) out[q] = primitives::narrow_double<O>(__dsqrt_rn(squares));
  } else {
    const float sum = primitives::round_exact<double, float>(limbs, negative, special, lane);
    if (lane == 0) out[q] = sum;
  }
}

// A warp's row of signed limbs in shared memory (not carried yet) with its flags, normalised in
// place and finished into out[q] (store_term_total).
template <LaneTerm Term, class O>
__device__ __forceinline__ void store_term_row(O* out, std::size_t q, long long* limbs, unsigned special,
                                               unsigned lane) {
  const bool negative = primitives::normalize_limb_row<double>(limbs, lane);
  store_term_total<Term>(out, q, reinterpret_cast<const unsigned long long*>(limbs), negative, special, lane);
}

// One block adds rows[0 .. count) and stores the result (store_term_total).
template <LaneTerm Term, class O>
__device__ __forceinline__ void finish_term_rows(const unsigned long long* rows, unsigned count,
                                                 ReproShared<double>& shared, O* out) {
  const primitives::ExactTotal<double> total = primitives::gather_exact_rows<double, kReproThreads / 32>(rows, count, shared);
  if (total.limbs == nullptr) return;
  store_term_total<Term>(out, 0, total.limbs, total.negative, total.special, threadIdx.x % 32);
}

// Each block adds the squares or products of its tiles exactly (the exact double lanes, as a
// double sum's) and stores its row; a grid of one block finishes its own row, a larger one leaves
// the rows to exact_terms_finish_kernel.
template <class T, LaneTerm Term, class O = float>
__global__ void __launch_bounds__(kReproThreads, 2) exact_terms_kernel(TermArgs<T, O> args) {
  __shared__ ReproShared<double> shared;
  const ReproSpan<T> spans[1] = {{args.x, args.n, args.tiles, args.aligned, args.y}};
  repro_block_row<T, 1, true, false, Term>(spans, args.rows, shared);
  if (gridDim.x == 1) finish_term_rows<Term>(args.rows, 1, shared, args.out);
}

// One block, after exact_terms_kernel's grid.
template <LaneTerm Term, class O = float>
__global__ void __launch_bounds__(kReproThreads) exact_terms_finish_kernel(const unsigned long long* rows, unsigned count,
                                                                           O* out) {
  __shared__ ReproShared<double> shared;
  primitives::wait_for_prior_grid();
  finish_term_rows<Term>(rows, count, shared, out);
}

// The variance and standard deviation of float, half and bfloat16 inputs (Mode::Exact and
// Mode::Reproducible, one contiguous output; along an axis: exact_axis.cuh and axis_repro.cuh): the exact sums S1 = sum x (the exact Sum's lanes and
// rows) and S2 = sum x^2 (the squares' exact double lanes and rows), both from one pass over the
// input; then, in one thread, N = n S2 - S1^2 exactly in integers (units of 2^-298, below which no
// square of these types has a bit), N rounded once to double, divided by n and then by
// n - correction in double (each correctly rounded), the standard deviation its square root in
// double, and the result rounded once to float (or, for a result in a half input's own type, to
// half or bfloat16): within an ulp of the correctly rounded value, and the bits a function of the
// data alone.
template <class T>
struct MomentArgs {
  const T* x;
  std::size_t n;
  std::size_t tiles;
  bool aligned;
  unsigned long long* sum_rows;      // per block: the exact Sum's row (kExactRowWords<float> words)
  unsigned long long* square_rows;   // per block: the squares' row (kExactRowWords<double> words)
};

// The variance's spills: an element whose addition to its lane's sum would round goes to the lane's
// own limbs (LaneExact, as the exact Sum's), a square's leftover to the warp's row (WarpSpillRow,
// as the exact L2 norm's).
struct MomentSpill {
  primitives::LaneExact& elements;
  WarpSpillRow& squares;
  __device__ __forceinline__ void operator()(double x) { elements.spill(x); }
  __device__ __forceinline__ void operator()(const double (&pending)[2]) { squares(pending); }
};

// A warp's tiles (first, first + step, ... below `tiles`) of the variance's two exact sums, each
// element loaded once (ExactMomentLane): the elements into the lanes' own limbs (lane_exact, as the
// exact Sum's), their squares into `squares` (spill_row and spill_flags: the warp's row of
// ExactSum<double>::kLimbs words and its flags word in shared memory, as add_double_tiles').
template <class T>
__device__ __forceinline__ void add_moment_tiles(primitives::LaneExact& lane_exact, primitives::ExactSum<double>& squares,
                                                 const T* in, std::size_t n, std::size_t tiles, std::size_t first,
                                                 std::size_t step, bool aligned, unsigned lane, long long* spill_row,
                                                 unsigned* spill_flags) {
  WarpSpillRow row(spill_row, spill_flags, lane);
  MomentSpill spill{lane_exact, row};
  sum_tiles_with<ExactMomentLane, false>(in, in, n, tiles, first, step, aligned, lane, spill,
                                         [&](ExactMomentLane (&lanes)[2]) {
                                           lane_exact.add_chains(lanes[0].first.sum, lanes[1].first.sum);
                                           const ExactDoubleLane of_squares[2] = {lanes[0].second, lanes[1].second};
                                           add_exact_double_tile(squares, of_squares, lane, row);
                                         });
}

// The one pass: each block adds its tiles' elements and their squares exactly, each element loaded
// once (ExactMomentLane), and stores its two rows: the exact Sum's (float format) and the squares'
// (double format). The grid is the exact Sum's tile order round the warps, as repro_block_row's.
template <class T>
__global__ void __launch_bounds__(kReproThreads, 2) exact_moments_kernel(MomentArgs<T> args) {
  constexpr unsigned warps = kReproThreads / 32;
  // The pass's limbs, then (after a barrier) the rows' stores, in one 43 KB union (static shared
  // memory stops at 48 KB; both apart took 51 KB).
  __shared__ union {
    struct {
      primitives::LaneLimbs lane_limbs[warps];
      long long spill_rows[warps][primitives::ExactSum<double>::kLimbs];
    } pass;
    struct {
      ReproShared<float> sums;
      ReproShared<double> squares;
    } store;
  } shared;
  __shared__ unsigned spill_flags[warps];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const std::size_t first = blockIdx.x + std::size_t(warp) * gridDim.x;
  const std::size_t step = std::size_t(gridDim.x) * warps;
  primitives::ExactSum<float> sums;
  primitives::ExactSum<double> squares;
  primitives::LaneExact lane_exact(shared.pass.lane_limbs[warp], lane);
  add_moment_tiles(lane_exact, squares, args.x, args.n, args.tiles, first, step, args.aligned, lane,
                   shared.pass.spill_rows[warp], &spill_flags[warp]);
  lane_exact.into(sums);
  __syncthreads();  // every warp is done with shared.pass
  primitives::store_exact_row(sums, shared.store.sums, args.sum_rows + std::size_t(blockIdx.x) * primitives::kExactRowWords<float>);
  primitives::store_exact_row(squares, shared.store.squares,
                              args.square_rows + std::size_t(blockIdx.x) * primitives::kExactRowWords<double>);
}

// The variance (root: the standard deviation) of n elements from their exact sums, as one thread
// computes it: |S1| (normalised limbs of the exact Sum's format) and S2 (of the double format),
// `special` the flags of both; NaN where an element is NaN or infinite, or n <= correction. The
// double result (variance_from_numerator) rounded once into Out (float, or half or bfloat16).
template <class Out>
__device__ __forceinline__ Out variance_of_sums(const unsigned long long* s1, const unsigned long long* s2,
                                                unsigned special, std::uint64_t n, std::int64_t correction, bool root) {
  double v = primitives::quiet_nan();
  if (special == 0) {
    const double numerator = primitives::variance_numerator(s1, primitives::ExactSum<float>::kLimbs, s2,
                                                            primitives::ExactSum<double>::kLimbs, n);
    v = primitives::variance_from_numerator(numerator, n, correction, root);
  }
  return primitives::narrow_double<Out>(v);
}

// One warp: the rows of S1 and S2 of an output (in shared memory, signed limbs not carried yet; the
// flags of both in `special`) normalised in place and finished into out[q] (variance_of_sums), as
// store_term_row finishes the L2 norm's and dot product's rows.
template <class Out>
__device__ __forceinline__ void store_variance_rows(Out* out, std::size_t q, long long* sums, long long* squares,
                                                    unsigned special, std::uint64_t n, std::int64_t correction,
                                                    bool root, unsigned lane) {
  primitives::normalize_limb_row<float>(sums, lane);  // (its sign: S1^2 has none)
  primitives::normalize_limb_row<double>(squares, lane);
  if (lane == 0) {
    out[q] = variance_of_sums<Out>(reinterpret_cast<const unsigned long long*>(sums),
                                   reinterpret_cast<const unsigned long long*>(squares), special, n, correction, root);
  }
}

// One block, after the pass: the variance (root: the standard deviation) of the n elements
// whose rows these are, into *out (float, or half or bfloat16).
template <class Out = float>
__global__ void __launch_bounds__(kReproThreads) exact_variance_finish_kernel(const unsigned long long* sum_rows,
                                                                              const unsigned long long* square_rows,
                                                                              unsigned count, std::uint64_t n,
                                                                              std::int64_t correction, bool root, Out* out) {
  __shared__ ReproShared<float> sums;
  __shared__ ReproShared<double> squares;
  primitives::wait_for_prior_grid();
  const primitives::ExactTotal<float> s1 = primitives::gather_exact_rows<float, kReproThreads / 32>(sum_rows, count, sums);
  const primitives::ExactTotal<double> s2 =
      primitives::gather_exact_rows<double, kReproThreads / 32>(square_rows, count, squares);
  if (s1.limbs == nullptr || threadIdx.x != 0) return;
  *out = variance_of_sums<Out>(s1.limbs, s2.limbs, s1.special | s2.special, n, correction, root);
}

}  // namespace fastreduce::engine
