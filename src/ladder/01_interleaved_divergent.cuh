// 01: interleaved addressing with a divergent branch (lecture, Reduction #1).
// Each thread loads one element into shared memory; at stride s the threads whose index is a
// multiple of 2s add their neighbour. Correct, but `tid % (2*s)` keeps a few threads of every
// warp active, so each warp diverges at every level, and `%` is slow.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/rung_common.cuh"

namespace fastreduce::ladder {

template <class T, class Op>
__global__ void interleaved_divergent_kernel(const T* in, T* out, std::size_t n, Op op) {
  T* sdata = shared_slots<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + tid;
  sdata[tid] = i < n ? in[i] : Op::template identity<T>();
  __syncthreads();  // every element is in shared memory before the tree reads neighbours
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] = op(sdata[tid], sdata[tid + s]);
    __syncthreads();  // this level's sums are stored before the next level reads them
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct InterleavedDivergent {
  static constexpr unsigned items_per_thread = 1;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    interleaved_divergent_kernel<T, Op><<<grid, block, block * sizeof(T), stream>>>(in, out, n, Op{});
  }
};

}  // namespace fastreduce::ladder
