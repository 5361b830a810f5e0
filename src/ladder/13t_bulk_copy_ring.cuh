// 13t vs 13: Hopper's tensor memory accelerator (TMA) does the copying. In rung 13 every thread
// still issues one LDGSTS per vector; here one thread per block issues a single bulk copy
// (cp.async.bulk) of a whole chunk, Block vectors (4 KiB at 256 threads), into a ring of S
// stages in shared memory, and the copy engine reports the bytes' arrival on the stage's
// mbarrier (arrive.expect_tx announces the byte count; the copy's completion flips the barrier's
// phase). The threads wait on the phase, add their vector of the stage, meet at a barrier, and
// thread 0 refills the stage with the chunk S steps ahead. Load instructions per element fall to
// almost none (the memory requests are made by the TMA unit, not by the threads), and the bytes
// in flight per block are S chunks (6 at up to 256 threads: 96 KiB per SM at 256 threads).
// sm_90 only; a build for an earlier architecture runs rung 12's loop instead.
#pragma once

#include <cuda/ptx>

#include <cstdint>

#include "fastreduce/ops.cuh"
#include "ladder/12_last_block_finish.cuh"

namespace fastreduce::ladder {

// Stages of Block vectors each: 6, fewer where 6 would exceed 40 KiB (512 and 1024 threads).
template <unsigned Block>
inline constexpr unsigned kRingStages = Block * 16 * 6 <= 40 * 1024 ? 6 : 40 * 1024 / (Block * 16);

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block, kFullSmBlocks<Block>)
    bulk_copy_ring_kernel(const T* in, T* out, std::size_t n, T* partials, unsigned* arrived, Op op) {
  const VectorBody<T> body = split_vectors(in, n);
  T value = edge_scalars(in, body, op);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace ptx = cuda::ptx;
  constexpr unsigned S = kRingStages<Block>;
  __shared__ __align__(128) Vec<T> ring[S][Block];
  __shared__ std::uint64_t full[S];
  const std::size_t chunks = (body.count + Block - 1) / Block;
  // Thread 0: announce the chunk's bytes on the stage's barrier, then start the bulk copy.
  const auto issue = [&](std::size_t chunk, unsigned stage) {
    const std::size_t vectors = body.count - chunk * Block < Block ? body.count - chunk * Block : Block;
    const auto bytes = static_cast<std::uint32_t>(vectors * sizeof(Vec<T>));
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[stage], bytes);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, &ring[stage][0], body.vectors + chunk * Block, bytes,
                       &full[stage]);
  };
  if (threadIdx.x == 0) {
    for (unsigned s = 0; s < S; ++s) ptx::mbarrier_init(&full[s], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);  // the copy engine sees initialised barriers
    for (unsigned s = 0; s < S; ++s) {
      if (blockIdx.x + std::size_t(s) * gridDim.x < chunks) issue(blockIdx.x + std::size_t(s) * gridDim.x, s);
    }
  }
  __syncthreads();  // the barriers are initialised before anyone waits on them
  unsigned stage = 0, phase = 0;
  for (std::size_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    while (!ptx::mbarrier_try_wait_parity(&full[stage], phase)) {
    }
    if (chunk * Block + threadIdx.x < body.count) value = op(value, vector_value(ring[stage][threadIdx.x], op));
    __syncthreads();  // every thread has read the stage before it is refilled
    const std::size_t next = chunk + std::size_t(S) * gridDim.x;
    if (threadIdx.x == 0 && next < chunks) issue(next, stage);
    if (++stage == S) {
      stage = 0;
      phase ^= 1;
    }
  }
#else
  value = op(value, grid_stride_vectors<Block>(body, op));
#endif
  finish_in_last_block<Block>(value, partials, arrived, out, op);
}

template <unsigned Block, class T, class Op>
struct BulkCopyRingKernel {
  static constexpr auto kernel = bulk_copy_ring_kernel<Block, T, Op>;
};
using BulkCopyRing = OneKernelLaunch<BulkCopyRingKernel>;

}  // namespace fastreduce::ladder
