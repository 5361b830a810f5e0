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

#include <cooperative_groups.h>

#include <algorithm>
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
  unsigned long long* blocks;  // per block: its accumulator's limbs and its special-value flags
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
};

// A lane's running sum of doubles: TwoSum in double, errors in lo.
struct DoubleLane {
  DoubleDouble acc{0.0, 0.0};
  __device__ __forceinline__ void add(double x) { acc = two_sum_add(acc, x); }
  __device__ __forceinline__ DoubleDouble total() const { return acc; }
};

template <class T>
using Lane = std::conditional_t<std::is_same_v<T, double>, DoubleLane, FloatLane>;

// A lane's partial of a tile for float-valued sums: the sum of its two chains, and the double sum
// of every rounding error. The chains join in double with TwoSum: the sum of two floats cannot
// overflow a double, and the join's own error (zero unless the chains differ by more than 2^29)
// is kept exactly like the others. Both halves are whole multiples of 2^-149.
struct LanePartial {
  double sum;
  double error;
};

__device__ __forceinline__ LanePartial lane_partial(const FloatLane (&lanes)[2]) {
  const double a = lanes[0].sum, b = lanes[1].sum;
  const double s = __dadd_rn(a, b);
  const double z = __dsub_rn(s, a);
  const double join = __dadd_rn(__dsub_rn(a, __dsub_rn(s, z)), __dsub_rn(b, z));
  return {s, __dadd_rn(__dadd_rn(lanes[0].error, lanes[1].error), join)};
}

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
inline constexpr unsigned kLaneVectors = kReproTile / kVecElems<T> / 32;  // a lane's vectors per tile
template <class T>
inline constexpr unsigned kBatch = std::min(sizeof(T) == 2 ? kReproLoadBatch / 2 : kReproLoadBatch, kLaneVectors<T>);

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


// The exact accumulator. Limb j counts units of 2^(kLowBit + 32 j); 32 * kWordsPerLane limbs
// are spread over the warp's lanes (limb j on lane j % 32), each in a signed 64-bit integer so
// that 2^31 additions of 32-bit pieces cannot overflow it. Every finite partial of a
// float-valued sum (a lane's sum of its two float chains or its double sum of errors) is a
// multiple of 2^-149 (it is made of float values and their exact rounding errors) and below
// 2^129; every tile partial
// of a double sum, a multiple of 2^-1074 below 2^1037. The limbs reach 2^875 and 2^1998: room
// for any sum of such partials.
template <class A>
struct ExactFormat;
template <>
struct ExactFormat<float> {
  static constexpr int kLowBit = -149;
  static constexpr unsigned kWordsPerLane = 1;
};
template <>
struct ExactFormat<double> {
  static constexpr int kLowBit = -1074;
  static constexpr unsigned kWordsPerLane = 3;
};

enum : unsigned { kPlusInf = 1, kMinusInf = 2, kNaN = 4 };

// A double taken apart for an exact accumulator whose lowest bit is 2^low_bit: a finite x is
// (negative ? -1 : 1) * mantissa * 2^(low_bit + position); infinity or NaN only sets `special`.
struct SplitDouble {
  unsigned long long mantissa;
  int position;
  bool negative;
  unsigned special;  // kPlusInf, kMinusInf or kNaN for a non-finite x, else 0
};

__device__ __forceinline__ SplitDouble split_double(double x, int low_bit) {
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(x));
  const int exponent = static_cast<int>((bits >> 52) & 0x7FF);
  const unsigned long long fraction = bits & ((1ull << 52) - 1);
  const bool negative = (bits >> 63) != 0;
  if (exponent == 0x7FF) return {0, 0, negative, fraction != 0 ? kNaN : negative ? kMinusInf : kPlusInf};
  const unsigned long long mantissa = exponent != 0 ? fraction | (1ull << 52) : fraction;
  return {mantissa, (exponent != 0 ? exponent - 1075 : -1074) - low_bit, negative, 0};
}

template <class A>
struct ExactSum {
  static constexpr int kLowBit = ExactFormat<A>::kLowBit;
  static constexpr unsigned K = ExactFormat<A>::kWordsPerLane;
  static constexpr unsigned kLimbs = 32 * K;
  long long limb[K] = {};  // this lane's limbs: lane + 32 k
  unsigned special = 0;    // kPlusInf | kMinusInf | kNaN seen

