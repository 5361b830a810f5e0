// 13 vs 12: asynchronous copies from global to shared memory (cp.async, sm_80+). Rung 12 keeps
// its loads in flight in registers: four 16-byte loads per thread, and the thread stalls at the
// first add until the first load returns. Here each thread keeps a ring of S 16-byte slots in
// shared memory: it starts the copies of its next S vectors (LDGSTS: global to shared without
// passing through registers), and each step waits only for the oldest copy
// (__pipeline_wait_prior(S - 1)), adds that slot, and reuses it for the copy S vectors ahead.
// A thread reads only the slots it filled itself, so no barrier is needed. The bytes in flight
// are the same as rung 12's (S = 4 vectors per thread; 2 at 1024 threads, for shared memory);
// what changes is where they wait and how many registers hold them. Before sm_80 the copies
// are synchronous (the compiler's fallback), and the rung is rung 12 with extra traffic.
#pragma once

#include <cuda_pipeline_primitives.h>

#include "fastreduce/ops.cuh"
#include "ladder/12_last_block_finish.cuh"

namespace fastreduce::ladder {

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block, kFullSmBlocks<Block>)
    async_copy_kernel(const T* in, T* out, std::size_t n, T* partials, unsigned* arrived, Op op) {
  constexpr unsigned S = Block <= 512 ? 4 : 2;  // 16 KiB at 256 threads, 32 KiB at 512 and 1024
  __shared__ Vec<T> ring[S][Block];
  const VectorBody<T> body = split_vectors(in, n);
  const std::size_t threads = std::size_t(gridDim.x) * Block;
  const std::size_t first = std::size_t(blockIdx.x) * Block + threadIdx.x;
  Vec<T>* const slot = &ring[0][threadIdx.x];  // slot s of this thread: slot[s * Block]
  std::size_t ahead = first;                   // the next vector to copy
#pragma unroll
  for (unsigned s = 0; s < S; ++s, ahead += threads) {
    if (ahead < body.count) __pipeline_memcpy_async(slot + s * Block, body.vectors + ahead, sizeof(Vec<T>));
    __pipeline_commit();  // one group per vector, empty past the end: the waits count groups
  }
  T value = edge_scalars(in, body, op);
  unsigned s = 0;
  for (std::size_t i = first; i < body.count; i += threads, ahead += threads) {
    __pipeline_wait_prior(S - 1);  // the oldest group (vector i) has landed
    value = op(value, vector_value(slot[s * Block], op));
    if (ahead < body.count) __pipeline_memcpy_async(slot + s * Block, body.vectors + ahead, sizeof(Vec<T>));
    __pipeline_commit();
    s = s + 1 == S ? 0 : s + 1;
  }
  __pipeline_wait_prior(0);  // nothing left in flight (every copy was consumed; this is hygiene)
  finish_in_last_block<Block>(value, partials, arrived, out, op);
}

template <unsigned Block, class T, class Op>
struct AsyncCopyKernel {
  static constexpr auto kernel = async_copy_kernel<Block, T, Op>;
};
using AsyncCopy = OneKernelLaunch<AsyncCopyKernel>;

}  // namespace fastreduce::ladder
