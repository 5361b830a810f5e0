// fastreduce/stats.cuh: mean, variance and standard deviation in one pass, L1, L2 and Linf norms,
// and the dot product, header-only (built on fastreduce/reduce.cuh; include it in a .cu file
// compiled by nvcc). Every one reads its input once, for float, double, __half, __nv_bfloat16
// (include <cuda_fp16.h> / <cuda_bf16.h> first) and the integer types.
//
//   fastreduce::Moments<double> m = fastreduce::moments(d_x, n);    // count, mean(), m2
//   float v = fastreduce::var(d_x, n);                               // correction = 1, as torch.var
//   float s = fastreduce::norm(d_x, n, fastreduce::Norm::L2);
//   float d = fastreduce::dot(d_x, d_y, n);
//   fastreduce::var_async(d_temp, temp_bytes, d_x, n, d_out, 1, stream);  // CUB's two-phase contract
//
// Results: stat_t<T> = float for float, __half and __nv_bfloat16 inputs; double for double and the
// integers. Everything accumulates in double, so a float's sum of squares neither overflows nor
// underflows, and a float result is the double result rounded once. A double L2 norm scales its
// squares by powers of two (Blue's three accumulators), so it is right from the smallest subnormal
// to the largest finite double. Integer dot products are exact modulo 2^64 (std::int64_t).
//
// The variance is numerically robust: each block sums its elements' offsets from one of its
// elements (a shift the block shares), turns them into a (count, mean, M2) triple, and the
// triples meet in Chan's pairwise merge, in a fixed order; means are kept as a shift plus an
// offset, so data such as 1e6 + U(0, 1e-3) keep their spread (relative error ~1e-13 against a
// quad reference). A shift far from its block's mean costs digits in proportion (an outlier 1e6
// spreads away: ~1e-11), and offsets of doubles near +-DBL_MAX can overflow. NaN gives NaN; an
// infinity gives an infinite mean and a NaN variance, as torch. Results are deterministic on a
// given GPU model, as transform_reduce's (not bitwise equal across GPUs).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fastreduce/reduce.cuh"

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

// count, mean = shift + offset, and M2 (the sum of squared deviations from the mean).
template <class A>
struct Moments {
  std::int64_t count;
  A shift;
  A offset;
  A m2;
  __host__ __device__ A mean() const { return count > 0 ? shift + offset : A(NAN); }
  // M2 / (count - correction); NaN where count <= correction (as torch).
  __host__ __device__ A variance(int correction = 1) const {
    return count > correction ? m2 / static_cast<A>(count - correction) : A(NAN);
  }
};

// The op: Chan's merge of two triples (commutative up to rounding; the left operand's shift is
// kept). Usable with transform_reduce and a transform that makes an element's triple
// (ToMoments).
struct MeanVar {
  static constexpr bool commutative = true;
  template <class R>
  __host__ __device__ static R identity() { return R{0, 0, 0, 0}; }
  template <class A>
  __host__ __device__ Moments<A> operator()(const Moments<A>& a, const Moments<A>& b) const {
    if (b.count == 0) return a;
    if (a.count == 0) return b;
    const std::int64_t n = a.count + b.count;
    if (!(a.offset - a.offset == A(0) && b.offset - b.offset == A(0))) {  // an infinity or NaN: M2 NaN
      return {n, a.shift, a.offset + b.offset, A(NAN)};
    }
    // mean_b - mean_a: the shifts' difference is exact for nearby shifts (Sterbenz).
    const A d = (b.shift - a.shift) + (b.offset - a.offset);
    const A wb = static_cast<A>(b.count) / static_cast<A>(n);
    return {n, a.shift, a.offset + d * wb, a.m2 + b.m2 + d * d * static_cast<A>(a.count) * wb};
  }
};

// An element's triple: {1, x, 0, 0}.
struct ToMoments {
  template <class T>
  __host__ __device__ Moments<double> operator()(const T& x) const { return {1, stats::widen(x), 0.0, 0.0}; }
};

