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

#include "fastreduce/fastreduce.cuh"
#include "primitives/block_reduce.cuh"
#include "primitives/grid_finish.cuh"
#include "primitives/vector.cuh"

namespace fastreduce::engine {

template <class T, class A>
struct BulkArgs {
  const T* in;
  std::size_t n;
  std::size_t head;           // elements before the first 16-byte boundary (block 0 adds them)
  std::size_t stages;         // whole stages in the body after the head
  std::size_t stages_per_block;
  std::size_t tail_begin;     // first element after the last whole stage (the last block adds the rest)
  A* partials;
  A* out;
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

template <unsigned Threads, unsigned Stages, unsigned StageBytes, class T, class Op>
__global__ void __launch_bounds__(Threads) bulk_reduce_kernel(BulkArgs<T, acc_t<T, Op>> args, Op op) {
  using A = acc_t<T, Op>;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // the dispatch takes this path only for code compiled for sm_90 or later
#else
  constexpr unsigned vectors_per_stage = StageBytes / 16;
  static_assert(vectors_per_stage % Threads == 0, "each thread takes whole vectors of a stage");
  extern __shared__ __align__(128) unsigned char stage_memory[];
  __shared__ std::uint64_t full[Stages];
  __shared__ primitives::BlockReduceStorage<A, Threads> storage;
  using primitives::reduce_vec;
  using primitives::to_acc;
  using primitives::Vec;
  const unsigned tid = threadIdx.x;
  const unsigned char* body = reinterpret_cast<const unsigned char*>(args.in + args.head);
  const std::size_t first = std::size_t(blockIdx.x) * args.stages_per_block;
  const std::size_t last = first + args.stages_per_block < args.stages ? first + args.stages_per_block : args.stages;
  const std::size_t count = first < last ? last - first : 0;

  if (tid == 0) {
    for (unsigned s = 0; s < Stages; ++s) bulk::barrier_init(&full[s], 1);
    bulk::fence_async_shared();  // the barriers' initialisation is visible to the copy unit
    for (unsigned s = 0; s < Stages && s < count; ++s) {
      bulk::expect_and_copy(stage_memory + s * StageBytes, body + (first + s) * StageBytes, StageBytes, &full[s]);
    }
  }
  __syncthreads();  // barriers initialised before anyone waits on them

  A acc = Op::template identity<A>();
  for (std::size_t k = 0; k < count; ++k) {
    const unsigned s = static_cast<unsigned>(k % Stages);
    bulk::wait(&full[s], static_cast<unsigned>((k / Stages) & 1));  // stage k has landed
    const Vec<T>* stage = reinterpret_cast<const Vec<T>*>(stage_memory + s * StageBytes);
#pragma unroll
    for (unsigned j = 0; j < vectors_per_stage / Threads; ++j) acc = op(acc, reduce_vec<A>(stage[j * Threads + tid], op));
    __syncthreads();  // every thread is done with stage s before it is refilled
    if (tid == 0 && k + Stages < count) {
      bulk::fence_async_shared();  // the reads above happen before the copy unit overwrites
      bulk::expect_and_copy(stage_memory + s * StageBytes, body + (first + k + Stages) * StageBytes, StageBytes, &full[s]);
    }
  }
  if (blockIdx.x == 0) {  // unaligned head, element by element
    for (std::size_t e = tid; e < args.head; e += Threads) acc = op(acc, to_acc<A>(args.in[e]));
  }
  if (blockIdx.x == gridDim.x - 1) {  // whatever follows the last whole stage
    for (std::size_t e = args.tail_begin + tid; e < args.n; e += Threads) acc = op(acc, to_acc<A>(args.in[e]));
  }

  primitives::store_block_result<Threads>(acc, op, storage, args.partials, args.out);
#endif
}

}  // namespace fastreduce::engine
