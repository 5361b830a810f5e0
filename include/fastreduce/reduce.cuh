// fastreduce/reduce.cuh: the reduce family for every op the library does not precompile:
// arg-extremes, the moments, users' own ops and transforms, for any trivially copyable element
// type. Header-only kernels (the engine's own, include/fastreduce/detail/), instantiated here for
// your ops: include it in a .cu file compiled by nvcc and link fastreduce::fastreduce (its host
// planning). The built-in types and ops keep going to the precompiled library.
//
//   fastreduce::Indexed<float> m = fastreduce::reduce(d_in, n, fastreduce::ArgMax{});
//   fastreduce::reduce_async(d_temp, temp_bytes, d_in, d_out, n, op, stream, options);
//   fastreduce::reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, op, stream, options);
//   fastreduce::reduce_segments_async(d_temp, temp_bytes, d_in, d_out, segments, d_begin, d_end, op, stream);
//   float s = fastreduce::reduce(d_in, n, fastreduce::transformed(Square{}, fastreduce::Sum{}));
//   float d = fastreduce::reduce(d_x, d_y, n, fastreduce::transformed(Multiply{}, fastreduce::Sum{}));
// Mean, variance, norms and dot: fastreduce/stats.cuh, the same family.
//
// One contract for every op and shape (fastreduce.cuh's): CUB's two-phase temporary storage, no
// allocation and no synchronisation in the _async forms, `stream` and `Options` everywhere, a
// cudaError_t for bad arguments with nothing written; the blocking forms (reduce, reduce_on,
// reduce_axis) use the library's cached storage per stream and throw fastreduce::Error.
// Options::mode = Mode::Reproducible (and Mode::Exact) gives ops whose result does not depend on
// the order of the operations (integer and bitwise ops, min, max, arg-extremes, an op that says
// `static constexpr bool order_independent = true`) as they are, the L1 norm and the mean of
// floating-point inputs on the sum's own kernels (fastreduce/stats.cuh), and refuses the others
// (cudaErrorNotSupported).
//
// What an op must satisfy. With R the transform's result type:
//   - op(R, R) -> R, callable on the device, and associative: op(a, op(b, c)) == op(op(a, b), c)
//     (for floating-point sums this holds up to rounding, so the grouping changes the last bits);
//   - an identity e with op(e, x) == op(x, e) == x: either a static member template
//     `identity<R>()` (as fastreduce::Sum, Prod, Min, Max have) or a member function `identity()`;
//   - commutativity is NOT required: unless the op declares `static constexpr bool commutative =
//     true` (the built-in ops, ArgMax/ArgMin and MeanVar do), the operands always meet in index
//     order, result = op(...op(op(e, f(x[0])), f(x[1]))..., f(x[n-1])) up to associativity,
//     so a non-commutative op (composing affine maps, concatenating ranges) gets the index-order
//     result, only bracketed differently. (Two-input reductions need a commutative op.)
// Transforms and ops are functors of namespace scope (CUDA does not instantiate kernels on types
// local to a function) or, with nvcc --extended-lambda, __device__ lambdas. A transform may take
// the element's index (std::size_t) as its last argument: the position in the array, or along the
// axis, or in the segment.
// Commutative ops run on every path of the engine (fastreduce.cuh): 16-byte loads, a block's
// share of the input, bulk copies, rows, columns and strided views, balanced segments.
// Determinism: the bracketing depends on n, the element size, the input's address modulo 16 and
// the grid (the GPU's SM count and occupancy), never on timing: the same call on the same GPU
// model gives the same bits every time.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "fastreduce/axis.hpp"
#include "fastreduce/detail/arg_reduction.cuh"
#include "fastreduce/detail/axis_dispatch.cuh"
#include "fastreduce/detail/dispatch.cuh"
#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/error.hpp"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/ops.cuh"

