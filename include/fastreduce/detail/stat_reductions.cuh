// The statistics as reductions (detail/reduction.cuh): the moments (mean, variance), the norms and
// the dot product. Everything accumulates in double, so a float's sum of squares neither
// overflows nor underflows, and a float result is the double result rounded once.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/ops.cuh"

namespace fastreduce {

namespace stats {
// A value as a double: arithmetic types directly, the half types through float.
template <class T>
__host__ __device__ __forceinline__ double widen(const T& x) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(x);
  else return static_cast<double>(static_cast<float>(x));
}
template <class T>
concept statistic_input = std::is_arithmetic_v<T> || requires(const T& x) { static_cast<float>(x); };
}  // namespace stats

// The type of a statistic of T: float for float and the half types, double otherwise.
template <class T>
using stat_t = std::conditional_t<std::is_floating_point_v<T> && sizeof(T) == 8, double,
                                  std::conditional_t<std::is_integral_v<T>, double, float>>;

// The type of dot(x, y): std::int64_t for integers (wrapping modulo 2^64), else stat_t<T>.
template <class T>
using dot_t = std::conditional_t<std::is_integral_v<T>, std::int64_t, stat_t<T>>;

}  // namespace fastreduce

namespace fastreduce::engine {

// float, half and bfloat16: the inputs whose elements, squares and products are exact in double.
template <class T>
inline constexpr bool kFloatOrHalf =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// ---------------------------------------------------------------------------------------------
// Moments. A unit of work (a block's share, a row or a piece of one, a column, a segment piece)
// sums its elements' offsets from one of its elements (a shift its threads share): two adds and
// a fused multiply-add an element, and its threads combine by adding. The unit's sums become one
// (count, mean, M2) triple; the triples meet in Chan's merge (MeanVar), in a fixed order, means
// kept as a shift plus an offset, so data such as 1e6 + U(0, 1e-3) keep their spread.

// 1 / n for n = 2^k (k < 1023), exactly (another n: 2^-k for its lowest set bit 2^k).
__device__ __forceinline__ double inverse_power_of_two(std::size_t n) {
  return __hiloint2double((1023 - (__ffsll(static_cast<long long>(n)) - 1)) << 20, 0);
}

struct MomentSums {
  std::int64_t count;
  double s1, s2;
};
// The sums alone, where a row's lanes meet (its count is the row's length).
struct LaneSums {
  double s1, s2;
};

template <class T, class Finish>
struct MomentsReduction {
  using Input = T;
  using Input2 = NoInput;
  using State = MomentSums;
  using Acc = MomentSums;
  using Partial = Moments<double>;
  using Out = std::remove_cvref_t<std::invoke_result_t<const Finish&, const Partial&>>;
  static constexpr bool commutative = true;
  static constexpr unsigned folds = 1;
  static constexpr bool order_independent = false;
  // Four blocks an SM on the warp-per-row and columns kernels (64 registers; 108 and 66 unbounded;
  // var's float columns kernel spills 4 bytes): on an H100, mean over rows of 1024 floats
  // 30.1 -> 26.7 us, columns of 4 48.8 -> 44.6, but columns of 64 and 256 30.2 -> 31.9 and
  // 29.3 -> 32.1 (docs/notes.md). One state a thread: the loads stay in flight without a second
  // state's registers.
  static constexpr unsigned kWarpRowsMinBlocks = 4;
  static constexpr unsigned kColumnsMinBlocks = 4;
  // Rows of 8 bytes and more on the rows-lanes kernel loop over a few waves (axis_dispatch.cuh,
  // lanes_loop; at 2^28 on an H200 float var over rows of 2 1.14x, bfloat16 var over rows of 4
  // 1.05x, of 2 0.98x). Measured for float and bfloat16 inputs (half's the same code); doubles and
  // integers keep a block per kAxisWarps runs.
  static constexpr bool lanes_loop(std::size_t length) {
    return kFloatOrHalf<T> && length * sizeof(T) >= 8;
  }
  // The columns kernel may stage a lane as its sums (LaneAcc), its count restored from the rows it
  // folded: the half types' vectors of columns fit the 32 KB stage so (axis_fast.cuh). Measured
  // for them alone (the 16-bit integers' would qualify too).
  static constexpr bool kColumnLaneStage = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
  // Two blocks an SM on that vector kernel: 120 registers, no spills (ptxas, sm_90); at four it
  // spilled 460 bytes at 64 registers, at three 216 at 80 (chosen from ptxas, not timed).
  static constexpr unsigned kColumnsLaneStageMinBlocks = 2;
  // The vector columns kernel reads the shifts of a thread's pack of columns as one vector
  // (axis_fast.cuh, column_units_by_vector): measured for the half types, 8 columns a thread
  // (on an H200, bfloat16 var down columns of 4 to 256 at 2^24 1.07-1.09x, of 4 and 16 at 2^28
  // 1.10x and 1.04x); float var down columns of 4 at 2^28 ran 0.90x so (4 columns a thread,
  // fewer instructions; not profiled), and doubles' were not measured: they keep a load a column.
  static constexpr bool kColumnUnitsByVector = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
  Finish finish;
  double shift = 0;  // the unit's first element (0 if that is not finite)

