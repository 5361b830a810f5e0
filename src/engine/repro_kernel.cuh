// Reproducible, compensated floating-point sum.
//
// The summation order depends on the data's length alone, never on the launch:
//   1. the input is cut into tiles of kReproTile elements; one warp sums a tile, lane l taking
//      the 16-byte vectors l, l + 32, l + 64, ... of the tile, element by element, in order;
//   2. the 32 lane partials combine in a fixed xor-butterfly;
//   3. the tile partials are stored by tile index; after a grid-wide barrier, segments of
//      kReproSegment consecutive tile partials are combined (thread t takes t, t + 256, ...,
//      then a fixed tree), and after a second barrier block 0 combines the segment partials
//      the same way (one segment: its partial is the result).
// Which block or warp sums a tile changes with the GPU and max_blocks; the arithmetic does not.
//
// Elements enter a lane's sum through TwoSum (exact rounding errors kept: see FloatLane and
// DoubleLane), and partials combine as normalised double-doubles (hi, lo). Only correctly
// rounded additions are used (nothing for the compiler to contract into FMAs), which every
// CUDA GPU implements identically. The plain running sums carry infinities and NaN through, so
// such data gives the IEEE result. (A float lane sum can overflow to infinity where the exact
// sum of its 128 elements would not: inputs near the float limit, 3.4e38, are not supported.)
#pragma once

#include <cooperative_groups.h>

#include <type_traits>

#include "engine/policy.hpp"
#include "engine/vector_load.cuh"
#include "fastreduce/fastreduce.cuh"
#include "primitives/warp_reduce.cuh"

namespace fastreduce::engine {

struct alignas(16) DoubleDouble {
  double hi;
  double lo;
};

// Adds x to a lane accumulator with TwoSum (exact error term, no ordering assumption).
__device__ __forceinline__ DoubleDouble two_sum_add(DoubleDouble a, double x) {
  const double s = __dadd_rn(a.hi, x);
  const double z = __dsub_rn(s, a.hi);
  const double e = __dadd_rn(__dsub_rn(a.hi, __dsub_rn(s, z)), __dsub_rn(x, z));
  return {s, __dadd_rn(a.lo, e)};
}

// Normalised double-double addition; non-finite sums pass through as IEEE would give them.
__device__ __forceinline__ DoubleDouble dd_add(DoubleDouble a, DoubleDouble b) {
  const double s = __dadd_rn(a.hi, b.hi);
  if (!isfinite(s)) return {s, 0.0};
  const double z = __dsub_rn(s, a.hi);
  const double e = __dadd_rn(__dsub_rn(a.hi, __dsub_rn(s, z)), __dsub_rn(b.hi, z));
  const double lo = __dadd_rn(__dadd_rn(a.lo, b.lo), e);
  const double hi = __dadd_rn(s, lo);  // FastTwoSum: |s| >= |lo| here
  return {hi, __dsub_rn(lo, __dsub_rn(hi, s))};
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
  DoubleDouble* partials;      // one per tile
  A* out;
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
    const float t = __fadd_rn(sum, x);
    const float z = __fsub_rn(t, sum);
    const float e = __fadd_rn(__fsub_rn(sum, __fsub_rn(t, z)), __fsub_rn(x, z));
    error = __dadd_rn(error, static_cast<double>(e));
    sum = t;
  }
  __device__ __forceinline__ DoubleDouble total() const {
    if (!isfinite(sum)) return {static_cast<double>(sum), 0.0};
    return dd_add({static_cast<double>(sum), 0.0}, {error, 0.0});
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

// Adds one vector to the lane's two accumulators (even and odd elements: two dependency chains).
template <class T>
__device__ __forceinline__ void add_vector(Lane<T> (&lanes)[2], const Vec<T>& v) {
#pragma unroll
  for (unsigned c = 0; c < kVecElems<T>; ++c) {
    if constexpr (std::is_same_v<T, double>) lanes[c % 2].add(v.elem[c]);
    else lanes[c % 2].add(to_acc<float>(v.elem[c]));
  }
}

// Loads batch b (kReproLoadBatch vectors per lane) of `tile` for this lane: 16-byte loads for a
// whole, aligned tile; element loads in the same order for a misaligned pointer or the last,
// partial tile, with elements past n read as +0.0 (which leaves every partial unchanged).
// Vectors per lane per batch: two batches live in registers; 2-byte types unpack to twice the
// floats, so they take half as many.
template <class T>
inline constexpr unsigned kBatch = sizeof(T) == 2 ? kReproLoadBatch / 2 : kReproLoadBatch;

template <class T>
__device__ __forceinline__ void load_batch(Vec<T> (&batch)[kBatch<T>], const T* in, std::size_t n,
                                           std::size_t tile, unsigned b, bool aligned, unsigned lane) {
  constexpr unsigned V = kVecElems<T>;
  const std::size_t base = tile * kReproTile;
  if (aligned && base + kReproTile <= n) {
    const Vec<T>* v = reinterpret_cast<const Vec<T>*>(in + base) + lane;
#pragma unroll
    for (unsigned j = 0; j < kBatch<T>; ++j) batch[j] = load_vec(v + (b * kBatch<T> + j) * 32);
  } else {
#pragma unroll
    for (unsigned j = 0; j < kBatch<T>; ++j) {
      const std::size_t first = base + (std::size_t(b * kBatch<T> + j) * 32 + lane) * V;
#pragma unroll
      for (unsigned c = 0; c < V; ++c) batch[j].elem[c] = first + c < n ? in[first + c] : T(0.0f);
    }
  }
}

// A warp sums its tiles (first, first + step, ...) one after the other; lane l owns vectors
// l, l + 32, ... of each tile and adds them in increasing order. The loads of the next batch
// (of this tile or the next) are in flight while the current batch is added. Each tile's
// partial goes to partials[tile].
template <class T>
__device__ __forceinline__ void sum_tiles(const T* in, std::size_t n, std::size_t tiles, std::size_t first,
                                          std::size_t step, bool aligned, unsigned lane, DoubleDouble* partials) {
  constexpr unsigned batches = kReproTile / kVecElems<T> / 32 / kBatch<T>;
  static_assert(batches * kBatch<T> * 32 * kVecElems<T> == kReproTile);
  if (first >= tiles) return;
  Vec<T> next[kBatch<T>];
  load_batch(next, in, n, first, 0, aligned, lane);
  for (std::size_t tile = first; tile < tiles; tile += step) {
    Lane<T> lanes[2];
#pragma unroll
    for (unsigned b = 0; b < batches; ++b) {
      Vec<T> current[kBatch<T>];
#pragma unroll
      for (unsigned j = 0; j < kBatch<T>; ++j) current[j] = next[j];
      if (b + 1 < batches) load_batch(next, in, n, tile, b + 1, aligned, lane);
      else if (tile + step < tiles) load_batch(next, in, n, tile + step, 0, aligned, lane);
#pragma unroll
      for (unsigned j = 0; j < kBatch<T>; ++j) add_vector<T>(lanes, current[j]);
    }
    const DoubleDouble partial = warp_dd_reduce(dd_add(lanes[0].total(), lanes[1].total()));
    if (lane == 0) partials[tile] = partial;
  }
}

// Combines partials[first, last) in the fixed order: thread t takes first + t, first + t + 256,
// ... (all its loads issued before the additions), then the warps' butterflies, then warp 0's
// eight partials in order. The result (valid in thread 0) depends on the partials alone.
__device__ __forceinline__ DoubleDouble combine_partials(const DoubleDouble* partials, std::size_t first,
                                                         std::size_t last, DoubleDouble* warp_partials) {
  constexpr unsigned warps = kReproThreads / 32;
  constexpr unsigned per_thread = kReproSegment / kReproThreads;
  DoubleDouble acc{0.0, 0.0};
  double low = 0.0;  // the low parts are rounding-error sized: a plain sum keeps them well
  for (std::size_t base = first; base < last; base += kReproSegment) {
    double2 p[per_thread];
#pragma unroll
    for (unsigned k = 0; k < per_thread; ++k) {
      const std::size_t i = base + k * kReproThreads + threadIdx.x;
      p[k] = i < last ? __ldcg(reinterpret_cast<const double2*>(partials + i)) : double2{0.0, 0.0};
    }
#pragma unroll
    for (unsigned k = 0; k < per_thread; ++k) {
      acc = two_sum_add(acc, p[k].x);
      low = __dadd_rn(low, p[k].y);
    }
  }
  acc = warp_dd_reduce(dd_add(acc, DoubleDouble{low, 0.0}));
  const unsigned warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warp_partials[warp] = acc;
  __syncthreads();  // the warps' partials are in shared memory before thread 0 reads them
  DoubleDouble total = warp_partials[0];
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < warps; ++w) total = dd_add(total, warp_partials[w]);
  }
  __syncthreads();  // warp_partials may be reused
  return total;
}