  // Adds x exactly. Every lane of the warp passes the same x and adds the bits of its limbs.
  __device__ __forceinline__ void add(double x, unsigned lane) {
    const SplitDouble d = split_double(x, kLowBit);
    if (d.special != 0) {
      special |= d.special;
      return;
    }
    // The mantissa's bit 0 is bit d.position of the accumulator (bits below the accumulator's,
    // which no partial has, would be dropped).
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      const int shift = 32 * static_cast<int>(lane + 32 * k) - d.position;  // mantissa bit at the limb's bit 0
      unsigned long long piece = 0;
      if (shift >= 0) piece = shift < 64 ? (d.mantissa >> shift) & 0xFFFFFFFFull : 0;
      else if (shift > -32) piece = (d.mantissa << -shift) & 0xFFFFFFFFull;
      limb[k] += d.negative ? -static_cast<long long>(piece) : static_cast<long long>(piece);
    }
  }
  __device__ __forceinline__ void add(const DoubleDouble& partial, unsigned lane) {
    add(partial.hi, lane);
    // A partial that overflowed in its last step is (inf, -inf): its hi alone says which.
    if (isfinite(partial.hi)) add(partial.lo, lane);
  }
};

// Float-valued sums: every lane keeps its own exact accumulator in shared memory, so that a
// tile's lane partials need no butterfly (five levels of shuffles and dependent double-double
// additions: about a microsecond per tile on an H100, which the last tile of every warp could not
// hide). Each lane adds its tile partial (LanePartial: two doubles) exactly into limbs of its
// own, with a few integer instructions and no exchange.
// Limb q of a lane counts units of 2^(kLowBit + 32 q), the grid of ExactSum<float>, and lives in
// column `lane` of row q (each lane its own column: no bank conflict, whichever rows the lanes
// touch).
// Both halves of a partial are whole multiples of 2^-149 below 2^129, so their bits land in limbs
// 0 .. kLaneLimbs - 1; sums and errors have rows of their own, so a tile's two additions touch
// different words.
inline constexpr unsigned kLaneLimbs = 9;  // bits 2^-149 .. 2^138 (a partial's highest is 2^128)

struct LaneLimbs {
  long long sums[kLaneLimbs][32];
  long long errors[kLaneLimbs][32];
};

struct LaneExact {
  static constexpr int kLowBit = ExactFormat<float>::kLowBit;
  LaneLimbs& limbs;
  unsigned lane;
  unsigned special = 0;  // kPlusInf | kMinusInf | kNaN seen

  __device__ __forceinline__ LaneExact(LaneLimbs& l, unsigned lane_index) : limbs(l), lane(lane_index) {
#pragma unroll
    for (unsigned q = 0; q < kLaneLimbs; ++q) limbs.sums[q][lane] = limbs.errors[q][lane] = 0;
  }
  // Adds a tile's lane partial exactly.
  __device__ __forceinline__ void add(const LanePartial& partial) {
    const SplitDouble sum = split_double(partial.sum, kLowBit);
    if (sum.special != 0) {  // a chain overflowed or saw infinity or NaN: the error is meaningless
      special |= sum.special;
      return;
    }
    add_split(limbs.sums, sum);
    add_split(limbs.errors, split_double(partial.error, kLowBit));
  }
  // The warp's limbs in ExactSum's layout (limb q on lane q). Three lanes add up each row
  // (columns p, p + 3, ... from column 3q on: lane l = 3q + p reads column (l + 3k) % 32 at step
  // k: consecutive lanes, consecutive columns, no bank conflict), then lane q takes the three
  // partial sums.
  __device__ __forceinline__ void into(ExactSum<float>& exact) const {
    static_assert(3 * kLaneLimbs <= 32);
    __syncwarp();  // every lane's last additions are visible
    const unsigned row = lane / 3;
    long long part = 0;
    if (row < kLaneLimbs) {
#pragma unroll
      for (unsigned k = 0; k < 11; ++k) {
        if (lane % 3 == 2 && k == 10) break;  // 11 + 11 + 10 columns
        const unsigned column = (lane + 3 * k) % 32;
        part += limbs.sums[row][column] + limbs.errors[row][column];
      }
    }
    part += __shfl_down_sync(primitives::kFullMask, part, 1) + __shfl_down_sync(primitives::kFullMask, part, 2);
    const long long total = __shfl_sync(primitives::kFullMask, part, 3 * lane % 32);
    exact.limb[0] = lane < kLaneLimbs ? total : 0;
    exact.special = __reduce_or_sync(primitives::kFullMask, special);
  }

