// The peers fastreduce is measured against, in the same process: NVIDIA CUB's DeviceReduce
// and thrust::reduce from the CUDA toolkit's CCCL.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fastreduce/fastreduce.cuh"

namespace fastreduce::bench {

// cub::DeviceReduce with the same op (cub's two-phase temp-storage contract).
// Sum: DeviceReduce::Reduce with plus<A> and init 0; Max: DeviceReduce::Reduce with
// cuda::maximum<A> and init lowest. Built for float, double, int32 and bfloat16.
template <class T, class Op>
cudaError_t cub_reduce(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                       std::size_t n, cudaStream_t stream);

// cub::DeviceSegmentedReduce::Reduce with the same op over [d_begin[s], d_end[s]) (64-bit offsets).
template <class T, class Op>
cudaError_t cub_segmented_reduce(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                 std::size_t segments, const std::int64_t* d_begin, const std::int64_t* d_end,
                                 cudaStream_t stream);

// cub::DeviceReduce::Sum with T in and out (the ladder's reference row; two's-complement
// wrap for integers, like the ladder). Built for int32, uint32, int64, float and double.
template <class T>
cudaError_t cub_sum(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out, std::size_t n,
                    cudaStream_t stream);

// thrust::reduce on `stream` (it synchronises and returns the value to the host).
template <class T, class Op>
acc_t<T, Op> thrust_reduce(const T* d_in, std::size_t n, cudaStream_t stream);

// Temporary storage that serves CUB and fastreduce with each of `options` on n elements: one
// buffer the contenders of a measurement share.
template <class T, class Op>
std::size_t shared_temp_bytes(std::size_t n, const std::vector<Options>& options) {
  std::size_t bytes = 0;
  cub_reduce<T, Op>(nullptr, bytes, nullptr, nullptr, n, 0);
  for (const Options& opt : options) {
    std::size_t ours = 0;
    reduce_async<T, Op>(nullptr, ours, nullptr, nullptr, n, Op{}, 0, opt);
    bytes = std::max(bytes, ours);
  }
  return bytes;
}

}  // namespace fastreduce::bench
