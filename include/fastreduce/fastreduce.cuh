// fastreduce: parallel reduction on NVIDIA GPUs.
//
//   float s = fastreduce::reduce(d_in, n);                       // blocking, throws fastreduce::Error
//   float m = fastreduce::reduce(d_in, n, fastreduce::Max{});
//   fastreduce::reduce_async(d_temp, temp_bytes, d_in, d_out, n, op, stream, options);
//
// reduce_async follows CUB's two-phase contract: called with d_temp == nullptr it only sets
// temp_bytes (never 0); called again with that much device memory it enqueues the reduction
// on `stream` and returns, with no allocation and no synchronization. The temporary storage
// is opaque, must be 16-byte aligned (cudaMalloc gives 256), may hold anything before a call,
// and must not be shared by reductions that can run at once.
//
// The GPU is shared: no block of a reduction ever waits for another block, so a reduction makes
// progress on whatever SMs are free while other kernels (NCCL, persistent kernels, other MPS
// clients) hold the rest. Above one block, a reduction is two kernels on `stream`: the blocks'
// partials, then a one-block combine (on sm_90 launched as a programmatic dependent launch).
//
// Input types: float, double, __half, __nv_bfloat16, bool and every standard integer type, by
// its size and signedness (long long and long, char and signed char, ... reduce alike). Any other
// type fails to compile, naming the type (the `reducible` constraint below).
// Accumulators and results, acc_t<T, Op>:
//   - integers of 4 and 8 bytes reduce in their own type and wrap like CUB's;
//   - integers of 1 and 2 bytes and bool sum and multiply into std::int64_t, as PyTorch does (the
//     sum of a mask counts its true values); their Min, Max and bitwise ops keep the input type;
//   - float and double in their own type; __half and __nv_bfloat16 are converted and accumulated
//     as float, and the result is a float.
// Other result types, chosen by d_out's type (the overloads below; the kernels write them, so no
// conversion kernel runs before or after the reduction):
//   - __half and __nv_bfloat16 inputs, d_out of the input's own type: the float result rounded
//     once into it (Mode::Exact: the exact sum rounded once into it; Mode::Reproducible: its
//     compensated total, held exactly in its limbs, rounded once into it);
//   - 4-byte integers' Sum and Prod, d_out of 8-byte integers (std::int64_t for signed inputs,
//     std::uint64_t for unsigned): accumulated in them, as PyTorch and NumPy sum int32.
// A size query (d_temp null) sizes the storage for every result type of T and Op, whatever d_out's
// type, so a null d_out of any type may be passed to it.
// Min and Max propagate NaN.
//
// Results are deterministic: the same input (at the same address modulo 16 bytes), op, device
// model and Options give the same bits on every call. Mode::Reproducible goes further for
// floating-point sums: the bits are the same on every GPU, for every max_blocks and at any
// address, and the sum is compensated (error within a few units in the last place of the
// result, see docs/reproducible.md); ops whose result is exact in any order (integers, Min, Max,
// bitwise ops, and in fastreduce/reduce.cuh the arg-extremes and the Linf norm) give it as they
// are, the L1 norm and the mean of floating-point inputs run on the sum's own kernels
// (fastreduce/stats.cuh), and the other rounded ops (a floating-point Prod, the variance, the L2
// norm, dot) are refused with cudaErrorNotSupported.
//
// Every other op (arg-extremes, mean, variance, norms, dot, users' own ops and transforms) takes
// the same calls and the same kernels through fastreduce/reduce.cuh and fastreduce/stats.cuh.
//
// Every GPU the library was compiled for runs every path it has code for: the Hopper-only paths
// (bulk copies, programmatic dependent launch) are chosen by the architecture the kernels were
// compiled for as well as by the device, and other GPUs take the generic ones.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fastreduce/axis.hpp"
#include "fastreduce/error.hpp"
#include "fastreduce/ops.cuh"