template <class T>
__device__ __forceinline__ void store_result(acc_t<T, Sum>* out, DoubleDouble total) {
  const double result = isfinite(total.hi) ? __dadd_rn(total.hi, total.lo) : total.hi;
  *out = static_cast<acc_t<T, Sum>>(result);
}

template <class T>
__global__ void __launch_bounds__(kReproThreads) repro_sum_kernel(ReproArgs<T, acc_t<T, Sum>> args) {
  constexpr unsigned warps = kReproThreads / 32;
  __shared__ DoubleDouble warp_partials[warps];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  // Tiles go round the blocks first, so a small input still spreads over many SMs.
  sum_tiles(args.in, args.n, args.tiles, blockIdx.x + std::size_t(warp) * gridDim.x,
            std::size_t(gridDim.x) * warps, args.aligned, lane, args.partials);
  auto grid_barrier = [] {
    if (gridDim.x > 1) cooperative_groups::this_grid().sync();  // partials written and visible grid-wide
    else __syncthreads();
  };
  grid_barrier();
  // Segments of kReproSegment tile partials, one block each; a single segment is the result.
  const std::size_t segments = (args.tiles + kReproSegment - 1) / kReproSegment;
  DoubleDouble* segment_partials = args.partials + args.tiles;
  for (std::size_t s = blockIdx.x; s < (segments > 0 ? segments : 1); s += gridDim.x) {
    const std::size_t first = s * kReproSegment;
    const std::size_t last = first + kReproSegment < args.tiles ? first + kReproSegment : args.tiles;
    const DoubleDouble total = combine_partials(args.partials, first, last, warp_partials);
    if (threadIdx.x == 0) {
      if (segments <= 1) store_result<T>(args.out, total);
      else segment_partials[s] = total;
    }
  }
  if (segments <= 1) return;
  grid_barrier();
  if (blockIdx.x != 0) return;
  const DoubleDouble total = combine_partials(segment_partials, 0, segments, warp_partials);
  if (threadIdx.x == 0) store_result<T>(args.out, total);
}

}  // namespace fastreduce::engine