namespace generic {
// A thread's moments as sums of offsets from a shift its whole block shares (an element of the
// block's range; 0 if that is not finite): two adds and a fused multiply-add an element, and the
// block's threads combine by adding. The block's sums become one (count, mean, M2) triple.
struct MomentSums {
  std::int64_t count;
  double s1, s2;
};
template <>
struct ThreadFold<Moments<double>, ToMoments, MeanVar> {
  using Partial = MomentSums;
  double shift = 0;
  MomentSums sums{0, 0.0, 0.0};
  __device__ explicit ThreadFold(const MeanVar&) {}
  template <class T>
  __device__ __forceinline__ void start(const T* first) {
    const double v = first == nullptr ? 0.0 : stats::widen(*first);
    shift = v - v == 0.0 ? v : 0.0;  // finite
  }
  template <class T>
  __device__ __forceinline__ void add(const ToMoments&, const MeanVar&, std::size_t, const T& x) {
    const double d = stats::widen(x) - shift;
    sums.s1 += d;
    sums.s2 = fma(d, d, sums.s2);
    ++sums.count;
  }
  __device__ __forceinline__ MomentSums partial(const MeanVar&) const { return sums; }
  __device__ __forceinline__ static MomentSums combine(const MeanVar&, const MomentSums& a, const MomentSums& b) {
    return {a.count + b.count, a.s1 + b.s1, a.s2 + b.s2};
  }
  __device__ __forceinline__ Moments<double> finish(const MeanVar&, const MomentSums& p) const {
    if (p.count == 0) return {0, 0.0, 0.0, 0.0};
    const double offset = p.s1 / static_cast<double>(p.count);
    return {p.count, shift, offset, fma(-offset, p.s1, p.s2)};
  }
};
}  // namespace generic

namespace stats {
template <class O>
struct MeanOf {
  __host__ __device__ O operator()(const Moments<double>& m) const { return static_cast<O>(m.mean()); }
};
template <class O>
struct VarianceOf {
  int correction;
  bool root;
  __host__ __device__ O operator()(const Moments<double>& m) const {
    const double v = m.variance(correction);
    return static_cast<O>(root ? sqrt(v) : v);
  }
};
}  // namespace stats

namespace stats {
inline bool valid_correction(int correction) { return correction == 0 || correction == 1; }
// The whole-array moments pass, finished by `finish` (the triple itself, a mean, a variance).
template <class T, class O, class Finish>
cudaError_t launch_moments(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, O* d_out,
                           const Finish& finish, cudaStream_t stream) {
  return generic::launch<T, generic::NoInput, Moments<double>>(d_temp, temp_bytes, d_in,
                                                               static_cast<const generic::NoInput*>(nullptr), n, d_out,
                                                               ToMoments{}, MeanVar{}, finish, stream);
}
}  // namespace stats

// Enqueues *d_out = the moments of d_in[0, n) (n = 0: count 0). Two-phase contract and errors as
// transform_reduce_async.
template <class T>
  requires stats::statistic_input<T>
cudaError_t moments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, Moments<double>* d_out,
                          cudaStream_t stream = 0) {
  return stats::launch_moments(d_temp, temp_bytes, d_in, n, d_out, generic::AsIs{}, stream);
}
// *d_out = the mean (NaN for n = 0).
template <class T>
  requires stats::statistic_input<T>
cudaError_t mean_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                       cudaStream_t stream = 0) {
  return stats::launch_moments(d_temp, temp_bytes, d_in, n, d_out, stats::MeanOf<stat_t<T>>{}, stream);
}
// *d_out = M2 / (n - correction), correction 0 (population) or 1 (sample, the default as in
// torch.var); NaN where n <= correction. A correction other than 0 or 1 is cudaErrorInvalidValue.
template <class T>
  requires stats::statistic_input<T>
cudaError_t var_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                      int correction = 1, cudaStream_t stream = 0) {
  if (!stats::valid_correction(correction)) return cudaErrorInvalidValue;
  return stats::launch_moments(d_temp, temp_bytes, d_in, n, d_out, stats::VarianceOf<stat_t<T>>{correction, false},
                               stream);
}
// *d_out = the standard deviation, sqrt(var).
template <class T>
  requires stats::statistic_input<T>
cudaError_t std_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                      int correction = 1, cudaStream_t stream = 0) {
  if (!stats::valid_correction(correction)) return cudaErrorInvalidValue;
  return stats::launch_moments(d_temp, temp_bytes, d_in, n, d_out, stats::VarianceOf<stat_t<T>>{correction, true},
                               stream);
}

// Blocking forms: storage allocated on `stream`, the result returned; fastreduce::Error on failure.
template <class T>
  requires stats::statistic_input<T>
