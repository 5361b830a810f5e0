// 03 vs 02: the stride starts at blockDim/2 and halves, so active threads stay contiguous:
// whole warps retire, and a warp's reads hit 32 distinct banks (lecture, Reduction #3).
// Left: in the first step half of the threads only load and then idle.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/rung_common.cuh"

namespace fastreduce::ladder {

// The reversed-loop shared-memory tree that rungs 3 and 4 share; the caller has stored its
// value in sdata[tid] and synchronised.
template <class T, class Op>
__device__ __forceinline__ void sequential_tree(T* sdata, unsigned tid, Op op) {
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (tid < s) sdata[tid] = op(sdata[tid], sdata[tid + s]);
    __syncthreads();  // this level's sums are stored before the next level reads them
  }
}

template <class T, class Op>
__global__ void sequential_addressing_kernel(const T* in, T* out, std::size_t n, Op op) {
  T* sdata = shared_slots<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + tid;
  sdata[tid] = i < n ? in[i] : Op::template identity<T>();
  __syncthreads();  // every element is in shared memory before the tree reads neighbours
  sequential_tree(sdata, tid, op);
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct SequentialAddressing {
  static constexpr unsigned items_per_thread = 1;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    sequential_addressing_kernel<T, Op><<<grid, block, block * sizeof(T), stream>>>(in, out, n, Op{});
  }
};

}  // namespace fastreduce::ladder
