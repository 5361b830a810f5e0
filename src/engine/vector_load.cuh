// 16-byte vectors of any element type, loaded through the read-only path.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace fastreduce::engine {

template <class T>
inline constexpr unsigned kVecElems = 16 / sizeof(T);

template <class T>
struct alignas(16) Vec {
  T elem[kVecElems<T>];
};

template <class T>
__device__ __forceinline__ Vec<T> load_vec(const Vec<T>* p) {
  const int4 raw = __ldg(reinterpret_cast<const int4*>(p));
  Vec<T> v;
  static_assert(sizeof(v) == sizeof(raw));
  __builtin_memcpy(&v, &raw, sizeof(v));
  return v;
}

// Input element to accumulator: half and bfloat16 widen to float, other types stay.
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

}  // namespace fastreduce::engine