  __device__ __forceinline__ MomentsReduction at(const T* first) const {
    MomentsReduction u = *this;
    const double v = first == nullptr ? 0.0 : stats::widen(*first);
    u.shift = v - v == 0.0 ? v : 0.0;
    return u;
  }
  __host__ __device__ __forceinline__ MomentSums identity() const { return {0, 0.0, 0.0}; }
  __device__ __forceinline__ MomentSums start() const { return identity(); }
  __device__ __forceinline__ MomentSums fold(MomentSums s, const T& x, std::size_t) const {
    const double d = stats::widen(x) - shift;
    s.s1 += d;
    s.s2 = fma(d, d, s.s2);
    ++s.count;
    return s;
  }
  template <unsigned V>
  __device__ __forceinline__ MomentSums fold_vec(MomentSums s, const primitives::Vec<T, V>& v, std::size_t) const {
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
      const double d = stats::widen(v.elem[k]) - shift;
      s.s1 += d;
      s.s2 = fma(d, d, s.s2);
    }
    s.count += V;
    return s;
  }
  __device__ __forceinline__ MomentSums value(const MomentSums& s) const { return s; }
  __device__ __forceinline__ MomentSums combine(const MomentSums& a, const MomentSums& b) const {
    return {a.count + b.count, a.s1 + b.s1, a.s2 + b.s2};
  }
  using LaneAcc = LaneSums;
  __device__ __forceinline__ LaneSums to_lane(const MomentSums& a) const { return {a.s1, a.s2}; }
  __device__ __forceinline__ LaneSums lane_combine(const LaneSums& a, const LaneSums& b) const {
    return {a.s1 + b.s1, a.s2 + b.s2};
  }
  __device__ __forceinline__ MomentSums from_lane(const LaneSums& l, std::size_t n) const {
    return {static_cast<std::int64_t>(n), l.s1, l.s2};
  }
  // partial(from_lane(l, n)) for n = 2^k: s1 times 2^-k, the division's bits (both round the one
  // exact quotient once, subnormal or not) in a few integer instructions and a multiply, where
  // the division takes about fifteen and a branch to its slow path. The rows kernels finish rows
  // of 2^k elements so, the columns kernel pieces of 2^k rows (axis_fast.cuh, column_partial).
  __device__ __forceinline__ Partial lane_partial(const LaneSums& l, std::size_t n) const {
    return with_offset(static_cast<std::int64_t>(n), l.s1 * inverse_power_of_two(n), l.s1, l.s2);
  }
  __host__ __device__ __forceinline__ Partial partial(const MomentSums& p) const {
    if (p.count == 0) return {0, 0.0, 0.0, 0.0};
    // One element (an axis of length 1): no division, whose double arithmetic would cost more
    // than the element's load.
    return with_offset(p.count, p.count == 1 ? p.s1 : p.s1 / static_cast<double>(p.count), p.s1, p.s2);
  }
  __device__ __forceinline__ Partial merge(const Partial& a, const Partial& b) const { return MeanVar{}(a, b); }
  __host__ __device__ __forceinline__ Partial partial_identity() const { return {0, 0.0, 0.0, 0.0}; }
  __host__ __device__ __forceinline__ Out project(const Partial& p) const { return finish(p); }
  __host__ bool valid(const char** message) const {
    if constexpr (requires { finish.valid(message); }) return finish.valid(message);
    else return true;
  }