Moments<double> moments(const T* d_in, std::size_t n, cudaStream_t stream = 0) {
  return generic::run_blocking<Moments<double>>(
      [&](void* t, std::size_t& b, Moments<double>* o) { return moments_async(t, b, d_in, n, o, stream); }, stream,
      "fastreduce::moments");
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> mean(const T* d_in, std::size_t n, cudaStream_t stream = 0) {
  return generic::run_blocking<stat_t<T>>(
      [&](void* t, std::size_t& b, stat_t<T>* o) { return mean_async(t, b, d_in, n, o, stream); }, stream,
      "fastreduce::mean");
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> var(const T* d_in, std::size_t n, int correction = 1, cudaStream_t stream = 0) {
  return generic::run_blocking<stat_t<T>>(
      [&](void* t, std::size_t& b, stat_t<T>* o) { return var_async(t, b, d_in, n, o, correction, stream); }, stream,
      "fastreduce::var");
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> stddev(const T* d_in, std::size_t n, int correction = 1, cudaStream_t stream = 0) {
  return generic::run_blocking<stat_t<T>>(
      [&](void* t, std::size_t& b, stat_t<T>* o) { return std_async(t, b, d_in, n, o, correction, stream); }, stream,
      "fastreduce::stddev");
}

// ---------------------------------------------------------------------------------------------
// Norms and the dot product.

enum class Norm { L1, L2, Inf };

namespace stats {
struct AbsWide {
  template <class T>
  __host__ __device__ double operator()(const T& x) const { return fabs(widen(x)); }
};
struct SquareWide {
  template <class T>
  __host__ __device__ double operator()(const T& x) const {
    const double v = widen(x);
    return v * v;
  }
};
// The largest |x| (NaN propagating); 0 for no element.
struct MaxAbs {
  static constexpr bool commutative = true;
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
}  // namespace stats

namespace stats {
// A norm's pieces: `run(std::type_identity<R>{}, transform, op, finish)` with R the running value's
// type, for the whole-array and the axis forms alike.
template <class T, class Run>
cudaError_t with_norm(Norm which, const Run& run) {
  using O = stat_t<T>;
  switch (which) {
    case Norm::L1:
      return run(std::type_identity<double>{}, AbsWide{}, Sum{}, Cast<O>{});
    case Norm::Inf:
      return run(std::type_identity<double>{}, AbsWide{}, MaxAbs{}, Cast<O>{});
    case Norm::L2:
      if constexpr (std::is_same_v<T, double>) {
        return run(std::type_identity<Blue>{}, ToBlue{}, BlueSum{}, BlueRoot{});
      } else {  // squares of floats, halves and 64-bit integers fit a double's range
        return run(std::type_identity<double>{}, SquareWide{}, Sum{}, Root<O>{});
      }
  }
  return cudaErrorInvalidValue;
}
}  // namespace stats

// Enqueues *d_out = the norm of d_in[0, n) (0 for n = 0). Two-phase contract and errors as
// transform_reduce_async; NaN anywhere gives NaN, an infinity (and no NaN) infinity.
template <class T>
  requires stats::statistic_input<T>
cudaError_t norm_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                       Norm which = Norm::L2, cudaStream_t stream = 0) {
  return stats::with_norm<T>(which, [&](auto r, const auto& f, const auto& op, const auto& finish) {
    using R = typename decltype(r)::type;
    return generic::launch<T, generic::NoInput, R>(d_temp, temp_bytes, d_in,
                                                   static_cast<const generic::NoInput*>(nullptr), n, d_out, f, op,
                                                   finish, stream);
  });
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> norm(const T* d_in, std::size_t n, Norm which = Norm::L2, cudaStream_t stream = 0) {
  return generic::run_blocking<stat_t<T>>(
      [&](void* t, std::size_t& b, stat_t<T>* o) { return norm_async(t, b, d_in, n, o, which, stream); }, stream,
      "fastreduce::norm");
}

// The type of dot(x, y): std::int64_t for integers (wrapping modulo 2^64), else stat_t<T>.
template <class T>
using dot_t = std::conditional_t<std::is_integral_v<T>, std::int64_t, stat_t<T>>;

namespace stats {
struct MultiplyWide {  // products of floats and halves are exact in double
  template <class T>
  __host__ __device__ auto operator()(const T& x, const T& y) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<std::int64_t>(x)) *
                                       static_cast<std::uint64_t>(static_cast<std::int64_t>(y)));
    } else {
      return widen(x) * widen(y);
    }
  }
};
}  // namespace stats

