// Finishing a reduction over many blocks without any block waiting for another.
//
// The blocks of the main kernel each store one partial and exit. A second kernel of one block,
// enqueued right after it on the same stream, combines the partials in index order. No block
// ever waits for another block of its own grid, so the reduction makes progress on whatever SMs
// are free, whatever else runs on the GPU (a grid barrier would need every block resident at
// once, and deadlocks when another kernel holds SMs until something after the reduction). The
// partials are plain stores into the caller's temporary storage, read only after the main grid
// has completed: its contents before the call never matter, and nothing needs zeroing.
//
// On sm_90 the second kernel is launched with programmatic dependent launch: the GPU prepares
// it while the main grid runs, and wait_for_prior_grid() holds it until that grid has completed
// and its writes are visible. (Measured on an H100: the pair costs no more GPU time than the
// cooperative single kernel it replaced from 2^18 floats up; see docs/notes.md.)
#pragma once

#include <type_traits>

#include "fastreduce/detail/block_reduce.cuh"
#include "fastreduce/detail/reduction.cuh"

namespace fastreduce::primitives {

// In a kernel launched with programmatic dependent launch: waits until the grid before it on
// the stream has completed and its memory operations are visible. Without that launch attribute
// (or before sm_90, where this is compiled out and the attribute is never set) the stream has
// already ordered the two kernels.
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// A load served from L2 (data another grid wrote), for any trivially copyable type.
template <class A>
__device__ __forceinline__ A load_from_l2(const A* p) {
  if constexpr (std::is_same_v<A, bool>) {
    return __ldcg(reinterpret_cast<const unsigned char*>(p)) != 0;
  } else if constexpr (std::is_arithmetic_v<A>) {
    return __ldcg(p);
  } else if constexpr (sizeof(A) % 8 == 0 && alignof(A) >= 8) {
    unsigned long long words[sizeof(A) / 8];
#pragma unroll
    for (unsigned i = 0; i < sizeof(A) / 8; ++i) words[i] = __ldcg(reinterpret_cast<const unsigned long long*>(p) + i);
    A out;
    __builtin_memcpy(&out, words, sizeof(A));
    return out;
  } else if constexpr (sizeof(A) % 4 == 0 && alignof(A) >= 4) {
    unsigned words[sizeof(A) / 4];
#pragma unroll
    for (unsigned i = 0; i < sizeof(A) / 4; ++i) words[i] = __ldcg(reinterpret_cast<const unsigned*>(p) + i);
    A out;
    __builtin_memcpy(&out, words, sizeof(A));
    return out;
  } else {
    unsigned char bytes[sizeof(A)];
#pragma unroll
    for (unsigned i = 0; i < sizeof(A); ++i) bytes[i] = __ldcg(reinterpret_cast<const unsigned char*>(p) + i);
    A out;
    __builtin_memcpy(&out, bytes, sizeof(A));
    return out;
  }
}

// One block of Threads threads: out = project(partials[0] merge partials[1] merge ...) in a fixed
// order (thread t takes t, t + Threads, ...; then the block reduction), so the result is bitwise
// repeatable for a given count. Shared by the combine kernel and a main grid's last block (below),
// and compiled once (not inlined) so that both run the same instructions: the same bits either way.
template <unsigned Threads, class R>
__device__ __noinline__ void combine_partials(const typename R::Partial* partials, unsigned count,
                                              typename R::Out* out, const R& r) {
  using P = typename R::Partial;
  __shared__ BlockReduceStorage<P, Threads> storage;
  P acc = r.partial_identity();
  for (unsigned b = threadIdx.x; b < count; b += Threads) acc = r.merge(acc, load_from_l2(partials + b));  // other blocks wrote them
  const P total = block_reduce<Threads>(acc, engine::merger_of(r), storage, r.partial_identity());
  if (threadIdx.x == 0) engine::write_result(r, out, 0, total);
}

// The end of a main kernel: the block's threads reduce their values `acc` (of reduction r's unit
// `unit`); a grid of one block writes the result, a larger grid stores the block's partial. Then
// either combine_partials_kernel runs after the grid, or (SelfFinish) the grid finishes itself:
// each block counts itself on `counter` (a word that holds 0 before the grid starts), and the
// last one to arrive combines every partial and leaves the word 0 again (atomicInc wraps it), one
// launch in all. The last block waits for no one: the others have stored their partials and are
// done, so this holds whatever else runs on the GPU. Only the SelfFinish kernels carry the
// combine's code: linked into every kernel, it raised the registers of the heavier ones (the
// moments' from 32-36 to 40) and cost them resident blocks.
template <unsigned Threads, bool SelfFinish, class R>
__device__ __forceinline__ void store_block_result(const typename R::Acc& acc, const R& unit,
                                                   BlockReduceStorage<typename R::Acc, Threads>& storage,
                                                   typename R::Partial* partials, typename R::Out* out,
                                                   unsigned* counter) {
  const typename R::Acc block_total = block_reduce<Threads>(acc, engine::combiner_of(unit), storage, unit.identity());
  if constexpr (!SelfFinish) {
    if (threadIdx.x == 0) {
      if (gridDim.x == 1) engine::write_result(unit, out, 0, unit.partial(block_total));
      else partials[blockIdx.x] = unit.partial(block_total);
    }
  } else {
    if (gridDim.x == 1) {
      if (threadIdx.x == 0) engine::write_result(unit, out, 0, unit.partial(block_total));
      return;
    }
    __shared__ bool last;
    if (threadIdx.x == 0) {
      partials[blockIdx.x] = unit.partial(block_total);
      __threadfence();  // the partial is visible to the whole GPU before the block is counted
      last = atomicInc(counter, gridDim.x - 1) == gridDim.x - 1;
      if (last) __threadfence();  // ... and every counted block's partial is visible here
    }
    __syncthreads();
    if (last) combine_partials<Threads>(partials, gridDim.x, out, unit);
  }
}

// The combine kernel of a grid's partials (combine_partials above), launched after the main grid.
template <unsigned Threads, class R>
__global__ void __launch_bounds__(Threads) combine_partials_kernel(const typename R::Partial* partials, unsigned count,
                                                                   typename R::Out* out, R r) {
  wait_for_prior_grid();
  combine_partials<Threads>(partials, count, out, r);
}

}  // namespace fastreduce::primitives
