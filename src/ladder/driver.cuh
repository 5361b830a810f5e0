// The lecture's multi-level host driver: the same kernel reapplied to the partials until one
// value remains. Unlike the lecture's code, each level is launched with its own length (not
// the original n), and a level wider than the device's grid limit is split into launches.
#pragma once

#include <algorithm>
#include <string_view>
#include <type_traits>

#include "fastreduce/ops.cuh"
#include "ladder/01_interleaved_divergent.cuh"
#include "ladder/02_interleaved_strided.cuh"
#include "ladder/03_sequential_addressing.cuh"
#include "ladder/04_first_add_during_load.cuh"
#include "ladder/05_unroll_last_warp.cuh"
#include "ladder/06_complete_unroll.cuh"
#include "ladder/07_multiple_per_thread.cuh"
#include "ladder/08_coarsened_load.cuh"
#include "ladder/09_warp_shuffle.cuh"
#include "ladder/10_warp_reduce_sync.cuh"
#include "ladder/11_vector_loads.cuh"
#include "ladder/12_last_block_finish.cuh"
#include "ladder/12c_grid_barrier.cuh"
#include "ladder/13_async_copy.cuh"
#include "ladder/13t_bulk_copy_ring.cuh"
#include "ladder/14_tensor_core_sum.cuh"
#include "fastreduce/ladder.hpp"
#include "fastreduce/detail/device_pointer.hpp"

namespace fastreduce::ladder {

// Calls f(RungKernel{}) with the struct that launches this rung.
template <class F>
void with_rung(const Rung& rung, F&& f) {
  switch (rung.number) {
    case 1: f(InterleavedDivergent{}); break;
    case 2: f(InterleavedStrided{}); break;
    case 3: f(SequentialAddressing{}); break;
    case 4: f(FirstAddDuringLoad{}); break;
    case 5: f(UnrollLastWarp{}); break;
    case 6: f(CompleteUnroll{}); break;
    case 7: f(MultiplePerThread{}); break;
    case 8:
      switch (rung.items_per_thread) {
        case 4: f(CoarsenedLoad<4>{}); break;
        case 8: f(CoarsenedLoad<8>{}); break;
        case 16: f(CoarsenedLoad<16>{}); break;
        case 32: f(CoarsenedLoad<32>{}); break;
        case 64: f(CoarsenedLoad<64>{}); break;
        default: break;
      }
      break;
    case 9: f(WarpShuffle{}); break;
    case 10: f(WarpReduceSync{}); break;
    case 11: f(VectorLoads{}); break;
    case 12:
      if (std::string_view(rung.id) == "12c") f(GridBarrier{});
      else f(LastBlockFinish{});
      break;
    case 13:
      if (std::string_view(rung.id) == "13t") f(BulkCopyRing{});
      else f(AsyncCopy{});
      break;
    case 14: f(TensorCoreSum{}); break;
    default: break;
  }
}

// A rung whose grid finishes the reduction itself (one launch, the partials in the workspace).
template <class Kernel>
concept OneKernelRung = Kernel::one_kernel;

template <class T, class Op>
cudaError_t run(const Rung& rung, const T* in, T* out, std::size_t n, unsigned block,
                Workspace& workspace, cudaStream_t stream, const Limits& limits) {
  static_assert(op_applies_to<T, Op>, "bitwise ops need an integer type");
  if (!valid_block(block) || out == nullptr || (n > 0 && in == nullptr)) return cudaErrorInvalidValue;
  if (n > 0) {
    if (cudaError_t e = primitives::check_device_pointer(in); e != cudaSuccess) return e;
  }
  if (cudaError_t e = primitives::check_device_pointer(out); e != cudaSuccess) return e;

  const std::vector<Level> levels = plan_for(rung, n, block, limits);
  if (rung.one_kernel) {
    unsigned* arrived = nullptr;
    if (cudaError_t e = workspace.reserve(levels[0].grid * sizeof(T)); e != cudaSuccess) return e;
    if (cudaError_t e = workspace.counter(&arrived); e != cudaSuccess) return e;
    cudaError_t status = cudaErrorInvalidValue;
    with_rung(rung, [&](auto kernel) {
      if constexpr (OneKernelRung<decltype(kernel)>) {
        status = kernel.template launch<T, Op>(in, out, n, static_cast<unsigned>(levels[0].grid), block,
                                               static_cast<T*>(workspace.data()), arrived, stream);
      }
    });
    return status;
  }
  if (cudaError_t e = workspace.reserve(workspace_bytes(levels, sizeof(T))); e != cudaSuccess) return e;
  T* const buffers[2] = {static_cast<T*>(workspace.data()),
                         static_cast<T*>(workspace.data()) + (levels.size() > 1 ? levels[0].grid : 0)};
  const std::size_t items_per_block = std::size_t(block) * rung.items_per_thread;
  const std::size_t max_grid = std::max<std::size_t>(limits.max_grid_x, 1);

  const T* level_in = in;
  for (std::size_t l = 0; l < levels.size(); ++l) {
    const Level& level = levels[l];
    T* level_out = l + 1 == levels.size() ? out : buffers[l % 2];
    with_rung(rung, [&](auto kernel) {
      if constexpr (!OneKernelRung<decltype(kernel)>) {  // (one-kernel rungs returned above)
        if (rung.grid_stride || level.grid <= max_grid) {
          kernel.template launch<T, Op>(level_in, level_out, level.length,
                                        static_cast<unsigned>(level.grid), block, stream);
          return;
        }
        // Wider than one launch may be: consecutive chunks of max_grid tiles each.
        for (std::size_t first = 0; first < level.grid; first += max_grid) {
          const std::size_t blocks = std::min(max_grid, level.grid - first);
          const std::size_t offset = first * items_per_block;
          kernel.template launch<T, Op>(level_in + offset, level_out + first,
                                        std::min(level.length - offset, blocks * items_per_block),
                                        static_cast<unsigned>(blocks), block, stream);
        }
      }
    });
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    level_in = level_out;
  }
  return cudaSuccess;
}

}  // namespace fastreduce::ladder
