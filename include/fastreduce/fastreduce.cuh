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
// Accumulators: integers reduce in their own type and wrap like CUB's; float and double in
// their own type; __half and __nv_bfloat16 are converted and accumulated as float, and the
// result is a float. Min and Max propagate NaN.
//
// Results are deterministic: the same input (at the same address modulo 16 bytes), op, device
// model and Options give the same bits on every call. Mode::Reproducible goes further for
// floating-point sums: the bits are the same on every GPU, for every max_blocks and at any
// address, and the sum is compensated (error within a few units in the last place of the
// result, see docs/reproducible.md).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fastreduce/error.hpp"
#include "fastreduce/ops.cuh"

namespace fastreduce {

enum class Mode {
  Fast,          // one pass, deterministic for a given device model and Options
  Reproducible,  // float sums: same bits on any GPU, compensated accuracy
};

struct Options {
  Mode mode = Mode::Fast;
  unsigned max_blocks = 0;  // > 0 caps the grid, leaving SMs to other work; 0 sizes it from occupancy
};

template <class T>
struct accumulator {
  using type = T;
};
template <>
struct accumulator<__half> {
  using type = float;
};
template <>
struct accumulator<__nv_bfloat16> {
  using type = float;
};

// The type a reduction of T with Op accumulates in and returns.
template <class T, class Op>
using acc_t = typename accumulator<T>::type;

// The input types the engine is built for.
template <class T>
inline constexpr bool is_supported_input_v =
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, __half> ||
    std::is_same_v<T, __nv_bfloat16>;

// Enqueues the reduction of d_in[0, n) with `op` into *d_out. Returns cudaSuccess or the error:
//   cudaErrorInvalidValue         d_in null with n > 0, d_out null, temp_bytes too small
//   cudaErrorInvalidDevicePointer d_in or d_out is host memory the device cannot reach
//   cudaErrorMisalignedAddress    d_in or d_out not aligned to its element type, d_temp not
//                                 16-byte aligned
//   cudaErrorNotSupported         Mode::Reproducible with Prod on a floating-point type
// Nothing is written to *d_out when an error is returned. n = 0 writes the op's identity.
template <class T, class Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in,
                         acc_t<T, Op>* d_out, std::size_t n, Op op, cudaStream_t stream = 0,
                         const Options& opt = {});

// Blocking convenience: reduces on the current device's default stream and returns the result.
// Its temporary storage is cached per device and stream, so repeated calls do not allocate.
// Throws fastreduce::Error naming the bad argument or the failing CUDA call.
template <class T, class Op = Sum>
acc_t<T, Op> reduce(const T* d_in, std::size_t n, Op op = {}, const Options& opt = {});

// Same as reduce(), on `stream`.
template <class T, class Op = Sum>
acc_t<T, Op> reduce_on(cudaStream_t stream, const T* d_in, std::size_t n, Op op = {},
                       const Options& opt = {});

// Releases the cached temporary storage of reduce()/reduce_on() on every device.
void release_cached_workspaces();

}  // namespace fastreduce
