// 12c vs 12: the lecture's other way to stay in one kernel, the thread-group (cooperative
// groups) API: every block stores its partial and waits at grid.sync(), a barrier across the
// whole grid; then block 0 combines the partials. The barrier is legal only if every block of
// the grid is resident at once, so the kernel must be started by cudaLaunchCooperativeKernel,
// whose grid may not exceed what the device holds (the launch below sizes it so). That is the
// lecture's warning, "beware impact on block scheduling": the launch needs the whole device.
// While another kernel holds part of the GPU (a persistent kernel, an NCCL collective waiting
// for a peer), the grid cannot start until that kernel ends; rung 12 (and the engine, whose
// second kernel finishes the partials) runs on the SMs that are free. `fastreduce ladder
// --hold-sms` measures both.
#pragma once

#include <cooperative_groups.h>

#include <algorithm>

#include "fastreduce/ops.cuh"
#include "ladder/12_last_block_finish.cuh"

namespace fastreduce::ladder {

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block, kFullSmBlocks<Block>)
    grid_barrier_kernel(const T* in, T* out, std::size_t n, T* partials, Op op) {
  const T total = block_reduce_by_warps<Block, ReduceSync>(thread_share_of_vectors<Block>(in, n, op), op);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
  cooperative_groups::this_grid().sync();  // every block's partial is stored and visible
  if (blockIdx.x != 0) return;
  const T result = combine_partials<Block>(partials, op);
  if (threadIdx.x == 0) *out = result;
}

struct GridBarrier {
  static constexpr unsigned items_per_thread = 16;
  static constexpr bool one_kernel = true;
  template <class T, class Op>
  static cudaError_t launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block, T* partials,
                            unsigned* /*arrived: unused*/, cudaStream_t stream) {
    cudaError_t status = cudaSuccess;
    with_block_size(block, [&]<unsigned B>() {
      auto* kernel = grid_barrier_kernel<B, T, Op>;
      int device = 0, sms = 0, per_sm = 0;
      status = cudaGetDevice(&device);
      if (status == cudaSuccess) status = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
      if (status == cudaSuccess) status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, int(B), 0);
      if (status != cudaSuccess) return;
      // No more blocks than the device holds at once (fewer than planned only if it holds fewer).
      const unsigned resident = unsigned(std::max(per_sm, 1) * sms);
      unsigned blocks = std::min(grid, resident);
      Op op{};
      void* args[] = {&in, &out, &n, &partials, &op};
      status = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(B), args, 0, stream);
    });
    return status;
  }
};

}  // namespace fastreduce::ladder
