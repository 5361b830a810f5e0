// The engine's bulk path for large inputs on Hopper: the copy engine streams the input.
//
// Instead of every thread issuing 16-byte loads, one thread per block asks the bulk-copy unit
// (cp.async.bulk, sm_90) for whole stages of StageBytes contiguous bytes, `Stages` of them in
// flight, each completing on its own mbarrier; the block's threads add a stage from shared
// memory while the next ones arrive. Large sequential requests and no load instructions in
// the threads. The block partials combine as the load path's do (primitives/grid_finish.cuh), so
// results stay deterministic. Bulk copies need sm_90: the kernel compiled for an older
// architecture traps, and the dispatch takes this path only where the kernel's code was compiled
// for sm_90 or later (launch.cuh: KernelFacts::ptx_version).
#pragma once

#include <cstdint>

#include "fastreduce/detail/block_reduce.cuh"
#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/detail/vector.cuh"

namespace fastreduce::engine {

template <class R>
struct BulkArgs {
  const typename R::Input* in;
  std::size_t n;
  std::size_t head;           // elements before the first 16-byte boundary (block 0 adds them)
  std::size_t stages;         // whole stages in the body after the head
  std::size_t stages_per_block;
  std::size_t tail_begin;     // first element after the last whole stage (the last block adds the rest)
  typename R::Partial* partials;
  typename R::Out* out;
};

namespace bulk {

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void barrier_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(count));
}
__device__ __forceinline__ void expect_and_copy(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          shared_address(dst)),
      "l"(src), "r"(bytes), "r"(shared_address(bar))
      : "memory");
}
__device__ __forceinline__ void wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}
// Orders this thread's earlier shared-memory accesses before later async-proxy (copy) writes.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

}  // namespace bulk

template <unsigned Threads, unsigned Stages, unsigned StageBytes, class R>
__global__ void __launch_bounds__(Threads) bulk_reduce_kernel(BulkArgs<R> args, R red) {
  static_assert(!two_inputs_v<R>, "bulk copies stream one input");
  using T = typename R::Input;
  using State = typename R::State;
  using Acc = typename R::Acc;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // the dispatch takes this path only for code compiled for sm_90 or later
#else
  constexpr unsigned V = primitives::kVecElems<T>;
  static_assert(V * sizeof(T) == 16, "bulk copies serve the types that fill 16-byte vectors");
  constexpr unsigned vectors_per_stage = StageBytes / 16;
  constexpr unsigned per_thread = vectors_per_stage / Threads;
  constexpr unsigned F = R::folds < per_thread ? R::folds : per_thread;
  static_assert(vectors_per_stage % Threads == 0, "each thread takes whole vectors of a stage");
  static_assert(per_thread % F == 0, "each state takes whole rounds of vectors");
  extern __shared__ __align__(128) unsigned char stage_memory[];
  __shared__ std::uint64_t full[Stages];
  __shared__ primitives::BlockReduceStorage<Acc, Threads> storage;
  using primitives::Vec;
  const unsigned tid = threadIdx.x;
  const unsigned char* body = reinterpret_cast<const unsigned char*>(args.in + args.head);
  const std::size_t first = std::size_t(blockIdx.x) * args.stages_per_block;
  const std::size_t last = first + args.stages_per_block < args.stages ? first + args.stages_per_block : args.stages;
  const std::size_t count = first < last ? last - first : 0;
  constexpr std::size_t kStageElems = StageBytes / sizeof(T);
  const std::size_t unit_first = blockIdx.x == 0 ? 0 : args.head + first * kStageElems;
  const R r = red.at(args.n == 0 ? nullptr : args.in + (unit_first < args.n ? unit_first : args.n - 1));

  if (tid == 0) {
    for (unsigned s = 0; s < Stages; ++s) bulk::barrier_init(&full[s], 1);
    bulk::fence_async_shared();  // the barriers' initialisation is visible to the copy unit
    for (unsigned s = 0; s < Stages && s < count; ++s) {
      bulk::expect_and_copy(stage_memory + s * StageBytes, body + (first + s) * StageBytes, StageBytes, &full[s]);
    }
  }
  __syncthreads();  // barriers initialised before anyone waits on them

  State st[F];
#pragma unroll
  for (unsigned f = 0; f < F; ++f) st[f] = r.start();
  for (std::size_t k = 0; k < count; ++k) {
    const unsigned s = static_cast<unsigned>(k % Stages);
    bulk::wait(&full[s], static_cast<unsigned>((k / Stages) & 1));  // stage k has landed
    const Vec<T>* stage = reinterpret_cast<const Vec<T>*>(stage_memory + s * StageBytes);
    const std::size_t stage_first = args.head + (first + k) * kStageElems;
#pragma unroll
    for (unsigned j = 0; j < per_thread; ++j) {
      st[j % F] = r.fold_vec(st[j % F], stage[j * Threads + tid], stage_first + std::size_t(j * Threads + tid) * V);
    }
    __syncthreads();  // every thread is done with stage s before it is refilled
    if (tid == 0 && k + Stages < count) {
      bulk::fence_async_shared();  // the reads above happen before the copy unit overwrites
      bulk::expect_and_copy(stage_memory + s * StageBytes, body + (first + k + Stages) * StageBytes, StageBytes, &full[s]);
    }
  }
  if (blockIdx.x == 0) {  // unaligned head, element by element
    for (std::size_t e = tid; e < args.head; e += Threads) st[0] = r.fold(st[0], args.in[e], e);
  }
  if (blockIdx.x == gridDim.x - 1) {  // whatever follows the last whole stage
    for (std::size_t e = args.tail_begin + tid; e < args.n; e += Threads) st[0] = r.fold(st[0], args.in[e], e);
  }

  Acc acc = r.value(st[0]);
#pragma unroll
  for (unsigned f = 1; f < F; ++f) acc = r.combine(acc, r.value(st[f]));
  primitives::store_block_result<Threads, false>(acc, r, storage, args.partials, args.out, nullptr);
#endif
}

}  // namespace fastreduce::engine