 private:
  // Adds a finite double, a whole multiple of 2^-149 below 2^129, to this lane's limbs: the
  // 32-bit pieces of its mantissa, shifted to its place, go into limbs position / 32 and up.
  __device__ __forceinline__ void add_split(long long (&row)[kLaneLimbs][32], const SplitDouble& x) {
    unsigned long long mantissa = x.mantissa;
    int position = x.position;
    if (position < 0) {  // x is a multiple of 2^-149: the mantissa's bits under it are zero
      mantissa = -position < 64 ? mantissa >> -position : 0;
      position = 0;
    }
    const unsigned q = static_cast<unsigned>(position) / 32;
    const unsigned r = static_cast<unsigned>(position) % 32;
    const unsigned long long low = mantissa << r;
    const unsigned long long high = r != 0 ? mantissa >> (64 - r) : 0;  // below 2^20
    const long long pieces[3] = {static_cast<long long>(low & 0xFFFFFFFFull), static_cast<long long>(low >> 32),
                                 static_cast<long long>(high)};
#pragma unroll
    for (unsigned i = 0; i < 3; ++i) {
      if (q + i < kLaneLimbs) row[q + i][lane] += x.negative ? -pieces[i] : pieces[i];
    }
  }
};

// A warp sums its tiles (first, first + step, ...) one after the other; lane l owns vectors
// l, l + 32, ... of each tile and adds them in increasing order. The loads of the next batch
// (of this tile or the next) are in flight while the current batch is added. After each tile,
// add_tile(lanes) takes the lane's two accumulators.
template <class T, class AddTile>
__device__ __forceinline__ void sum_tiles(const T* in, std::size_t n, std::size_t tiles, std::size_t first,
                                          std::size_t step, bool aligned, unsigned lane, AddTile&& add_tile) {
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
    add_tile(lanes);
  }
}

// Brings a warp's limbs (limb j on lane j) within [-1, 2^32] below the top one, without
// changing their value: two rounds of passing each limb's bits above 32 to the next lane. The
// block and grid sums then add at most one such row per warp, whatever the length of the input.
__device__ __forceinline__ long long carry_once(long long limb, unsigned lane) {
  const long long carry = limb >> 32;  // arithmetic shift: floor division by 2^32
  const long long from_below = __shfl_up_sync(primitives::kFullMask, carry, 1);
  if (lane == 31) return limb + from_below;  // the top limb keeps its sign and everything above
  return (limb & 0xFFFFFFFFll) + (lane != 0 ? from_below : 0);
}

// Carries every limb's bits above 32 into the next one, bottom to top, in place (one thread):
// limbs 0 .. W - 2 end in [0, 2^32) and the top limb keeps the sign of the total. A negative
// total is then negated the same way, so the limbs hold its magnitude. Returns the sign.
// No limb below `lowest` or above `highest` is non-zero: carrying starts at the first, and past
// the second only the carry is left to place.
template <unsigned W>
__device__ __forceinline__ bool normalize_limbs(unsigned long long* limbs, unsigned lowest, unsigned highest) {
  long long carry = 0;
  unsigned j = lowest;
  for (; j + 1 < W && (j <= highest || (carry != 0 && carry != -1)); ++j) {
    const long long v = static_cast<long long>(limbs[j]) + carry;
    carry = v >> 32;  // arithmetic shift: floor division by 2^32
    limbs[j] = static_cast<unsigned long long>(v & 0xFFFFFFFFll);
  }
  // Limbs 0 .. end - 1 are in [0, 2^32); `top` counts units of limb `end` and holds everything
  // from there up (the top limb when the loop reached it, else only the carry: 0 or -1).
  const unsigned end = j;
  const bool reached_top = end + 1 == W;
  const long long top = reached_top ? static_cast<long long>(limbs[W - 1]) + carry : carry;
  if (top >= 0) {
    limbs[end] = static_cast<unsigned long long>(top);
    return false;
  }
  // Negative: the magnitude is the two's complement, borrowing up from limb 0.
  carry = 0;
  for (unsigned i = lowest; i < end; ++i) {
    const long long v = carry - static_cast<long long>(limbs[i]);
    carry = v >> 32;
    limbs[i] = static_cast<unsigned long long>(v & 0xFFFFFFFFll);
  }
  limbs[end] = static_cast<unsigned long long>(carry - top);
  return true;
}

