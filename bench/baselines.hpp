// The peers fastreduce is measured against, in the same process: NVIDIA CUB's DeviceReduce
// and thrust::reduce from the CUDA toolkit's CCCL.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "fastreduce/fastreduce.cuh"

namespace fastreduce::bench {

// cub::DeviceReduce with the same op (cub's two-phase temp-storage contract).
// Sum: DeviceReduce::Reduce with plus<A> and init 0; Max: DeviceReduce::Reduce with
// cuda::maximum<A> and init lowest. Built for float, double, int32 and bfloat16.
template <class T, class Op>
cudaError_t cub_reduce(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                       std::size_t n, cudaStream_t stream);

// thrust::reduce on `stream` (it synchronises and returns the value to the host).
template <class T, class Op>
acc_t<T, Op> thrust_reduce(const T* d_in, std::size_t n, cudaStream_t stream);

}  // namespace fastreduce::bench