namespace fastreduce {

enum class Mode {
  Fast,          // one pass, deterministic for a given device model and Options
  Reproducible,  // float sums: same bits on any GPU, compensated accuracy; exact ops as they are
  Exact,         // float sums: the exact sum rounded once (and across GPUs: nccl.cuh); exact ops as they are
};

struct Options {
  Mode mode = Mode::Fast;
  unsigned max_blocks = 0;  // > 0 caps the grid, leaving SMs to other work; 0 sizes it from occupancy
  // A word of device memory that holds 0 (zero it once after allocating it, on the stream that
  // uses it or before it), outside d_temp and d_out. A fast-mode reduction to one result over
  // several blocks then finishes in its last block, one kernel launch instead of two, where that
  // saves time (up to 8 MB of input on sm_90, where calls are bound by their launches; 4 MB
  // elsewhere), and leaves the word 0 again when it completes; the result's bits are the same
  // either way. Reductions given the same word must not overlap: use one word per stream, and
  // remember that a captured graph keeps the word it was captured with (its replays must not
  // overlap each other or other calls on that word). The blocking calls and the Python package
  // keep one with their cached storage. Other routes (one block, larger inputs, reproducible and
  // exact sums, non-commutative ops, several outputs, the multi-GPU calls) leave it alone; the
  // 1-D reduce and axis reductions to one output check it (alignment, device memory). nullptr:
  // the blocks' partials are combined by a second kernel.
  unsigned* finish_counter = nullptr;
};

namespace detail {

template <std::size_t Size, bool Signed>
struct sized_integer;
template <> struct sized_integer<1, true> { using type = std::int8_t; };
template <> struct sized_integer<1, false> { using type = std::uint8_t; };
template <> struct sized_integer<2, true> { using type = std::int16_t; };
template <> struct sized_integer<2, false> { using type = std::uint16_t; };
template <> struct sized_integer<4, true> { using type = std::int32_t; };
template <> struct sized_integer<4, false> { using type = std::uint32_t; };
template <> struct sized_integer<8, true> { using type = std::int64_t; };
template <> struct sized_integer<8, false> { using type = std::uint64_t; };

// The type the library's kernels are compiled for that holds T's values: void if there is none.
template <class T>
struct storage {
  using type = void;
};
template <class T>
  requires std::integral<T> && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)
struct storage<T> {
  using type = typename sized_integer<sizeof(T), std::is_signed_v<T>>::type;
};
template <> struct storage<bool> { using type = bool; };
template <> struct storage<float> { using type = float; };
template <> struct storage<double> { using type = double; };
template <> struct storage<__half> { using type = __half; };
template <> struct storage<__nv_bfloat16> { using type = __nv_bfloat16; };

template <class T, class Op>
struct accumulator {
  using type = T;
};
template <class Op>
struct accumulator<__half, Op> {
  using type = float;
};
template <class Op>
struct accumulator<__nv_bfloat16, Op> {
  using type = float;
};
template <class T, class Op>
  requires std::integral<T> && (sizeof(T) < 4) && (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>)
struct accumulator<T, Op> {
  using type = std::int64_t;
};

}  // namespace detail

// The type the kernels read T as (std::int64_t for long long on Linux, std::int8_t for signed char, ...).
template <class T>
using storage_t = typename detail::storage<std::remove_cv_t<T>>::type;

// The type a reduction of T with Op accumulates in and returns.
template <class T, class Op>
using acc_t = typename detail::accumulator<T, Op>::type;

// The ops the library's kernels are compiled for.
template <class Op>
inline constexpr bool is_engine_op_v = std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod> || std::is_same_v<Op, Min> ||
                                       std::is_same_v<Op, Max> || is_bitwise_v<Op>;

// T is an input type: a floating-point type the kernels read, or an integer type of 1 to 8 bytes.
template <class T>
concept input_type = !std::is_void_v<storage_t<T>>;

// A reduction of T with Op the library can run (bitwise ops need an integer type).
template <class T, class Op>
concept reducible = input_type<T> && is_engine_op_v<Op> && op_applies_to<acc_t<T, Op>, Op>;

namespace detail {
// The entry points compiled into the library, for the storage types (src/engine/engine_*.cu).
template <class T, class Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out, std::size_t n,
                         Op op, cudaStream_t stream, const Options& opt);
template <class T, class Op>
acc_t<T, Op> reduce(cudaStream_t stream, const T* d_in, std::size_t n, Op op, const Options& opt);
template <class T, class Op>
cudaError_t reduce_async_narrow(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out, std::size_t n, Op op,
                                cudaStream_t stream, const Options& opt);
