// 09 vs 8f16: the same tile (16 elements a block apart per thread, bounds check hoisted), a new
// tree. Rungs 3-8 reduce a block through shared memory: every thread stores its value, and each
// of the log2(Block) steps reads two slots, writes one, and waits at a barrier (__syncthreads
// above 32 partials, __syncwarp below). Here a warp combines its 32 values in registers:
// __shfl_down_sync hands each lane the value of the lane `offset` above it, five steps
// (16, 8, 4, 2, 1) leave the warp's total in lane 0. Only the Block/32 warp totals go through
// shared memory, behind one barrier, and warp 0 combines them the same way. Per block: Block/32
// shared-memory stores instead of ~2 * Block accesses, one barrier instead of log2(Block) - 5.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/08_coarsened_load.cuh"

namespace fastreduce::ladder {

inline constexpr unsigned kFullWarp = 0xffffffffu;

// The warp stage of this rung: lane 0 gets the 32 lanes' values combined. (A lane whose partner
// would be above lane 31 gets its own value back; only lane 0's result is used.)
struct ShuffleDown {
  template <class T, class Op>
  __device__ __forceinline__ static T reduce(T value, Op op) {
#pragma unroll
    for (unsigned offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_down_sync(kFullWarp, value, offset));
    return value;
  }
};

// A block of Block threads combines one value per thread; thread 0 gets the result. WarpStage
// reduces within a warp (this rung's shuffles, rung 10's single instruction). The warp totals
// live in a static array of 32 slots: callers may use dynamic shared memory for something else.
// A second call in the same kernel must come after a __syncthreads() that follows the first.
template <unsigned Block, class WarpStage, class T, class Op>
__device__ __forceinline__ T block_reduce_by_warps(T value, Op op) {
  static_assert(Block % 32 == 0 && Block <= 1024, "whole warps, at most 1024 threads");
  __shared__ T warp_totals[32];
  value = WarpStage::reduce(value, op);
  if constexpr (Block > 32) {
    const unsigned lane = threadIdx.x % 32;
    const unsigned warp = threadIdx.x / 32;
    if (lane == 0) warp_totals[warp] = value;
    __syncthreads();  // every warp's total is stored before warp 0 reads them
    if (warp == 0) value = WarpStage::reduce(lane < Block / 32 ? warp_totals[lane] : Op::template identity<T>(), op);
  }
  return value;
}

template <unsigned Block, unsigned F, class WarpStage, class T, class Op>
__global__ void __launch_bounds__(Block) warp_stage_kernel(const T* in, T* out, std::size_t n, Op op) {
  const T total = block_reduce_by_warps<Block, WarpStage>(coarsened_tile<Block, F>(in, n, op), op);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// Rungs 9 and 10 differ only in the warp stage.
template <class WarpStage>
struct WarpStageRung {
  static constexpr unsigned items_per_thread = 16;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block, cudaStream_t stream) {
    with_block_size(block, [&]<unsigned B>() {
      warp_stage_kernel<B, items_per_thread, WarpStage, T, Op><<<grid, B, 0, stream>>>(in, out, n, Op{});
    });
  }
};
using WarpShuffle = WarpStageRung<ShuffleDown>;

}  // namespace fastreduce::ladder
