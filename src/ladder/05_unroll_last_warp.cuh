// 05 vs 04: once 32 or fewer partials remain, a single warp finishes without __syncthreads()
// and without the `tid < s` test (seed 003, Harris #5): the last six steps lose their barrier
// and loop overhead. The seed's version relies on lock-step warps through a volatile pointer,
// which is a race since Volta; primitives::warp_tail_shared keeps the idea with __syncwarp()
// (its comment says why).
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/04_first_add_during_load.cuh"
#include "fastreduce/detail/warp_reduce.cuh"

namespace fastreduce::ladder {

// A 32-thread block has no slots 32..63 for the tail to read: fill them with the identity.
template <class T, class Op>
__device__ __forceinline__ void pad_small_block(T* sdata, unsigned tid, unsigned block) {
  if (block < 64) sdata[tid + block] = Op::template identity<T>();
}

template <class T, class Op>
__global__ void unroll_last_warp_kernel(const T* in, T* out, std::size_t n, Op op) {
  T* sdata = shared_slots<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * (2 * blockDim.x) + tid;
  sdata[tid] = load_pair(in, n, i, blockDim.x, op);
  pad_small_block<T, Op>(sdata, tid, blockDim.x);
  __syncthreads();  // every pair sum is in shared memory before the tree reads neighbours
  for (unsigned s = blockDim.x / 2; s > 32; s /= 2) {
    if (tid < s) sdata[tid] = op(sdata[tid], sdata[tid + s]);
    __syncthreads();  // this level's sums are stored before the next level reads them
  }
  if (tid < 32) {
    const T total = primitives::warp_tail_shared<32>(sdata, tid, op);
    if (tid == 0) out[blockIdx.x] = total;
  }
}

struct UnrollLastWarp {
  static constexpr unsigned items_per_thread = 2;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    unroll_last_warp_kernel<T, Op>
        <<<grid, block, tail_shared_bytes(block, sizeof(T)), stream>>>(in, out, n, Op{});
  }
};

}  // namespace fastreduce::ladder