template <class T, class Op>
cudaError_t reduce_async_wide(void* d_temp, std::size_t& temp_bytes, const T* d_in,
                              std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>* d_out, std::size_t n,
                              Op op, cudaStream_t stream, const Options& opt);
}  // namespace detail

// A reduction of T with Op whose result may be written in T itself: half and bfloat16 inputs
// (accumulated in float, rounded once into T when the result is written).
template <class T, class Op>
concept narrow_result =
    reducible<T, Op> && (std::is_same_v<storage_t<T>, __half> || std::is_same_v<storage_t<T>, __nv_bfloat16>);

// The 8-byte integer a 4-byte integer type's sums and products may be accumulated in.
template <class T>
using wide_t = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;

// A reduction of T with Op whose result may be accumulated and written in wide_t<T>: Sum and Prod
// of 4-byte integers, W (the output's element type) an 8-byte integer of T's signedness.
template <class T, class Op, class W>
concept wide_result = reducible<T, Op> && std::integral<T> && sizeof(T) == 4 &&
                      (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>) && std::integral<W> &&
                      !std::is_const_v<W> && std::is_same_v<storage_t<W>, wide_t<storage_t<T>>>;

// Enqueues the reduction of d_in[0, n) with `op` into *d_out. Returns cudaSuccess or the error:
//   cudaErrorInvalidValue         d_in null with n > 0, d_out null, temp_bytes too small,
//                                 Options::mode not a Mode
//   cudaErrorInvalidDevicePointer d_in or d_out is host memory the device cannot reach
//   cudaErrorMisalignedAddress    d_in or d_out not aligned to its element type, d_temp not
//                                 16-byte aligned
//   cudaErrorNotSupported         Mode::Reproducible or Mode::Exact with Prod on a floating-point
//                                 type, or a reproducible or exact sum of 2^40 elements or more
//   cudaErrorNoKernelImageForDevice  the library was not compiled for this GPU
// Nothing is written to *d_out when an error is returned. n = 0 writes the op's identity.
template <class T, class Op = Sum>
  requires reducible<T, Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out, std::size_t n,
                         Op op = {}, cudaStream_t stream = 0, const Options& opt = {}) {
  using S = storage_t<T>;
  static_assert(sizeof(acc_t<T, Op>) == sizeof(acc_t<S, Op>));
  return detail::reduce_async<S, Op>(d_temp, temp_bytes, reinterpret_cast<const S*>(d_in),
                                     reinterpret_cast<acc_t<S, Op>*>(d_out), n, op, stream, opt);
}

// The same, with the result in the input's own type (__half or __nv_bfloat16): the float result
// rounded once to nearest even (Mode::Exact: the exact sum rounded once). d_out needs the
// alignment of T.
template <class T, class Op = Sum, class O>
  requires narrow_result<T, Op> && std::is_same_v<O, T>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, O* d_out, std::size_t n, Op op = {},
                         cudaStream_t stream = 0, const Options& opt = {}) {
  return detail::reduce_async_narrow<T, Op>(d_temp, temp_bytes, d_in, d_out, n, op, stream, opt);
}

// The same for 4-byte integers' Sum and Prod into 8-byte integers (std::int64_t for signed
// inputs, std::uint64_t for unsigned), accumulated in them.
template <class T, class Op = Sum, class W>
  requires wide_result<T, Op, W>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, W* d_out, std::size_t n, Op op = {},
                         cudaStream_t stream = 0, const Options& opt = {}) {
  using S = storage_t<T>;
  return detail::reduce_async_wide<S, Op>(d_temp, temp_bytes, reinterpret_cast<const S*>(d_in),
                                          reinterpret_cast<wide_t<S>*>(d_out), n, op, stream, opt);
}

// Same as reduce(), on `stream`.
template <class T, class Op = Sum>
  requires reducible<T, Op>
acc_t<T, Op> reduce_on(cudaStream_t stream, const T* d_in, std::size_t n, Op op = {}, const Options& opt = {}) {
  using S = storage_t<T>;
  return static_cast<acc_t<T, Op>>(detail::reduce<S, Op>(stream, reinterpret_cast<const S*>(d_in), n, op, opt));
}

// Blocking convenience: reduces on the current device's default stream and returns the result.
// Its temporary storage is cached per device and stream, so repeated calls do not allocate.
// Throws fastreduce::Error naming the bad argument or the failing CUDA call.
template <class T, class Op = Sum>
  requires reducible<T, Op>
