// 16-byte vectors of any element type: the load instructions the engine can use for them, the
// widening of an element to its accumulator, and the reduction of one vector's elements.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "primitives/load_hint.hpp"

namespace fastreduce::primitives {

template <class T>
inline constexpr unsigned kVecElems = 16 / sizeof(T);

template <class T>
struct alignas(16) Vec {
  T elem[kVecElems<T>];
};

template <LoadHint Hint, class T>
__device__ __forceinline__ Vec<T> load_vec(const Vec<T>* p) {
  int4 raw;
  if constexpr (Hint == LoadHint::StreamPrefetch) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0, %1, %2, %3}, [%4];"
        : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
        : "l"(p));
  } else {
    raw = __ldg(reinterpret_cast<const int4*>(p));
  }
  Vec<T> v;
  static_assert(sizeof(v) == sizeof(raw));
  __builtin_memcpy(&v, &raw, sizeof(v));
  return v;
}

template <class T>
__device__ __forceinline__ Vec<T> load_vec(const Vec<T>* p) {
  return load_vec<LoadHint::ReadOnly>(p);
}

// Input element to accumulator: half and bfloat16 widen to float, narrow integers to their
// (wider) accumulator, other types stay.
template <class A, class T>
__device__ __forceinline__ A to_acc(T x) {
  if constexpr (std::is_same_v<T, __half>) {
    return static_cast<A>(__half2float(x));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<A>(__bfloat162float(x));
  } else {
    return static_cast<A>(x);
  }
}

// One vector's elements combined pairwise (shorter chains than left to right), in accumulator A.
template <class A, class T, class Op>
__device__ __forceinline__ A reduce_vec(const Vec<T>& v, Op op) {
  A lanes[kVecElems<T>];
#pragma unroll
  for (unsigned k = 0; k < kVecElems<T>; ++k) lanes[k] = to_acc<A>(v.elem[k]);
#pragma unroll
  for (unsigned width = kVecElems<T> / 2; width > 0; width /= 2) {
#pragma unroll
    for (unsigned k = 0; k < width; ++k) lanes[k] = op(lanes[k], lanes[k + width]);
  }
  return lanes[0];
}

// Additions on the longest path through reduce_vec: log2 of the elements per vector.
template <class T>
inline constexpr unsigned kVecDepth = kVecElems<T> == 16 ? 4 : kVecElems<T> == 8 ? 3 : kVecElems<T> == 4 ? 2 : 1;

}  // namespace fastreduce::primitives