namespace fastreduce {

// The transform that leaves elements as they are.
struct Identity {
  template <class T>
  __host__ __device__ constexpr T operator()(const T& x) const { return x; }
};

// A user's transform and op as one op of the reduce family.
template <class F, class Op>
struct Transform {
  F transform;
  Op op;
};
template <class F, class Op>
constexpr Transform<F, Op> transformed(F transform, Op op) {
  return {transform, op};
}

namespace engine {
// What f makes of elements x... (f(x..., i) for a transform that takes the index too); no `type`
// where f takes no such arguments.
template <class F, class... X>
struct transform_result {};
template <class F, class... X>
  requires std::is_invocable_v<const F&, const X&...> && (!std::is_invocable_v<const F&, const X&..., std::size_t>)
struct transform_result<F, X...> {
  using type = std::remove_cvref_t<std::invoke_result_t<const F&, const X&...>>;
};
template <class F, class... X>
  requires std::is_invocable_v<const F&, const X&..., std::size_t>
struct transform_result<F, X...> {
  using type = std::remove_cvref_t<std::invoke_result_t<const F&, const X&..., std::size_t>>;
};
}  // namespace engine

// The type a transform makes of an element (a transform may take the element's index as a last
// argument, std::size_t), of one input or two.
template <class T, class F>
using transform_result_t = typename engine::transform_result<F, T>::type;
template <class T, class U, class F>
using transform_result2_t = typename engine::transform_result<F, T, U>::type;

// reduction_of(std::type_identity<T>{}, op): the reduction (detail/reduction.cuh) of T's elements
// with `op`, for every op of the family that is not a precompiled built-in. Found by argument-
// dependent lookup, so that fastreduce/stats.cuh adds its ops.
template <class T>
  requires std::is_arithmetic_v<T>
engine::ArgReduction<T, ArgMax> reduction_of(std::type_identity<T>, const ArgMax& op) {
  return {op};
}
template <class T>
  requires std::is_arithmetic_v<T>
engine::ArgReduction<T, ArgMin> reduction_of(std::type_identity<T>, const ArgMin& op) {
  return {op};
}
template <class T, class F, class Op>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<transform_result_t<T, F>> &&
           has_identity<Op, transform_result_t<T, F>>
engine::Transformed<T, engine::NoInput, F, Op, transform_result_t<T, F>> reduction_of(std::type_identity<T>,
                                                                                     const Transform<F, Op>& t) {
  return {t.transform, t.op, {}};
}
// Any other op with an identity over T itself (users' ops; the built-in ops over types the
// library is not compiled for). The family's own ops have reductions of their own.
template <class Op>
inline constexpr bool is_family_op_v = is_arg_op_v<Op> || std::is_same_v<Op, MeanVar>;
template <class T, class Op>
  requires std::is_trivially_copyable_v<T> && has_identity<Op, T> && (!reducible<T, Op>) && (!is_family_op_v<Op>)
engine::Transformed<T, engine::NoInput, Identity, Op, T> reduction_of(std::type_identity<T>, const Op& op) {
  return {{}, op, {}};
}
// Two inputs: a transform of element pairs and a commutative op.
template <class T, class U, class F, class Op>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<U> &&
           has_identity<Op, transform_result2_t<T, U, F>>
engine::Transformed<T, U, F, Op, transform_result2_t<T, U, F>> reduction_of(std::type_identity<T>,
                                                                           std::type_identity<U>,
                                                                           const Transform<F, Op>& t) {
  return {t.transform, t.op, {}};
}

// An op of the header-only family for T (one input), and its result type.
template <class T, class Op>
concept header_op = !reducible<T, Op> && requires(const Op& op) { reduction_of(std::type_identity<T>{}, op); };
template <class T, class Op>
using reduction_t = decltype(reduction_of(std::type_identity<T>{}, std::declval<const Op&>()));
template <class T, class Op>
using result_t = typename reduction_t<T, Op>::Out;

template <class T, class U, class Op>
concept header_op2 = requires(const Op& op) { reduction_of(std::type_identity<T>{}, std::type_identity<U>{}, op); };
template <class T, class U, class Op>
using reduction2_t =
    decltype(reduction_of(std::type_identity<T>{}, std::type_identity<U>{}, std::declval<const Op&>()));
template <class T, class U, class Op>
using result2_t = typename reduction2_t<T, U, Op>::Out;

// ---------------------------------------------------------------------------------------------
// The family (contracts and errors as fastreduce.cuh's reduce_async, reduce_axis_async and
// reduce_segments_async; n = 0 and length 0 write the op's result of no element).

template <class T, class Op>
  requires header_op<T, Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, result_t<T, Op>* d_out, std::size_t n,
                         Op op, cudaStream_t stream = 0, const Options& opt = {}) {
  using R = reduction_t<T, Op>;
  return engine::reduce_async_impl<R>(d_temp, temp_bytes, {d_in}, d_out, n, reduction_of(std::type_identity<T>{}, op),
                                      stream, opt);
}

template <class T, class Op>
  requires header_op<T, Op>
