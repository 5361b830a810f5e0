// 04 vs 03: each thread loads two elements a block apart and adds them before storing to
// shared memory (lecture #4, seeds 000-002): no thread idles in the first step, and half as
// many blocks cover the input. The `(i < n) ? x : identity` form keeps any n correct.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/03_sequential_addressing.cuh"

namespace fastreduce::ladder {

// Loads in[i] and in[i + stride] (identity past n) and combines them.
template <class T, class Op>
__device__ __forceinline__ T load_pair(const T* in, std::size_t n, std::size_t i,
                                       std::size_t stride, Op op) {
  const T a = i < n ? in[i] : Op::template identity<T>();
  const T b = i + stride < n ? in[i + stride] : Op::template identity<T>();
  return op(a, b);
}

template <class T, class Op>
__global__ void first_add_during_load_kernel(const T* in, T* out, std::size_t n, Op op) {
  T* sdata = shared_slots<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * (2 * blockDim.x) + tid;
  sdata[tid] = load_pair(in, n, i, blockDim.x, op);
  __syncthreads();  // every pair sum is in shared memory before the tree reads neighbours
  sequential_tree(sdata, tid, op);
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct FirstAddDuringLoad {
  static constexpr unsigned items_per_thread = 2;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    first_add_during_load_kernel<T, Op><<<grid, block, block * sizeof(T), stream>>>(in, out, n, Op{});
  }
};

}  // namespace fastreduce::ladder