// The value of normalised limbs (a magnitude, and its sign) rounded once to A (round to nearest
// even), computed by one warp; the result is valid in lane 0.
template <class A>
__device__ __forceinline__ A round_exact(const unsigned long long* limbs, bool negative, unsigned special, unsigned lane) {
  using Exact = ExactSum<A>;
  constexpr unsigned K = Exact::K;
  if (special != 0) {  // what IEEE addition gives: NaN, or the one sign of infinity seen
    const bool nan = special & kNaN || (special & kPlusInf && special & kMinusInf);
    const double value = __longlong_as_double(nan ? 0x7FF8000000000000ll : 0x7FF0000000000000ll);
    return static_cast<A>(special == kMinusInf ? -value : value);
  }
  long long limb[K];
#pragma unroll
  for (unsigned k = 0; k < K; ++k) limb[k] = static_cast<long long>(limbs[lane + 32 * k]);
  // The highest non-zero limb h, and limbs h, h - 1, h - 2 from their lanes.
  int h = -1;
#pragma unroll
  for (int k = K - 1; k >= 0; --k) {
    const unsigned mask = __ballot_sync(primitives::kFullMask, limb[k] != 0);
    if (h < 0 && mask != 0) h = 32 * k + 31 - __clz(mask);
  }
  if (h < 0) return A(0);
  auto limb_at = [&](int j) -> unsigned long long {
    long long mine = 0;
#pragma unroll
    for (unsigned k = 0; k < K; ++k) if (j >= 0 && unsigned(j) / 32 == k) mine = limb[k];
    const long long v = __shfl_sync(primitives::kFullMask, mine, j >= 0 ? j % 32 : 0);
    return j >= 0 ? static_cast<unsigned long long>(v) : 0ull;
  };
  const unsigned long long l2 = limb_at(h), l1 = limb_at(h - 1), l0 = limb_at(h - 2);
  bool below = false;  // any limb under h - 2 non-zero
#pragma unroll
  for (unsigned k = 0; k < K; ++k) below = below || (int(lane + 32 * k) < h - 2 && limb[k] != 0);
  below = __any_sync(primitives::kFullMask, below);
  // 64 leading bits of the magnitude, with everything under them folded into a sticky bit, so
  // that the one conversion below rounds exactly as the infinite-precision value would.
  const int lz = __clz(static_cast<unsigned>(l2));
  const unsigned long long high = (l2 << 32) | l1;
  unsigned long long m = (high << lz) | (lz > 0 ? l0 >> (32 - lz) : 0ull);
  const bool sticky = below || ((l0 << lz) & 0xFFFFFFFFull) != 0;
  m |= sticky ? 1ull : 0ull;
  const int scale = Exact::kLowBit + 32 * (h - 1) - lz;  // the value is m * 2^scale
  A r;
  if constexpr (std::is_same_v<A, float>) r = ldexpf(__ull2float_rn(m), scale);
  else r = ldexp(__ull2double_rn(m), scale);
  return negative ? -r : r;
}

// What a block stores for the grid: its limbs and a word of special-value flags.
template <class A>
inline constexpr unsigned kReproBlockWords = ExactSum<A>::kLimbs + 1;

// Shared memory of the finish: a row of limbs per warp, and each warp's special-value flags.
template <class A>
struct FinishShared {
  static constexpr unsigned kWarps = kReproThreads / 32;
  long long limbs[kWarps][ExactSum<A>::kLimbs];
  unsigned special[kWarps];
};

