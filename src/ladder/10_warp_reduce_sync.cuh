// 10 vs 9: the warp stage becomes one instruction. Since sm_80, __reduce_add_sync,
// __reduce_min_sync, __reduce_max_sync, __reduce_and_sync and __reduce_or_sync (PTX redux.sync)
// combine a 32-bit integer across the warp in hardware and hand the result to every lane: five
// shuffles and five adds become one. They exist for 32-bit integers only: int64, float and
// double (and every product) keep rung 9's shuffles, so for them this rung is rung 9, and the
// table shows it. A build for an architecture before sm_80 also takes the shuffles.
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/09_warp_shuffle.cuh"
#include "fastreduce/detail/warp_reduce.cuh"

namespace fastreduce::ladder {

struct ReduceSync {
  template <class T, class Op>
  __device__ __forceinline__ static T reduce(T value, Op op) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (primitives::has_redux_v<T, Op>) return primitives::redux<T, Op>(value);
#endif
    return ShuffleDown::reduce(value, op);
  }
};
using WarpReduceSync = WarpStageRung<ReduceSync>;

}  // namespace fastreduce::ladder
