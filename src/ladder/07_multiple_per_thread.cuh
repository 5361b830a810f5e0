// 07 vs 06: a fixed grid (enough blocks to fill every SM) walks the input with a grid-stride
// loop, each thread accumulating many elements in a register before the tree (Harris #7,
// Brent's theorem: O(n/p) sequential work per thread, O(log p) tree). The tree and its
// barriers now run once per ~thousand elements instead of once per 2 * block.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/06_complete_unroll.cuh"

namespace fastreduce::ladder {

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block) multiple_per_thread_kernel(const T* in, T* out, std::size_t n, Op op) {
  T* sdata = shared_slots<T>();
  const unsigned tid = threadIdx.x;
  const std::size_t grid_stride = std::size_t(2 * Block) * gridDim.x;
  T value = Op::template identity<T>();
  for (std::size_t i = std::size_t(blockIdx.x) * (2 * Block) + tid; i < n; i += grid_stride) {
    value = op(value, in[i]);
    if (i + Block < n) value = op(value, in[i + Block]);
  }
  const T total = complete_unroll_tree<Block>(value, sdata, tid, op);
  if (tid == 0) out[blockIdx.x] = total;
}

struct MultiplePerThread {
  static constexpr unsigned items_per_thread = 2;  // per grid-stride step
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    with_block_size(block, [&]<unsigned B>() {
      multiple_per_thread_kernel<B, T, Op><<<grid, B, tail_shared_bytes(B, sizeof(T)), stream>>>(in, out, n, Op{});
    });
  }
};

}  // namespace fastreduce::ladder
