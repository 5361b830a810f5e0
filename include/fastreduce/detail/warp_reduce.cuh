// Warp-level reductions shared by the ladder (rungs 5-8) and the engine.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "fastreduce/ops.cuh"

namespace fastreduce::primitives {

inline constexpr unsigned kWarpSize = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

// 32-bit integer ops with a single-instruction warp reduction (redux.sync, sm_80+).
template <class T, class Op>
inline constexpr bool has_redux_v =
    (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t>) &&
    (std::is_same_v<Op, Sum> || std::is_same_v<Op, Min> || std::is_same_v<Op, Max> ||
     std::is_same_v<Op, BitAnd> || std::is_same_v<Op, BitOr> || std::is_same_v<Op, BitXor>);

template <class T, class Op>
__device__ __forceinline__ T redux(T value) {
  const auto bits = static_cast<std::uint32_t>(value);
  if constexpr (std::is_same_v<Op, Sum>) return static_cast<T>(__reduce_add_sync(kFullMask, bits));
  else if constexpr (std::is_same_v<Op, Min>) return __reduce_min_sync(kFullMask, value);
  else if constexpr (std::is_same_v<Op, Max>) return __reduce_max_sync(kFullMask, value);
  else if constexpr (std::is_same_v<Op, BitAnd>) return static_cast<T>(__reduce_and_sync(kFullMask, bits));
  else if constexpr (std::is_same_v<Op, BitOr>) return static_cast<T>(__reduce_or_sync(kFullMask, bits));
  else return static_cast<T>(__reduce_xor_sync(kFullMask, bits));
}

// A trivially copyable value moved word by word by `shfl` (a shuffle of one 32-bit word).
template <class T, class F>
__device__ __forceinline__ T shfl_words(const T& value, const F& shfl) {
  constexpr unsigned kWords = (sizeof(T) + 3) / 4;
  unsigned words[kWords] = {};
  __builtin_memcpy(words, &value, sizeof(T));
#pragma unroll
  for (unsigned i = 0; i < kWords; ++i) words[i] = shfl(words[i]);
  T out = value;
  __builtin_memcpy(&out, words, sizeof(T));
  return out;
}

// `first ? a : b`, word by word for a trivially copyable type: a select a word, where a
// conditional copy of a struct can go through local memory.
template <class T>
__device__ __forceinline__ T pick_words(bool first, const T& a, const T& b) {
  if constexpr (!std::is_trivially_copyable_v<T>) {
    return first ? a : b;
  } else {
    constexpr unsigned kWords = (sizeof(T) + 3) / 4;
    unsigned wa[kWords] = {}, wb[kWords] = {};
    __builtin_memcpy(wa, &a, sizeof(T));
    __builtin_memcpy(wb, &b, sizeof(T));
#pragma unroll
    for (unsigned i = 0; i < kWords; ++i) wa[i] = first ? wa[i] : wb[i];
    T out = a;
    __builtin_memcpy(&out, wa, sizeof(T));
    return out;
  }
}

// __shfl_xor_sync for any trivially copyable type: arithmetic types narrower than 32 bits (bool,
// 8- and 16-bit integers) travel in an int and come back unchanged; other types (half, structs
// such as an arg-extreme's value and index) travel word by word.
template <class T>
__device__ __forceinline__ T shfl_xor(T value, unsigned offset) {
  if constexpr (std::is_arithmetic_v<T> && sizeof(T) < 4) {
    return static_cast<T>(__shfl_xor_sync(kFullMask, static_cast<int>(value), offset));
  } else if constexpr (std::is_arithmetic_v<T>) {
    return __shfl_xor_sync(kFullMask, value, offset);
  } else {
    return shfl_words(value, [offset](unsigned w) { return __shfl_xor_sync(kFullMask, w, offset); });
  }
}

// __shfl_down_sync for any trivially copyable type, word by word.
template <class T>
__device__ __forceinline__ T shfl_down(const T& value, unsigned offset) {
  return shfl_words(value, [offset](unsigned w) { return __shfl_down_sync(kFullMask, w, offset); });
}

// __shfl_sync for any trivially copyable type, word by word: lane `src`'s value.
template <class T>
__device__ __forceinline__ T shfl_idx(const T& value, unsigned src) {
  return shfl_words(value, [src](unsigned w) { return __shfl_sync(kFullMask, w, src); });
}

// Butterfly reduction with register shuffles: every lane ends with the warp's result.
// The combine order is fixed (xor 16, 8, 4, 2, 1), so the result is deterministic.
// 32-bit integer ops use the sm_80+ __reduce_*_sync instructions instead. `op` is a built-in op or
// any callable that combines two values (engine/reduction.cuh: a reduction's combiner).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T value, Op op) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (has_redux_v<T, Op>) {
    return redux<T, Op>(value);
  } else
#endif
  {
    for (unsigned offset = kWarpSize / 2; offset > 0; offset /= 2) {
      value = op(value, shfl_xor(value, offset));  // partner lane's partial
    }
    return value;
  }
}

// The warp's values in lane order: lane 0 gets v[0] op v[1] op ... op v[31] (for ops that are
// associative but not commutative; other lanes get partial results).
template <class T, class Op>
__device__ __forceinline__ T warp_ordered(T v, const Op& op, unsigned lane) {
#pragma unroll
  for (unsigned offset = 1; offset < kWarpSize; offset *= 2) {
    const T other = shfl_down(v, offset);
    if (lane % (2 * offset) == 0) v = op(v, other);  // lane + offset holds the next run in order
  }
  return v;
}

// The last-warp unroll of seed 003, made correct for Volta and later.
//
// The seed writes `sdata[tid] += sdata[tid + s]` through a volatile pointer and relies on the
// 32 threads of a warp executing in lock-step. Since Volta, threads of a warp are scheduled
// independently: a lane may read sdata[tid + s] before its neighbour has stored that slot's
// value of the previous step, so the seed code races (compute-sanitizer racecheck reports it)
// and can return a wrong sum. Here every step reads into a register, then __syncwarp() orders
// all reads of the step before any write, and a second __syncwarp() orders the writes before
// the next step's reads. The idea is kept: no __syncthreads() and no `tid < s` branch in the
// last warp.
//
// Called by the 32 threads of warp 0 with sdata holding at least 2 * active valid entries
// (`active` = number of partials still to combine, a power of two from 1 to 32 is fine).
template <unsigned FirstStride, class T, class Op>
__device__ __forceinline__ T warp_tail_shared(volatile T* sdata, unsigned tid, Op op) {
  T value = sdata[tid];
#pragma unroll
  for (unsigned s = FirstStride; s > 0; s /= 2) {
    value = op(value, static_cast<T>(sdata[tid + s]));
    __syncwarp();  // every lane has read this step's partner before anyone overwrites it
    sdata[tid] = value;
    __syncwarp();  // this step's results are stored before the next step reads them
  }
  return value;
}

}  // namespace fastreduce::primitives