 private:
  // The unit's triple from its sums and their mean offset s1 / n.
  __host__ __device__ __forceinline__ Partial with_offset(std::int64_t n, double offset, double s1, double s2) const {
    return {n, shift, offset, fma(-offset, s1, s2)};
  }
};

// Short columns finish in the lane, a result at a time: float var down columns of 4, 16 and 64 on
// an H200 at 57, 95 and 96% of Sum (44, 77, 88 walked); stored as whole words, var and std down
// columns of 16 to 1024 lost 1-7% (docs/notes.md, "Short columns' results as whole words").
template <class T, class Finish>
inline constexpr ColumnFinish kColumnFinish<MomentsReduction<T, Finish>> = ColumnFinish::Lane;
// The half types' moments (8 columns a thread, by vectors since their lanes stage as sums) store
// a pack's results as whole words: on an H200 at 2^28, bfloat16 var down columns of 4 and 16
// 1.09x and 1.16x a result at a time, the same down longer columns (docs/notes.md, "The half
// types' moments down columns by vectors").
template <class Finish>
inline constexpr ColumnFinish kColumnFinish<MomentsReduction<__half, Finish>> = ColumnFinish::LaneWords;
template <class Finish>
inline constexpr ColumnFinish kColumnFinish<MomentsReduction<__nv_bfloat16, Finish>> = ColumnFinish::LaneWords;

template <class O>
struct VarianceOf;
// Mode::Reproducible and Mode::Exact: the variance and standard deviation of float, half and
// bfloat16 inputs from the exact sums of the elements and of their squares, 1-D and along axes.
template <class T>
inline constexpr bool kVarianceSum<MomentsReduction<T, VarianceOf<stat_t<T>>>> = kFloatOrHalf<T>;

template <class O>
struct MeanOf {
  __host__ __device__ O operator()(const Moments<double>& m) const { return static_cast<O>(m.mean()); }
};

