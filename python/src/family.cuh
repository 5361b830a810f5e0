// The family ops' kernels for one input type T (included by family_*.cu, compiled by nvcc, each of
// which instantiates family_enqueue_typed for its types).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "family.hpp"
#include "fastreduce/reduce.cuh"
#include "fastreduce/stats.cuh"

namespace fastreduce_python {

namespace fr = fastreduce;

// Arg-extremes of __half and __nv_bfloat16 (not arithmetic types, which fastreduce's ArgMax and
// ArgMin take): each element becomes {float(x), its index} and the pairs meet with ArgMax (ArgMin).
// The conversion is exact and keeps the order, the ties and NaN, so the index is the one of the
// narrow type's own comparison; the values come back to the narrow type exactly.
struct ToIndexedFloat {
  template <class T>
  __device__ fr::Indexed<float> operator()(const T& x, std::size_t i) const {
    return {static_cast<float>(x), static_cast<std::int64_t>(i)};
  }
};
struct ArgMaxExact : fr::ArgMax {
  static constexpr bool order_independent = true;  // the index-ordered extreme is exact in any order
};
struct ArgMinExact : fr::ArgMin {
  static constexpr bool order_independent = true;
};

template <class T>
inline constexpr bool narrow_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class T, bool Greater>
auto arg_op() {
  if constexpr (narrow_v<T>) {
    if constexpr (Greater) return fr::transformed(ToIndexedFloat{}, ArgMaxExact{});
    else return fr::transformed(ToIndexedFloat{}, ArgMinExact{});
  } else {
    if constexpr (Greater) return fr::ArgMax{};
    else return fr::ArgMin{};
  }
}

// The {value, index} pairs into values (O) and indices.
template <class V, class O>
__global__ void split_indexed(const fr::Indexed<V>* pairs, O* values, std::int64_t* indices, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const fr::Indexed<V> p = pairs[i];
  if (values != nullptr) values[i] = static_cast<O>(p.value);
  if (indices != nullptr) indices[i] = p.index;
}

// A family reduction R whose results are written as O = P{}(R's result): the kernels write what
// project() gives, so a result of another type (the indices alone of an arg-extreme) costs no
// kernel of its own.
template <class R, class O, class P>
struct Projected : R {
  using Out = O;
  __device__ __forceinline__ Projected at(const typename R::Input* first) const { return Projected{R::at(first)}; }
  __host__ __device__ __forceinline__ O project(const typename R::Partial& p) const { return P{}(R::project(p)); }
};
struct IndexOf {  // an arg-extreme's {value, index}: the index
  template <class V>
  __host__ __device__ std::int64_t operator()(const fr::Indexed<V>& p) const { return p.index; }
};

template <class R>
cudaError_t run_reduction(const FamilyCall& c, void* temp, std::size_t& bytes, const char** message, const R& r,
                          void* out) {
  return fr::engine::reduce_axis_async_impl<R>(temp, bytes, {reinterpret_cast<const typename R::Input*>(c.in)},
                                               static_cast<typename R::Out*>(out), c.axis, r, c.stream, c.opt,
                                               message);
}

template <class T, class Op>
cudaError_t run_one(const FamilyCall& c, void* temp, std::size_t& bytes, const char** message, const Op& op,
                    void* out) {
  return run_reduction(c, temp, bytes, message, fr::reduction_of(std::type_identity<T>{}, op), out);
}

template <class T, bool Greater>
cudaError_t run_arg(const FamilyCall& c, void* extra, void* temp, std::size_t& bytes, const char** message) {
  const auto op = arg_op<T, Greater>();
  if (c.out == 0) {  // the indices alone, written by the reduction's kernels
    using R = Projected<fr::reduction_t<T, decltype(op)>, std::int64_t, IndexOf>;
    return run_reduction(c, temp, bytes, message, R{fr::reduction_of(std::type_identity<T>{}, op)},
                         reinterpret_cast<void*>(c.out2));
  }
  using Pair = fr::result_t<T, decltype(op)>;
  const cudaError_t e = run_one<T>(c, temp, bytes, message, op, extra);
  if (e != cudaSuccess || temp == nullptr) return e;
  const std::size_t n = c.axis.outer * c.axis.inner;
  if (n == 0) return cudaSuccess;
  const unsigned threads = 256;
  split_indexed<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0, c.stream>>>(
      static_cast<const Pair*>(extra), reinterpret_cast<T*>(c.out), reinterpret_cast<std::int64_t*>(c.out2), n);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess && message != nullptr) *message = "the split of values and indices failed to launch";
  return launched;
}