// Enqueues *d_out = sum over i < n of x[i] y[i] (0 for n = 0), accumulated in double (int64 for
// integers). Two-phase contract and errors as transform_reduce_async.
template <class T>
  requires stats::statistic_input<T>
cudaError_t dot_async(void* d_temp, std::size_t& temp_bytes, const T* d_x, const T* d_y, std::size_t n, dot_t<T>* d_out,
                      cudaStream_t stream = 0) {
  using A = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;
  return generic::launch<T, T, A>(d_temp, temp_bytes, d_x, d_y, n, d_out, stats::MultiplyWide{}, Sum{},
                                  stats::Cast<dot_t<T>>{}, stream);
}
template <class T>
  requires stats::statistic_input<T>
dot_t<T> dot(const T* d_x, const T* d_y, std::size_t n, cudaStream_t stream = 0) {
  return generic::run_blocking<dot_t<T>>(
      [&](void* t, std::size_t& b, dot_t<T>* o) { return dot_async(t, b, d_x, d_y, n, o, stream); }, stream,
      "fastreduce::dot");
}

}  // namespace fastreduce

namespace fastreduce {

// MeanVar through the library's entry points (the moments of the whole array, of every row of an
// axis, of every segment), and the statistics along an axis.
template <class T>
  requires stats::statistic_input<T>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, Moments<double>* d_out, std::size_t n,
                         MeanVar, cudaStream_t stream = 0) {
  return moments_async(d_temp, temp_bytes, d_in, n, d_out, stream);
}
template <class T>
  requires stats::statistic_input<T>
Moments<double> reduce(const T* d_in, std::size_t n, MeanVar, cudaStream_t stream = 0) {
  return moments(d_in, n, stream);
}
template <class T>
  requires stats::statistic_input<T>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, Moments<double>* d_out,
                              const Axis& axis, MeanVar op, cudaStream_t stream = 0) {
  return generic::launch_axis<T, Moments<double>>(d_temp, temp_bytes, d_in, d_out, axis, ToMoments{}, op, generic::AsIs{}, stream);
}
template <class T, class Offset>
  requires stats::statistic_input<T> && std::is_integral_v<Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, Moments<double>* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, MeanVar op,
                                  cudaStream_t stream = 0) {
  return generic::launch_segments<T, Moments<double>>(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin, d_end,
                                                      ToMoments{}, op, generic::AsIs{}, stream);
}

// out[o] = the variance (standard deviation with root = true) of output o's elements along `axis`.
template <class T>
  requires stats::statistic_input<T>
cudaError_t var_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, stat_t<T>* d_out, const Axis& axis,
                           int correction = 1, bool root = false, cudaStream_t stream = 0) {
  if (!stats::valid_correction(correction)) return cudaErrorInvalidValue;
  return generic::launch_axis<T, Moments<double>>(d_temp, temp_bytes, d_in, d_out, axis, ToMoments{}, MeanVar{},
                                                  stats::VarianceOf<stat_t<T>>{correction, root}, stream);
}
// out[o] = the mean of output o's elements along `axis`.
template <class T>
  requires stats::statistic_input<T>
cudaError_t mean_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, stat_t<T>* d_out, const Axis& axis,
                            cudaStream_t stream = 0) {
  return generic::launch_axis<T, Moments<double>>(d_temp, temp_bytes, d_in, d_out, axis, ToMoments{}, MeanVar{},
                                                  stats::MeanOf<stat_t<T>>{}, stream);
}
// out[o] = the norm of output o's elements along `axis`.
template <class T>
  requires stats::statistic_input<T>
cudaError_t norm_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, stat_t<T>* d_out, const Axis& axis,
                            Norm which = Norm::L2, cudaStream_t stream = 0) {
  return stats::with_norm<T>(which, [&](auto r, const auto& f, const auto& op, const auto& finish) {
    using R = typename decltype(r)::type;
    return generic::launch_axis<T, R>(d_temp, temp_bytes, d_in, d_out, axis, f, op, finish, stream);
  });
}

}  // namespace fastreduce