// Float additions rounded toward -inf and +inf, subnormals kept whatever -ftz says (the half
// types' mean, below).
struct AddDown {
  __device__ __forceinline__ float operator()(float a, float b) const {
    float r;
    asm("add.rm.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
};
struct AddUp {
  __device__ __forceinline__ float operator()(float a, float b) const {
    float r;
    asm("add.rp.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
};

// The mean of inputs whose double sum is exact or cannot overflow (floats and halves below
// 2^128; bool and integers of 8 and 16 bits, whose partial sums stay integers below 2^53 up to
// 2^37 elements): the sum in double and the count, divided once when written. Beside the moments
// it reads no shift per unit of work, divides nothing per unit, and keeps a 16-byte state: on an
// H100 (2^24 floats) the moments' mean ran at 67-87% of Sum's GB/s on columns of 4 to 256 and of
// 2^20 and more.
struct SumCount {
  double sum;
  std::int64_t count;
};
template <class T>
struct SumMeanReduction {
  using Input = T;
  using Input2 = NoInput;
  using State = SumCount;
  using Acc = SumCount;
  using Partial = SumCount;
  using Out = stat_t<T>;
  static constexpr bool commutative = true;
  static constexpr bool order_independent = false;
  // As the moments: one state a thread, four blocks an SM on the warp-per-row and columns
  // kernels. On an H100 (one run, float and bfloat16 rows and columns of 4 to 2^20 at 2^24 and
  // 2^28) this kept 52 of 68 shapes at 90% of Sum's GB/s or more, against 43 to 48 for one, two
  // or four states without the columns bound (the bound spills 12-28 bytes, yet float columns
  // of 4 to 256 ran at 94-98% of Sum with it, 84-88% without), and rows of bfloat16 need the
  // rows bound (2^28 in rows of 1024: 175 us, 231-237 without). Two states: the same on every
  // shape but long rows (faster at 2^28, slower at 2^24) and bfloat16 1-D at 2^28 (4% faster).
  // The half types' block-per-row kernel too (70 registers unbounded, 64 under four): bfloat16
  // rows of 65536 at 2^28 on an H200 in 123.2 us against 129.9 (Sum 120.7; half the same either
  // way, scripts/probe/mean_rows.cu). Other inputs keep the default (1), not measured under four.
  static constexpr unsigned folds = 1;
  static constexpr unsigned kWarpRowsMinBlocks = 4;
  static constexpr unsigned kBlockRowsMinBlocks =
      std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> ? 4 : 1;
  static constexpr unsigned kColumnsMinBlocks = 4;
  // Rows of 4 elements and more on the rows-lanes kernel loop over a few waves (axis_dispatch.cuh,
  // lanes_loop; at 2^28 on an H200 bfloat16 rows of 4 1.08x, float 1.03x; rows of 2 0.97-0.98x).
  // Measured for float and bfloat16 inputs (half's the same code), not for the small integers.
  static constexpr bool lanes_loop(std::size_t length) {
    return kFloatOrHalf<T> && length >= 4;
  }
  __device__ __forceinline__ SumMeanReduction at(const T*) const { return *this; }
  __host__ __device__ __forceinline__ SumCount identity() const { return {0.0, 0}; }
  __device__ __forceinline__ SumCount start() const { return identity(); }
  __device__ __forceinline__ SumCount fold(const SumCount& s, const T& x, std::size_t) const {
    return {s.sum + stats::widen(x), s.count + 1};
  }
  // A vector's elements meet pairwise (in index order), then join the state. The half types'
  // vector first meets in float twice, every addition rounded down in one chain and up in the
  // other (PTX add.rm and add.rp). The exact sum lies between the two, so where they agree every
  // addition of both was exact, and the up chain's value is the double lanes' at every step (a
  // zero's sign too: only rounding down makes x + -x a -0; infinities of one sign as well).
  // Elsewhere (possible only where the exponents lie more than 13 (bfloat16) or 10 (half)
  // binades apart; an overflow, +inf with -inf, NaN; a sum of exactly zero from a cancellation or
  // from +0 with -0, -0 down and +0 up, the same +0 either way) the vector meets in double
  // lanes. Before, each pair was added in float and checked exact by TwoSum, then the four pair
  // sums met in double: twice the instructions, four widenings where this has one (bfloat16 rows
  // of 4096 at 2^24, in L2, on an H200: 7.4 us against 9.6; Sum 7.2; scripts/probe/mean_rows.cu).
  // Nothing here flushes a subnormal, whatever -ftz says: the adds, the comparison (of the bits:
  // a float compare under -ftz=true takes a subnormal for a zero) and the widening are written so.
  // Such a build's double lanes still flush a subnormal bfloat16 input, which the chains keep:
  // that vector's sum is then the more exact one, not the same.
  template <unsigned V>
  __device__ __forceinline__ SumCount fold_vec(const SumCount& s, const primitives::Vec<T, V>& v, std::size_t) const {
    if constexpr ((std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) && V % 2 == 0) {
      float down[V], up[V];
#pragma unroll
      for (unsigned k = 0; k < V; ++k) down[k] = up[k] = static_cast<float>(v.elem[k]);
      const unsigned low = __float_as_uint(pairwise_in_order(down, AddDown{}));
      const unsigned high = __float_as_uint(pairwise_in_order(up, AddUp{}));
      if (low == high && (high & 0x7FFFFFFFu) <= 0x7F800000u) {  // the same bits, not NaN
        double sum;
        asm("cvt.f64.f32 %0, %1;" : "=d"(sum) : "f"(__uint_as_float(high)));
        return {s.sum + sum, s.count + static_cast<std::int64_t>(V)};
      }
    }
    double lanes[V];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) lanes[k] = stats::widen(v.elem[k]);
    const double sum = pairwise_in_order(lanes, Sum{});
    return {s.sum + sum, s.count + static_cast<std::int64_t>(V)};
  }
  __device__ __forceinline__ SumCount value(const SumCount& s) const { return s; }
  __device__ __forceinline__ SumCount combine(const SumCount& a, const SumCount& b) const {
    return {a.sum + b.sum, a.count + b.count};
  }
  using LaneAcc = double;  // the sum alone, where a row's lanes meet
  __device__ __forceinline__ double to_lane(const SumCount& a) const { return a.sum; }
  __device__ __forceinline__ double lane_combine(double a, double b) const { return a + b; }
  __device__ __forceinline__ SumCount from_lane(double sum, std::size_t n) const {
    return {sum, static_cast<std::int64_t>(n)};
  }
  __host__ __device__ __forceinline__ SumCount partial(const SumCount& a) const { return a; }
  __device__ __forceinline__ SumCount merge(const SumCount& a, const SumCount& b) const { return combine(a, b); }
  __host__ __device__ __forceinline__ SumCount partial_identity() const { return identity(); }
  // NaN for no element, as the moments' mean.
  __host__ __device__ __forceinline__ Out project(const SumCount& p) const {
    const double mean = p.count == 0 ? NAN : p.sum / static_cast<double>(p.count);
    return static_cast<Out>(mean);
  }
};

// Short columns finish in the lane, as whole words: on an H200 at 2^28, float mean down columns of
// 4 1.35x faster than walked (70 -> 94% of Sum), bfloat16 1.86x (44 -> 82%), 0.99-1.15x longer
// (the 8- and 16-bit integers' mean, the same reduction, not measured).
template <class T>
inline constexpr ColumnFinish kColumnFinish<SumMeanReduction<T>> = ColumnFinish::LaneWords;

// The mean's reduction: the moments for doubles (whose sum may overflow where the mean does not)
// and integers of 32 bits and more (a double sum of 32-bit values near 2^31 rounds from about
// 2^22 elements, of 64-bit values near 2^52 from two; the moments' shift and small offsets keep a
// constant input's mean exact), the sum and count for every other input.
template <class T>
using mean_reduction =
    std::conditional_t<std::is_same_v<T, double>, MomentsReduction<double, MeanOf<double>>,
                       std::conditional_t<std::is_integral_v<T> && (sizeof(T) >= 4), MomentsReduction<T, MeanOf<double>>,
                                          SumMeanReduction<T>>>;

// Mode::Reproducible and Mode::Exact: the mean of floating-point inputs is the reproducible
// (exact) sum divided by the count, on the sums' own kernels, rounded once from the quotient.
template <>
inline constexpr bool kMeanSum<MomentsReduction<double, MeanOf<double>>> = true;
template <class T>
inline constexpr bool kMeanSum<SumMeanReduction<T>> = kFloatOrHalf<T>;
template <class O>
struct VarianceOf {
  int correction;
  bool root;
  __host__ __device__ O operator()(const Moments<double>& m) const {
    const double v = m.variance(correction);
    return static_cast<O>(root ? sqrt(v) : v);
  }
  __host__ bool valid(const char** message) const {
    if (correction >= 0) return true;
    if (message != nullptr) *message = "a negative variance correction";
    return false;
  }
};

// ---------------------------------------------------------------------------------------------
// Norms and the dot product: transforms of the elements (detail/reduction.cuh, Transformed).

// |x| and x^2 of x as a double. Summed (the L1 and L2 norms), a half or bfloat16 vector's elements
// are widened by their bits (Transformed, widens_to_double). On an H200 (one run of
// scripts/probe/wide_halves.cu, us): bfloat16 L2 norms along 2^18 rows of 1024 262 -> 188 (Sum
// 135), 65536 rows of 4096 157 -> 134 (Sum 129), 4096 rows of 4096 read from L2 10.4 -> 9.0 (Sum
// 7.4), the L1 norm's and half's alike; 1-D about the same or faster; 65536 rows of 256 slower
// (bfloat16 L2 14.0 -> 14.2, L1 12.6 -> 13.8, half L2 12.5 -> 13.7: Sum 13.1 and 12.0). The
// largest magnitude (the same transform under MaxAbs) ran slower by bits on most shapes (rows of
// 4096 in L2 10.8 -> 12.9), and the variance's moments, whose fold keeps more values live, on all
// but one (rows of 256 in L2): both keep the conversion.
struct AbsWide {
  static constexpr bool widens_to_double = true;
  template <class T>
  __host__ __device__ double operator()(const T& x) const { return fabs(stats::widen(x)); }
};
struct SquareWide {
  static constexpr bool widens_to_double = true;
  template <class T>
  __host__ __device__ double operator()(const T& x) const {
    const double v = stats::widen(x);
    return v * v;
  }
};
// The largest |x| (NaN propagating); 0 for no element. Exact in any order.
struct MaxAbs {
  static constexpr bool commutative = true;
  static constexpr bool order_independent = true;
  template <class R>
  __host__ __device__ static R identity() { return R(0); }
  __host__ __device__ double operator()(double a, double b) const { return Max{}(a, b); }
};
template <class O>
struct Cast {
  template <class V>
  __host__ __device__ O operator()(const V& v) const { return static_cast<O>(v); }
};
template <class O>
struct Root {
  __host__ __device__ O operator()(double v) const { return static_cast<O>(sqrt(v)); }
};

// Blue's scaled sum of squares for doubles (as LAPACK's dnrm2 since 3.10): squares of small and
// large magnitudes go, scaled by powers of two, into their own sums.
struct Blue {
  double small, medium, big;
};
inline constexpr double kTsml = 0x1p-511, kTbig = 0x1p486, kSsml = 0x1p537, kSbig = 0x1p-538;
struct ToBlue {
  __host__ __device__ Blue operator()(double x) const {
    const double a = fabs(x);
    if (a > kTbig) return {0.0, 0.0, (a * kSbig) * (a * kSbig)};
    if (a < kTsml) return {(a * kSsml) * (a * kSsml), 0.0, 0.0};
    return {0.0, a * a, 0.0};  // NaN lands here
  }
};
struct BlueSum {
  static constexpr bool commutative = true;
  template <class R>
  __host__ __device__ static R identity() { return R{0.0, 0.0, 0.0}; }
  __host__ __device__ Blue operator()(const Blue& a, const Blue& b) const {
    return {a.small + b.small, a.medium + b.medium, a.big + b.big};
  }
};
struct BlueRoot {
  __host__ __device__ double operator()(const Blue& s) const {
    const bool medium = s.medium > 0 || s.medium != s.medium;
    if (s.big > 0) {
      const double big = medium ? s.big + (s.medium * kSbig) * kSbig : s.big;
      return sqrt(big) / kSbig;
    }
    if (s.small > 0) {
      if (!medium) return sqrt(s.small) / kSsml;
      const double m = sqrt(s.medium), t = sqrt(s.small) / kSsml;
      const double hi = m > t ? m : t, lo = m > t ? t : m;
      const double r = lo / hi;
      return hi * sqrt(1.0 + r * r);
    }
    return sqrt(s.medium);
  }
};

// The norms (one input, magnitudes or squares widened to double) finish short columns in the
// lane, as whole words: on an H200 at 2^28, float L1, L2 and max norms down columns of 4
// 1.09-1.46x faster than walked, the L2 and max norms down columns of 256 and 1024 1.08-1.24x,
// bfloat16's L2 norm 1.19-1.33x. (The doubles' L2 norm, BlueSum, walks.) The half types' L1 norm
// keeps the walk (bfloat16 down columns of 64 and 256 0.94-0.97x in the lane); so do the dot
// product (bfloat16 0.96-0.97x) and users' transforms (float sum of squares at 2^24 0.93-0.95x)
// (docs/notes.md, "Short columns' results as whole words").
template <class T, class Op, class A, class F>
inline constexpr ColumnFinish kColumnFinish<Transformed<T, NoInput, SquareWide, Op, A, F>> = ColumnFinish::LaneWords;
template <class T, class Op, class A, class F>
inline constexpr ColumnFinish kColumnFinish<Transformed<T, NoInput, AbsWide, Op, A, F>> =
    (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) && std::is_same_v<Op, Sum> ? ColumnFinish::Walk
                                                                                               : ColumnFinish::LaneWords;


struct MultiplyWide {  // products of floats and halves are exact in double
  template <class T>
  __host__ __device__ auto operator()(const T& x, const T& y) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<std::int64_t>(x)) *
                                       static_cast<std::uint64_t>(static_cast<std::int64_t>(y)));
    } else {
      return stats::widen(x) * stats::widen(y);
    }
  }
};