result_t<T, Op> reduce_on(cudaStream_t stream, const T* d_in, std::size_t n, Op op, const Options& opt = {}) {
  using R = reduction_t<T, Op>;
  const R red = reduction_of(std::type_identity<T>{}, op);
  return engine::run_blocking<result_t<T, Op>>(
      stream, "fastreduce::reduce", opt,
      [&](void* temp, std::size_t& bytes, result_t<T, Op>* out, const Options& o, const char** message) {
        return engine::reduce_async_impl<R>(temp, bytes, {d_in}, out, n, red, stream, o, message);
      });
}

template <class T, class Op>
  requires header_op<T, Op>
result_t<T, Op> reduce(const T* d_in, std::size_t n, Op op, const Options& opt = {}) {
  return reduce_on(cudaStream_t{}, d_in, n, op, opt);
}

template <class T, class Op>
  requires header_op<T, Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, result_t<T, Op>* d_out,
                              const Axis& axis, Op op, cudaStream_t stream = 0, const Options& opt = {}) {
  using R = reduction_t<T, Op>;
  return engine::reduce_axis_async_impl<R>(d_temp, temp_bytes, {d_in}, d_out, axis,
                                           reduction_of(std::type_identity<T>{}, op), stream, opt);
}

// Blocking: reduces on the default stream into d_out (device memory) and waits for it.
template <class T, class Op>
  requires header_op<T, Op>
void reduce_axis(const T* d_in, result_t<T, Op>* d_out, const Axis& axis, Op op, const Options& opt = {}) {
  using R = reduction_t<T, Op>;
  const R red = reduction_of(std::type_identity<T>{}, op);
  engine::run_blocking_void(cudaStream_t{}, "fastreduce::reduce_axis", opt,
                            [&](void* temp, std::size_t& bytes, const Options& o, const char** message) {
                              return engine::reduce_axis_async_impl<R>(temp, bytes, {d_in}, d_out, axis, red,
                                                                       cudaStream_t{}, o, message);
                            });
}

// Offsets are device data of any integer type, not checked against the input, nor is a null d_in
// (allowed when every segment is empty), as CUB and fastreduce.cuh's reduce_segments_async.
template <class T, class Op, class Offset>
  requires header_op<T, Op> && std::is_integral_v<Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, result_t<T, Op>* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                  cudaStream_t stream = 0, const Options& opt = {}) {
  using R = reduction_t<T, Op>;
  return engine::reduce_segments_async_impl<R, Offset>(d_temp, temp_bytes, {d_in}, d_out, num_segments, d_begin, d_end,
                                                       reduction_of(std::type_identity<T>{}, op), stream, opt);
}

// Two inputs read at the same indices (a dot product, a distance): *d_out = op over i < n of
// transform(x[i], y[i]). The op must be commutative; x and y may have any alignment (16-byte
// vectors when both lie equally far from a 16-byte boundary).
template <class T, class U, class Op>
  requires header_op2<T, U, Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_x, const U* d_y, result2_t<T, U, Op>* d_out,
                         std::size_t n, Op op, cudaStream_t stream = 0, const Options& opt = {}) {
  using R = reduction2_t<T, U, Op>;
  return engine::reduce_async_impl<R>(d_temp, temp_bytes, {d_x, d_y}, d_out, n,
                                      reduction_of(std::type_identity<T>{}, std::type_identity<U>{}, op), stream, opt);
}
template <class T, class U, class Op>
  requires header_op2<T, U, Op>
result2_t<T, U, Op> reduce_on(cudaStream_t stream, const T* d_x, const U* d_y, std::size_t n, Op op,
                              const Options& opt = {}) {
  using R = reduction2_t<T, U, Op>;
  const R red = reduction_of(std::type_identity<T>{}, std::type_identity<U>{}, op);
  return engine::run_blocking<result2_t<T, U, Op>>(
      stream, "fastreduce::reduce", opt,
      [&](void* temp, std::size_t& bytes, result2_t<T, U, Op>* out, const Options& o, const char** message) {
        return engine::reduce_async_impl<R>(temp, bytes, {d_x, d_y}, out, n, red, stream, o, message);
      });
}
template <class T, class U, class Op>
  requires header_op2<T, U, Op>
