// fastreduce/stats.cuh: mean, variance and standard deviation in one pass, L1, L2 and Linf norms,
// and the dot product: ops of the reduce family (fastreduce/reduce.cuh), so every one runs on
// every shape of the engine (1-D, rows, columns, strided views, segments) with its contract.
// Header-only kernels: include it in a .cu file compiled by nvcc and link fastreduce::fastreduce.
// For float, double, __half, __nv_bfloat16 (include <cuda_fp16.h> / <cuda_bf16.h> first) and
// the integer types.
//
//   float v = fastreduce::reduce(d_x, n, fastreduce::Var{});           // correction = 1, as torch.var
//   float s = fastreduce::reduce(d_x, n, fastreduce::NormL2{});
//   float d = fastreduce::reduce(d_x, d_y, n, fastreduce::Dot{});
//   fastreduce::reduce_axis_async(d_temp, temp_bytes, d_x, d_out, axis, fastreduce::Var{0}, stream);
//   fastreduce::Moments<double> m = fastreduce::moments(d_x, n);    // count, mean(), m2
//   float v = fastreduce::var(d_x, n);                               // the shorthands
//
// Results: stat_t<T> = float for float, __half and __nv_bfloat16 inputs; double for double and the
// integers. Everything accumulates in double, so a float's sum of squares neither overflows nor
// underflows, and a float result is the double result rounded once. A double L2 norm scales its
// squares by powers of two (Blue's three accumulators), so it is right from the smallest subnormal
// to the largest finite double. Integer dot products are exact modulo 2^64 (std::int64_t).
// `Mean` of float, half, bfloat16, bool and 8- and 16-bit integers is their sum in double divided
// by their count; of doubles and wider integers, the moments' mean below.
//
// The variance is numerically robust: each unit of work (a block's share of the input, a row or a
// piece of one, a column, a segment piece) sums its elements' offsets from one of its elements (a
// shift its threads share), turns them into a (count, mean, M2) triple, and the triples meet in
// Chan's pairwise merge, in a fixed order; means are kept as a shift plus an offset, so data such
// as 1e6 + U(0, 1e-3) keep their spread (relative error ~1e-13 against a quad reference). A shift
// far from its unit's mean costs digits in proportion (an outlier 1e6 away: ~1e-11), and offsets
// of doubles near +-DBL_MAX can overflow. NaN gives NaN; an infinity gives an infinite mean and a
// NaN variance, as torch. Results are deterministic on a given GPU model (not bitwise equal
// across GPUs). Mode::Reproducible and Mode::Exact: the Linf norm as it is (it is exact); the L1
// norm and the mean of floating-point inputs on the sum's reproducible and exact kernels (the L1
// norm with each element's sign bit cleared as it is loaded, the mean with the total divided by
// the count before its one rounding; Mode::Exact: the exact sum of |x|, and the exact sum divided
// by n, rounded once into stat_t<T>, on every shape); the L2 norm of float, half and bfloat16
// inputs on every shape, both modes alike: each output's exact sum of the squares (each exact in
// double) rounded once to double, its square root rounded to double and then to float (within an
// ulp of the correctly rounded norm; the bits a function of the data alone); the dot product of
// float, half and bfloat16 inputs on every shape, both modes alike: the exact sum of the products
// (each exact in double) rounded once to float (correctly rounded); the variance and standard
// deviation of float, half and bfloat16 inputs on every shape, both modes alike: each output's
// n sum x^2 - (sum x)^2 from the exact sums, in integers, rounded once to double, divided by n and
// then by n - correction in double (std: its square root in double), rounded to float (within an
// ulp of the correctly rounded value). These of doubles are refused (cudaErrorNotSupported).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fastreduce/detail/stat_reductions.cuh"
#include "fastreduce/reduce.cuh"

