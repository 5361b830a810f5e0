// 02 vs 01: the active threads are the lowest ones (index = 2*s*tid), so whole warps retire
// instead of every warp diverging (lecture, Reduction #2). The strided index now makes the
// threads of a warp hit the same shared-memory banks: 2-way conflicts at s = 1, more after.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/rung_common.cuh"

namespace fastreduce::ladder {

template <class T, class Op>
__global__ void interleaved_strided_kernel(const T* in, T* out, std::size_t n, Op op) {
  T* sdata = shared_slots<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + tid;
  sdata[tid] = i < n ? in[i] : Op::template identity<T>();
  __syncthreads();  // every element is in shared memory before the tree reads neighbours
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    const unsigned index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] = op(sdata[index], sdata[index + s]);
    __syncthreads();  // this level's sums are stored before the next level reads them
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct InterleavedStrided {
  static constexpr unsigned items_per_thread = 1;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    interleaved_strided_kernel<T, Op><<<grid, block, block * sizeof(T), stream>>>(in, out, n, Op{});
  }
};

}  // namespace fastreduce::ladder