// The reductions of the statistics of T.
template <class T>
using l1_reduction = Transformed<T, NoInput, AbsWide, Sum, double, Cast<stat_t<T>>>;
// Mode::Reproducible and Mode::Exact: the L1 norm of floating-point inputs is the reproducible
// (exact) sum of the elements' magnitudes, on the sums' own kernels.
template <class T, class F>
inline constexpr bool kMagnitudeSum<Transformed<T, NoInput, AbsWide, Sum, double, F>> =
    (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
     std::is_same_v<T, __nv_bfloat16>) &&
    std::is_same_v<F, Cast<stat_t<T>>>;
template <class T>
using inf_reduction = Transformed<T, NoInput, AbsWide, MaxAbs, double, Cast<stat_t<T>>>;
// Squares of floats, halves and 64-bit integers fit a double's range; doubles take Blue's sums.
template <class T>
using l2_reduction = std::conditional_t<std::is_same_v<T, double>, Transformed<double, NoInput, ToBlue, BlueSum, Blue, BlueRoot>,
                                        Transformed<T, NoInput, SquareWide, Sum, double, Root<stat_t<T>>>>;
// Mode::Reproducible and Mode::Exact: the L2 norm of float, half and bfloat16 inputs is the square
// root of the exact sum of their squares (each exact in double), on every shape.
template <class T, class F>
inline constexpr bool kSquareSum<Transformed<T, NoInput, SquareWide, Sum, double, F>> =
    kFloatOrHalf<T> && std::is_same_v<F, Root<stat_t<T>>>;