acc_t<T, Op> reduce(const T* d_in, std::size_t n, Op op = {}, const Options& opt = {}) {
  return reduce_on<T, Op>(cudaStream_t{}, d_in, n, op, opt);
}

// ---------------------------------------------------------------------------------------------
// Axis and segmented reductions: see fastreduce/axis.hpp for the shape (struct Axis).

// The offset types of reduce_segments_async: 32- and 64-bit signed, 64-bit unsigned integers.
template <class Offset>
concept segment_offset = std::integral<Offset> && !std::is_same_v<Offset, bool> &&
                         ((sizeof(Offset) == 4 && std::is_signed_v<Offset>) || sizeof(Offset) == 8);

template <class Offset>
using offset_storage_t = typename detail::sized_integer<sizeof(Offset), std::is_signed_v<Offset>>::type;

namespace detail {
template <class T, class Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                              const Axis& axis, Op op, cudaStream_t stream, const Options& opt);
template <class T, class Op>
void reduce_axis(cudaStream_t stream, const T* d_in, acc_t<T, Op>* d_out, const Axis& axis, Op op,
                 const Options& opt);
template <class T, class Op, class Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                  cudaStream_t stream, const Options& opt);
template <class T, class Op>
cudaError_t reduce_axis_async_narrow(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out, const Axis& axis,
                                     Op op, cudaStream_t stream, const Options& opt);
template <class T, class Op>
void reduce_axis_narrow(cudaStream_t stream, const T* d_in, T* d_out, const Axis& axis, Op op, const Options& opt);
template <class T, class Op, class Offset>
cudaError_t reduce_segments_async_narrow(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out,
                                         std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                         cudaStream_t stream, const Options& opt);
template <class T, class Op>
cudaError_t reduce_axis_async_wide(void* d_temp, std::size_t& temp_bytes, const T* d_in, wide_t<T>* d_out,
                                   const Axis& axis, Op op, cudaStream_t stream, const Options& opt);
template <class T, class Op>
void reduce_axis_wide(cudaStream_t stream, const T* d_in, wide_t<T>* d_out, const Axis& axis, Op op, const Options& opt);
template <class T, class Op, class Offset>
cudaError_t reduce_segments_async_wide(void* d_temp, std::size_t& temp_bytes, const T* d_in, wide_t<T>* d_out,
                                       std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                       cudaStream_t stream, const Options& opt);
}  // namespace detail

// Enqueues the axis reduction (two-phase contract and errors as reduce_async; also
// cudaErrorInvalidValue for a shape whose element count or offsets overflow). length = 0 writes
// the op's identity to every output; outer * inner = 0 writes nothing. In Mode::Reproducible a
// floating-point sum's every output is bitwise equal to the 1-D reproducible reduce of its own
// elements alone: it does not depend on the other outputs, the shape, the strides, the GPU,
// max_blocks or the stream.
template <class T, class Op = Sum>
  requires reducible<T, Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out, Axis axis,
                              Op op = {}, cudaStream_t stream = 0, const Options& opt = {}) {
  using S = storage_t<T>;
  return detail::reduce_axis_async<S, Op>(d_temp, temp_bytes, reinterpret_cast<const S*>(d_in),
                                          reinterpret_cast<acc_t<S, Op>*>(d_out), axis, op, stream, opt);
}

// The same, with results in the input's own type (__half, __nv_bfloat16; see reduce_async).
template <class T, class Op = Sum, class O>
  requires narrow_result<T, Op> && std::is_same_v<O, T>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, O* d_out, Axis axis, Op op = {},
                              cudaStream_t stream = 0, const Options& opt = {}) {
  return detail::reduce_axis_async_narrow<T, Op>(d_temp, temp_bytes, d_in, d_out, axis, op, stream, opt);
}

// The same for 4-byte integers' Sum and Prod into 8-byte integers (see reduce_async).
template <class T, class Op = Sum, class W>
  requires wide_result<T, Op, W>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, W* d_out, Axis axis, Op op = {},
                              cudaStream_t stream = 0, const Options& opt = {}) {
  using S = storage_t<T>;
  return detail::reduce_axis_async_wide<S, Op>(d_temp, temp_bytes, reinterpret_cast<const S*>(d_in),
                                               reinterpret_cast<wide_t<S>*>(d_out), axis, op, stream, opt);
}

