// 08 vs 07: back to one tile per block, but each thread first adds F elements a block apart
// (the lecture's reduce5-reduce9, F = 4 ... 64), written as one unrolled loop. The bounds
// check is hoisted: a block whose whole tile lies inside n loads with no test at all, so the
// compiler issues all F loads before the first add (F loads in flight per thread); only the
// last block tests each index. No grid-stride loop-carried index, no per-element branch.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/06_complete_unroll.cuh"

namespace fastreduce::ladder {

// The F elements of this thread in its block's tile, combined (shared with rungs 9 and 10).
template <unsigned Block, unsigned F, class T, class Op>
__device__ __forceinline__ T coarsened_tile(const T* in, std::size_t n, Op op) {
  const unsigned tid = threadIdx.x;
  const std::size_t tile_begin = std::size_t(blockIdx.x) * (std::size_t(Block) * F);
  const T* tile = in + tile_begin + tid;
  T value = Op::template identity<T>();
  if (tile_begin + std::size_t(Block) * F <= n) {
#pragma unroll
    for (unsigned k = 0; k < F; ++k) value = op(value, tile[k * Block]);
  } else {
#pragma unroll
    for (unsigned k = 0; k < F; ++k) {
      if (tile_begin + tid + std::size_t(k) * Block < n) value = op(value, tile[k * Block]);
    }
  }
  return value;
}

template <unsigned Block, unsigned F, class T, class Op>
__global__ void __launch_bounds__(Block) coarsened_load_kernel(const T* in, T* out, std::size_t n, Op op) {
  const T total = complete_unroll_tree<Block>(coarsened_tile<Block, F>(in, n, op), shared_slots<T>(), threadIdx.x, op);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

template <unsigned F>
struct CoarsenedLoad {
  static constexpr unsigned items_per_thread = F;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block,
                     cudaStream_t stream) {
    with_block_size(block, [&]<unsigned B>() {
      coarsened_load_kernel<B, F, T, Op><<<grid, B, tail_shared_bytes(B, sizeof(T)), stream>>>(in, out, n, Op{});
    });
  }
};

}  // namespace fastreduce::ladder
