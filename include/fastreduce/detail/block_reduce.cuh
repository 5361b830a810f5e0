// Block-level reduction with warp shuffles: each warp reduces in registers, warp 0 combines
// the per-warp partials. Used by the engine; the ladder keeps the seeds' shared-memory trees.
#pragma once

#include "fastreduce/detail/warp_reduce.cuh"

namespace fastreduce::primitives {

// Shared storage for block_reduce over Threads threads.
template <class T, unsigned Threads>
struct BlockReduceStorage {
  static_assert(Threads % kWarpSize == 0 && Threads <= 1024, "whole warps, at most 1024 threads");
  T warp_partials[Threads / kWarpSize];
};

// Returns the block's reduction in thread 0 (other threads get unspecified values). `op` combines
// two values, `identity` is its identity. The order is fixed by thread index, so the result is
// deterministic.
template <unsigned Threads, class T, class Op>
__device__ __forceinline__ T block_reduce(T value, Op op, BlockReduceStorage<T, Threads>& storage, const T& identity) {
  constexpr unsigned warps = Threads / kWarpSize;
  const unsigned lane = threadIdx.x % kWarpSize;
  const unsigned warp = threadIdx.x / kWarpSize;
  value = warp_reduce(value, op);
  if constexpr (warps == 1) {
    return value;
  } else {
    if (lane == 0) storage.warp_partials[warp] = value;
    __syncthreads();  // every warp's partial is in shared memory before warp 0 reads them
    if (warp == 0) {
      value = lane < warps ? storage.warp_partials[lane] : identity;
      value = warp_reduce(value, op);
    }
    return value;
  }
}

// The same for an op with a static identity (the built-in ops).
template <unsigned Threads, class T, class Op>
__device__ __forceinline__ T block_reduce(T value, Op op, BlockReduceStorage<T, Threads>& storage) {
  return block_reduce<Threads>(value, op, storage, Op::template identity<T>());
}

}  // namespace fastreduce::primitives