// Blocking: reduces on the default stream into d_out (device memory) and waits for it. Throws
// fastreduce::Error naming the bad argument or the failing CUDA call.
template <class T, class Op = Sum>
  requires reducible<T, Op>
void reduce_axis(const T* d_in, acc_t<T, Op>* d_out, Axis axis, Op op = {}, const Options& opt = {}) {
  using S = storage_t<T>;
  detail::reduce_axis<S, Op>(cudaStream_t{}, reinterpret_cast<const S*>(d_in), reinterpret_cast<acc_t<S, Op>*>(d_out),
                             axis, op, opt);
}
template <class T, class Op = Sum, class O>
  requires narrow_result<T, Op> && std::is_same_v<O, T>
void reduce_axis(const T* d_in, O* d_out, Axis axis, Op op = {}, const Options& opt = {}) {
  detail::reduce_axis_narrow<T, Op>(cudaStream_t{}, d_in, d_out, axis, op, opt);
}
template <class T, class Op = Sum, class W>
  requires wide_result<T, Op, W>
void reduce_axis(const T* d_in, W* d_out, Axis axis, Op op = {}, const Options& opt = {}) {
  using S = storage_t<T>;
  detail::reduce_axis_wide<S, Op>(cudaStream_t{}, reinterpret_cast<const S*>(d_in), reinterpret_cast<wide_t<S>*>(d_out),
                                  axis, op, opt);
}

// Enqueues d_out[s] = op over d_in[d_begin[s], d_end[s]) for s < num_segments (CUB's segmented
// reduce: device arrays of offsets; segments may overlap or leave gaps; d_end[s] <= d_begin[s] is
// an empty segment and gets the identity). Long and short segments are balanced over the GPU
// without a hint. Errors as reduce_axis_async. Offsets outside the input are not checked, nor is a
// null d_in (allowed when every segment is empty): like CUB, the offsets are device data.
template <class T, class Op = Sum, class Offset>
  requires reducible<T, Op> && segment_offset<Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op = {},
                                  cudaStream_t stream = 0, const Options& opt = {}) {
  using S = storage_t<T>;
  using O = offset_storage_t<Offset>;
  return detail::reduce_segments_async<S, Op, O>(d_temp, temp_bytes, reinterpret_cast<const S*>(d_in),
                                                 reinterpret_cast<acc_t<S, Op>*>(d_out), num_segments,
                                                 reinterpret_cast<const O*>(d_begin),
                                                 reinterpret_cast<const O*>(d_end), op, stream, opt);
}

// The same, with results in the input's own type (__half, __nv_bfloat16; see reduce_async).
template <class T, class Op = Sum, class Out, class Offset>
  requires narrow_result<T, Op> && std::is_same_v<Out, T> && segment_offset<Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, Out* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op = {},
                                  cudaStream_t stream = 0, const Options& opt = {}) {
  using O = offset_storage_t<Offset>;
  return detail::reduce_segments_async_narrow<T, Op, O>(d_temp, temp_bytes, d_in, d_out, num_segments,
                                                        reinterpret_cast<const O*>(d_begin),
                                                        reinterpret_cast<const O*>(d_end), op, stream, opt);
}

// The same for 4-byte integers' Sum and Prod into 8-byte integers (see reduce_async).
template <class T, class Op = Sum, class W, class Offset>
  requires wide_result<T, Op, W> && segment_offset<Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, W* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op = {},
                                  cudaStream_t stream = 0, const Options& opt = {}) {
  using S = storage_t<T>;
  using O = offset_storage_t<Offset>;
  return detail::reduce_segments_async_wide<S, Op, O>(d_temp, temp_bytes, reinterpret_cast<const S*>(d_in),
                                                      reinterpret_cast<wide_t<S>*>(d_out), num_segments,
                                                      reinterpret_cast<const O*>(d_begin),
                                                      reinterpret_cast<const O*>(d_end), op, stream, opt);
}

// Releases the cached temporary storage of reduce()/reduce_on() on every device. Call it when no
// blocking reduction is running (it frees device memory).
void release_cached_workspaces();

}  // namespace fastreduce