template <class T>
using dot_reduction = Transformed<T, T, MultiplyWide, Sum, std::conditional_t<std::is_integral_v<T>, std::int64_t, double>,
                                  Cast<dot_t<T>>>;
// Mode::Reproducible and Mode::Exact: the dot product of float, half and bfloat16 inputs is the
// exact sum of the products (each exact in double), rounded once to float, on every shape.
template <class T, class F>
inline constexpr bool kProductSum<Transformed<T, T, MultiplyWide, Sum, double, F>> =
    kFloatOrHalf<T> && std::is_same_v<F, Cast<stat_t<T>>>;

// ---------------------------------------------------------------------------------------------
// A statistic or norm of __half or __nv_bfloat16 inputs written in the input's own type (the
// results torch gives these types), rounded once when written, by the kernel that writes it:
// - the fast kernels round R's float result (project) to nearest even;
// - Mode::Reproducible and Mode::Exact round what their float result is rounded from: the mean and
//   the L1 norm their exact (or compensated) value, directly into the narrow type (the exact mean
//   and L1 norm correctly rounded), the variance, standard deviation and L2 norm the double their
//   finish computes.
// The traits that choose those modes' kernels (kMeanSum, ...) are R's.
template <class R>
struct Narrowed : R {
  using Out = typename R::Input;
  static_assert(std::is_same_v<Out, __half> || std::is_same_v<Out, __nv_bfloat16>,
                "results in the input's own type are for half and bfloat16 inputs");
  static_assert(std::is_same_v<typename R::Out, float>, "a statistic of the half types is a float");
  // (The Sum has its own narrow result, Builtin's O; the exact dot product's result is a float.)
  static_assert(!is_builtin_v<R> && !kProductSum<R>, "Narrowed is for the statistics and norms");
  __device__ __forceinline__ Narrowed at(const Out* first) const { return Narrowed{R::at(first)}; }
  __host__ __device__ __forceinline__ Out project(const typename R::Partial& p) const {
    return primitives::narrow_float<Out>(R::project(p));
  }
};
template <class R>
inline constexpr bool kMeanSum<Narrowed<R>> = kMeanSum<R>;
template <class R>
inline constexpr bool kMagnitudeSum<Narrowed<R>> = kMagnitudeSum<R>;
template <class R>
inline constexpr bool kSquareSum<Narrowed<R>> = kSquareSum<R>;
template <class R>
inline constexpr bool kVarianceSum<Narrowed<R>> = kVarianceSum<R>;
template <class R>
inline constexpr ColumnFinish kColumnFinish<Narrowed<R>> = kColumnFinish<R>;

}  // namespace fastreduce::engine