namespace fastreduce {

// The ops.
struct Mean {};
struct Var {
  int correction = 1;  // M2 / (n - correction), NaN where n <= correction (torch.var: inf); a negative
                       // correction is refused (cudaErrorInvalidValue, fastreduce::Error)
};
struct Std {
  int correction = 1;  // sqrt of Var's
};
struct NormL1 {};
struct NormL2 {};
struct NormInf {};
struct Dot {};  // two inputs: sum over i of x[i] y[i]

enum class Norm { L1, L2, Inf };

template <class T>
  requires stats::statistic_input<T>
engine::MomentsReduction<T, engine::AsIs> reduction_of(std::type_identity<T>, const MeanVar&) {
  return {};
}
template <class T>
  requires stats::statistic_input<T>
engine::mean_reduction<T> reduction_of(std::type_identity<T>, const Mean&) {
  return {};
}
template <class T>
  requires stats::statistic_input<T>
engine::MomentsReduction<T, engine::VarianceOf<stat_t<T>>> reduction_of(std::type_identity<T>, const Var& op) {
  return {{op.correction, false}};
}
template <class T>
  requires stats::statistic_input<T>
engine::MomentsReduction<T, engine::VarianceOf<stat_t<T>>> reduction_of(std::type_identity<T>, const Std& op) {
  return {{op.correction, true}};
}
template <class T>
  requires stats::statistic_input<T>
engine::l1_reduction<T> reduction_of(std::type_identity<T>, const NormL1&) {
  return {};
}
template <class T>
  requires stats::statistic_input<T>
engine::l2_reduction<T> reduction_of(std::type_identity<T>, const NormL2&) {
  return {};
}
template <class T>
  requires stats::statistic_input<T>
engine::inf_reduction<T> reduction_of(std::type_identity<T>, const NormInf&) {
  return {};
}
template <class T>
  requires stats::statistic_input<T>
engine::dot_reduction<T> reduction_of(std::type_identity<T>, std::type_identity<T>, const Dot&) {
  return {};
}

namespace stats {
// Calls run(op) with the norm's op.
template <class Run>
decltype(auto) with_norm(Norm which, const Run& run) {
  switch (which) {
    case Norm::L1: return run(NormL1{});
    case Norm::Inf: return run(NormInf{});
    case Norm::L2: break;
  }
  return run(NormL2{});
}
}  // namespace stats

// ---------------------------------------------------------------------------------------------
// Shorthands (the family's calls with the ops above).

template <class T>
  requires stats::statistic_input<T>
cudaError_t moments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, Moments<double>* d_out,
                          cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_in, d_out, n, MeanVar{}, stream, opt);
}
// *d_out = the mean (NaN for n = 0).
template <class T>
  requires stats::statistic_input<T>
cudaError_t mean_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                       cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_in, d_out, n, Mean{}, stream, opt);
}
// *d_out = M2 / (n - correction); correction 1 (sample, the default as in torch.var) or any other
// count >= 0; NaN where n <= correction.
template <class T>
  requires stats::statistic_input<T>
cudaError_t var_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                      int correction = 1, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_in, d_out, n, Var{correction}, stream, opt);
}
template <class T>
  requires stats::statistic_input<T>
cudaError_t std_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                      int correction = 1, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_in, d_out, n, Std{correction}, stream, opt);
}
template <class T>
  requires stats::statistic_input<T>
Moments<double> moments(const T* d_in, std::size_t n, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_in, n, MeanVar{}, opt);
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> mean(const T* d_in, std::size_t n, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_in, n, Mean{}, opt);
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> var(const T* d_in, std::size_t n, int correction = 1, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_in, n, Var{correction}, opt);
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> stddev(const T* d_in, std::size_t n, int correction = 1, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_in, n, Std{correction}, opt);
}

// *d_out = the norm of d_in[0, n) (0 for n = 0); NaN anywhere gives NaN, an infinity (and no NaN)
// infinity.
template <class T>
  requires stats::statistic_input<T>
cudaError_t norm_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, stat_t<T>* d_out,
                       Norm which = Norm::L2, cudaStream_t stream = 0, const Options& opt = {}) {
  return stats::with_norm(which, [&](auto op) { return reduce_async(d_temp, temp_bytes, d_in, d_out, n, op, stream, opt); });
}
template <class T>
  requires stats::statistic_input<T>
stat_t<T> norm(const T* d_in, std::size_t n, Norm which = Norm::L2, cudaStream_t stream = 0, const Options& opt = {}) {
  return stats::with_norm(which, [&](auto op) { return reduce_on(stream, d_in, n, op, opt); });
}

// *d_out = sum over i < n of x[i] y[i] (0 for n = 0), accumulated in double (int64 for integers).
template <class T>
  requires stats::statistic_input<T>
cudaError_t dot_async(void* d_temp, std::size_t& temp_bytes, const T* d_x, const T* d_y, std::size_t n, dot_t<T>* d_out,
                      cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_x, d_y, d_out, n, Dot{}, stream, opt);
}
template <class T>
  requires stats::statistic_input<T>
dot_t<T> dot(const T* d_x, const T* d_y, std::size_t n, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_x, d_y, n, Dot{}, opt);
}

// Along an axis: out[o] = the variance (standard deviation with root = true), the mean, the norm
// of output o's elements.
template <class T>
  requires stats::statistic_input<T>
cudaError_t var_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, stat_t<T>* d_out, const Axis& axis,
                           int correction = 1, bool root = false, cudaStream_t stream = 0, const Options& opt = {}) {
  if (root) return reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, Std{correction}, stream, opt);
  return reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, Var{correction}, stream, opt);
}
template <class T>
  requires stats::statistic_input<T>
cudaError_t mean_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, stat_t<T>* d_out, const Axis& axis,
                            cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, Mean{}, stream, opt);
}
template <class T>
  requires stats::statistic_input<T>
cudaError_t norm_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, stat_t<T>* d_out, const Axis& axis,
                            Norm which = Norm::L2, cudaStream_t stream = 0, const Options& opt = {}) {
  return stats::with_norm(which,
                          [&](auto op) { return reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, op, stream, opt); });
}

}  // namespace fastreduce