// Adds the warps' accumulators into the block's, stores the block's limbs, and after a
// grid-wide barrier block 0 adds all blocks' limbs and writes the rounded result. Integer sums:
// any order gives the same limbs, and none needs an atomic.
template <class A>
__device__ __forceinline__ void finish_exact(const ExactSum<A>& exact, FinishShared<A>& shared,
                                             unsigned long long* blocks, A* out) {
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned K = ExactSum<A>::K;
  constexpr unsigned kWarps = FinishShared<A>::kWarps;
  constexpr unsigned kWords = kReproBlockWords<A>;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
#pragma unroll
  for (unsigned k = 0; k < K; ++k) shared.limbs[warp][lane + 32 * k] = exact.limb[k];
  if (lane == 0) shared.special[warp] = exact.special;
  __syncthreads();  // every warp's limbs are in shared memory
  unsigned long long* mine = blocks + std::size_t(blockIdx.x) * kWords;
  for (unsigned t = threadIdx.x; t < W; t += blockDim.x) {
    long long sum = 0;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) sum += shared.limbs[w][t];
    mine[t] = static_cast<unsigned long long>(sum);
  }
  if (threadIdx.x == 0) {
    unsigned special = 0;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) special |= shared.special[w];
    mine[W] = special;
  }
  if (gridDim.x > 1) cooperative_groups::this_grid().sync();  // every block's limbs written and visible
  else __syncthreads();
  if (blockIdx.x != 0) return;
  // Warp w adds blocks w, w + 8, ... with lane l taking limbs l + 32 k: coalesced rows, and
  // kInFlight rows' loads issued before their additions (all of them up to 192 blocks for float).
  constexpr unsigned kInFlight = 24 / K;
  long long acc[K] = {};
  unsigned special = 0;
  for (unsigned first = warp; first < gridDim.x; first += kWarps * kInFlight) {
    long long row[kInFlight][K];
    unsigned flags[kInFlight];
#pragma unroll
    for (unsigned i = 0; i < kInFlight; ++i) {
      const unsigned b = first + i * kWarps;
      const unsigned long long* words = blocks + std::size_t(b) * kWords;
#pragma unroll
      for (unsigned k = 0; k < K; ++k) row[i][k] = b < gridDim.x ? static_cast<long long>(__ldcg(words + lane + 32 * k)) : 0;
      flags[i] = b < gridDim.x && lane == 0 ? static_cast<unsigned>(__ldcg(words + W)) : 0u;
    }
#pragma unroll
    for (unsigned i = 0; i < kInFlight; ++i) {
#pragma unroll
      for (unsigned k = 0; k < K; ++k) acc[k] += row[i][k];
      special |= flags[i];
    }
  }
  // The barrier above ended this block's reads of the rows: they are free again.
#pragma unroll
  for (unsigned k = 0; k < K; ++k) shared.limbs[warp][lane + 32 * k] = acc[k];
  if (lane == 0) shared.special[warp] = special;
  __syncthreads();
  if (warp != 0) return;
  // Warp 0 adds the warps' rows into row 0 (each lane its own limbs), then carries and rounds.
  unsigned long long* total = reinterpret_cast<unsigned long long*>(shared.limbs[0]);
  unsigned lowest = W - 1, highest = 0;  // the non-zero limbs before carrying
#pragma unroll
  for (unsigned k = 0; k < K; ++k) {
    long long sum = 0;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) sum += shared.limbs[w][lane + 32 * k];
    total[lane + 32 * k] = static_cast<unsigned long long>(sum);
    const unsigned mask = __ballot_sync(primitives::kFullMask, sum != 0);
    if (mask != 0) {
      highest = 32 * k + 31 - __clz(mask);
      lowest = lowest < 32 * k ? lowest : 32 * k + __ffs(mask) - 1;
    }
  }
  special = 0;
#pragma unroll
  for (unsigned w = 0; w < kWarps; ++w) special |= shared.special[w];
  if (lowest > highest) lowest = 0;  // all zero
  __syncwarp();  // the totals are visible to lane 0
  bool negative = false;
  if (lane == 0) negative = normalize_limbs<W>(total, lowest, highest);
  __syncwarp();  // lane 0's normalised limbs are visible to the warp
  negative = __shfl_sync(primitives::kFullMask, negative, 0);
  const A result = round_exact<A>(total, negative, special, lane);
  if (lane == 0) *out = result;
}

template <class T>
__global__ void __launch_bounds__(kReproThreads) repro_sum_kernel(ReproArgs<T, acc_t<T, Sum>> args) {
  using A = acc_t<T, Sum>;
  constexpr unsigned warps = kReproThreads / 32;
  __shared__ FinishShared<A> shared;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  ExactSum<A> exact;
  // Tiles go round the blocks first, so a small input still spreads over many SMs.
  const std::size_t first = blockIdx.x + std::size_t(warp) * gridDim.x;
  const std::size_t step = std::size_t(gridDim.x) * warps;
  if constexpr (std::is_same_v<A, float>) {
    __shared__ LaneLimbs lane_limbs[warps];
    LaneExact lane_exact(lane_limbs[warp], lane);
    sum_tiles(args.in, args.n, args.tiles, first, step, args.aligned, lane, [&](FloatLane (&lanes)[2]) {
      lane_exact.add(lane_partial(lanes));
    });
    lane_exact.into(exact);
    exact.limb[0] = carry_once(carry_once(exact.limb[0], lane), lane);
  } else {
    sum_tiles(args.in, args.n, args.tiles, first, step, args.aligned, lane, [&](DoubleLane (&lanes)[2]) {
      exact.add(warp_dd_reduce(dd_add(lanes[0].total(), lanes[1].total())), lane);
    });
  }
  finish_exact<A>(exact, shared, args.blocks, args.out);
}

}  // namespace fastreduce::engine