// A statistic or norm: of stat_t<T>, or for FamilyNarrow in the input's own half type, rounded once
// by the kernel that writes it (engine::Narrowed), in every mode.
template <class T, class Op>
cudaError_t run_stat(const FamilyCall& c, void* temp, std::size_t& bytes, const char** message, const Op& op,
                     void* out) {
  if (c.result == FamilyNarrow) {
    if constexpr (narrow_v<T>) {
      using R = fr::engine::Narrowed<fr::reduction_t<T, Op>>;
      return run_reduction(c, temp, bytes, message, R{fr::reduction_of(std::type_identity<T>{}, op)}, out);
    }
    if (message != nullptr) *message = "results in the input's type are for float16 and bfloat16";
    return cudaErrorInvalidValue;
  }
  return run_one<T>(c, temp, bytes, message, op, out);
}

template <class T>
cudaError_t family_enqueue_typed(const FamilyCall& c, void* extra, void* temp, std::size_t& bytes,
                                 const char** message) {
  void* out = reinterpret_cast<void*>(c.out);
  if constexpr (std::is_integral_v<T>) {  // integers: the arg-extremes only (torch has no integer stats)
    if (c.op == OpArgMax) return run_arg<T, true>(c, extra, temp, bytes, message);
    if (c.op == OpArgMin) return run_arg<T, false>(c, extra, temp, bytes, message);
    if (message != nullptr) *message = "integer inputs have the arg-extremes only";
    return cudaErrorInvalidValue;
  } else {
  switch (c.op) {
    case OpArgMax: return run_arg<T, true>(c, extra, temp, bytes, message);
    case OpArgMin: return run_arg<T, false>(c, extra, temp, bytes, message);
    case OpMean: return run_stat<T>(c, temp, bytes, message, fr::Mean{}, out);
    case OpVar: return run_stat<T>(c, temp, bytes, message, fr::Var{c.param}, out);
    case OpStd: return run_stat<T>(c, temp, bytes, message, fr::Std{c.param}, out);
    case OpNormL1: return run_stat<T>(c, temp, bytes, message, fr::NormL1{}, out);
    case OpNormL2: return run_stat<T>(c, temp, bytes, message, fr::NormL2{}, out);
    case OpNormInf: return run_stat<T>(c, temp, bytes, message, fr::NormInf{}, out);
    case OpDot: {
      using R = fr::reduction2_t<T, T, fr::Dot>;
      return fr::engine::reduce_axis_async_impl<R>(
          temp, bytes, {reinterpret_cast<const T*>(c.in), reinterpret_cast<const T*>(c.in2)},
          static_cast<typename R::Out*>(out), c.axis,
          fr::reduction_of(std::type_identity<T>{}, std::type_identity<T>{}, fr::Dot{}), c.stream, c.opt, message);
    }
    default:
      if (message != nullptr) *message = "unknown op code";
      return cudaErrorInvalidValue;
  }
  }
}

template <class T>
std::size_t family_extra_bytes_typed(const FamilyCall& c) {
  if ((c.op != OpArgMax && c.op != OpArgMin) || c.out == 0) return 0;
  using Pair = fr::result_t<T, decltype(arg_op<T, true>())>;
  return c.axis.outer * c.axis.inner * sizeof(Pair);
}

#define FASTREDUCE_PYTHON_FAMILY(T)                                                                                   \
  template cudaError_t family_enqueue_typed<T>(const FamilyCall&, void*, void*, std::size_t&, const char**);       \
  template std::size_t family_extra_bytes_typed<T>(const FamilyCall&);

}  // namespace fastreduce_python
