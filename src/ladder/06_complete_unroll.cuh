// 06 vs 05: the block size becomes a template parameter, so the whole tree is unrolled at
// compile time (Harris #6): no loop counter, no stride arithmetic, and the `tid < s` tests for
// strides the block cannot have disappear. The running value also stays in a register, so
// each step reads one slot from shared memory instead of two.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/05_unroll_last_warp.cuh"

namespace fastreduce::ladder {

// The unrolled tree over Block threads, shared by rungs 6, 7 and 8. Each thread passes its
// value; thread 0 gets the block's result.
template <unsigned Block, class T, class Op>
__device__ __forceinline__ T complete_unroll_tree(T value, T* sdata, unsigned tid, Op op) {
  sdata[tid] = value;
  pad_small_block<T, Op>(sdata, tid, Block);
  __syncthreads();  // every thread's value is in shared memory before the tree reads it
#pragma unroll
  for (unsigned s = Block / 2; s > 32; s /= 2) {
    if (tid < s) sdata[tid] = value = op(value, sdata[tid + s]);
    __syncthreads();  // this level's sums are stored before the next level reads them
  }
  if (tid < 32) value = primitives::warp_tail_shared<32>(sdata, tid, op);
  return value;
}

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block) complete_unroll_kernel(const T* in, T* out, std::size_t n, Op op) {
  T* sdata = shared_slots<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t i = std::size_t(blockIdx.x) * (2 * Block) + tid;
  const T total = complete_unroll_tree<Block>(load_pair(in, n, i, Block, op), sdata, tid, op);
  if (tid == 0) out[blockIdx.x] = total;
}

// Calls f.template operator()<B>() with the compile-time block size equal to `block`.
template <class F>
void with_block_size(unsigned block, F&& f) {
  switch (block) {
    case 32: f.template operator()<32>(); break;
    case 64: f.template operator()<64>(); break;
    case 128: f.template operator()<128>(); break;
    case 256: f.template operator()<256>(); break;
    case 512: f.template operator()<512>(); break;
    case 1024: f.template operator()<1024>(); break;
    default: break;  // the driver validated the block size
  }
}

struct CompleteUnroll {
  static constexpr unsigned items_per_thread = 2;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    with_block_size(block, [&]<unsigned B>() {
      complete_unroll_kernel<B, T, Op><<<grid, B, tail_shared_bytes(B, sizeof(T)), stream>>>(in, out, n, Op{});
    });
  }
};

}  // namespace fastreduce::ladder