result2_t<T, U, Op> reduce(const T* d_x, const U* d_y, std::size_t n, Op op, const Options& opt = {}) {
  return reduce_on(cudaStream_t{}, d_x, d_y, n, op, opt);
}
// Along an axis: x and y share the shape and strides.
template <class T, class U, class Op>
  requires header_op2<T, U, Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_x, const U* d_y,
                              result2_t<T, U, Op>* d_out, const Axis& axis, Op op, cudaStream_t stream = 0,
                              const Options& opt = {}) {
  using R = reduction2_t<T, U, Op>;
  return engine::reduce_axis_async_impl<R>(d_temp, temp_bytes, {d_x, d_y}, d_out, axis,
                                           reduction_of(std::type_identity<T>{}, std::type_identity<U>{}, op), stream,
                                           opt);
}

template <class T, class U, class Op, class Offset>
  requires header_op2<T, U, Op> && std::is_integral_v<Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_x, const U* d_y,
                                  result2_t<T, U, Op>* d_out, std::size_t num_segments, const Offset* d_begin,
                                  const Offset* d_end, Op op, cudaStream_t stream = 0, const Options& opt = {}) {
  using R = reduction2_t<T, U, Op>;
  return engine::reduce_segments_async_impl<R, Offset>(d_temp, temp_bytes, {d_x, d_y}, d_out, num_segments, d_begin,
                                                       d_end,
                                                       reduction_of(std::type_identity<T>{}, std::type_identity<U>{}, op),
                                                       stream, opt);
}

// ---------------------------------------------------------------------------------------------
// Shorthands for users' transforms (the same calls through `transformed(transform, op)`), and
// for the arg-extremes.

template <class T, class F, class Op, class R = transform_result_t<T, F>>
  requires header_op<T, Transform<F, Op>>
cudaError_t transform_reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, R* d_out,
                                   F transform, Op op, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_in, d_out, n, transformed(transform, op), stream, opt);
}
template <class T, class U, class F, class Op, class R = transform_result2_t<T, U, F>>
  requires header_op2<T, U, Transform<F, Op>>
cudaError_t transform_reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_x, const U* d_y, std::size_t n,
                                   R* d_out, F transform, Op op, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_x, d_y, d_out, n, transformed(transform, op), stream, opt);
}
template <class T, class F, class Op>
  requires header_op<T, Transform<F, Op>>
transform_result_t<T, F> transform_reduce(const T* d_in, std::size_t n, F transform, Op op, cudaStream_t stream = 0,
                                          const Options& opt = {}) {
  return reduce_on(stream, d_in, n, transformed(transform, op), opt);
}
template <class T, class U, class F, class Op>
  requires header_op2<T, U, Transform<F, Op>>
transform_result2_t<T, U, F> transform_reduce(const T* d_x, const U* d_y, std::size_t n, F transform, Op op,
                                              cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_x, d_y, n, transformed(transform, op), opt);
}
template <class T, class F, class Op, class R = transform_result_t<T, F>>
  requires header_op<T, Transform<F, Op>>
cudaError_t transform_reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, R* d_out,
                                        const Axis& axis, F transform, Op op, cudaStream_t stream = 0,
                                        const Options& opt = {}) {
  return reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, transformed(transform, op), stream, opt);
}
template <class T, class Offset, class F, class Op, class R = transform_result_t<T, F>>
  requires header_op<T, Transform<F, Op>> && std::is_integral_v<Offset>
cudaError_t transform_reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, R* d_out,
                                            std::size_t num_segments, const Offset* d_begin, const Offset* d_end,
                                            F transform, Op op, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_segments_async(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin, d_end, transformed(transform, op),
                               stream, opt);
}

// *d_out = {max (min), its first index} of d_in[0, n) (n = 0 writes {lowest (highest), INT64_MAX}).
template <class T>
  requires std::is_arithmetic_v<T>
cudaError_t argmax_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, Indexed<T>* d_out,
                         cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_in, d_out, n, ArgMax{}, stream, opt);
}
template <class T>
  requires std::is_arithmetic_v<T>
cudaError_t argmin_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, Indexed<T>* d_out,
                         cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_async(d_temp, temp_bytes, d_in, d_out, n, ArgMin{}, stream, opt);
}
template <class T>
  requires std::is_arithmetic_v<T>
Indexed<T> argmax(const T* d_in, std::size_t n, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_in, n, ArgMax{}, opt);
}
template <class T>
  requires std::is_arithmetic_v<T>
Indexed<T> argmin(const T* d_in, std::size_t n, cudaStream_t stream = 0, const Options& opt = {}) {
  return reduce_on(stream, d_in, n, ArgMin{}, opt);
}

}  // namespace fastreduce
