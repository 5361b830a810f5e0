// The read-bound reference row: what reading the input costs. One pass with rung 11's tiles
// (16 elements per thread in 16-byte loads, one tile per block, the bounds check hoisted), each
// block's total combined straight into *out by an atomic in whatever order the blocks finish:
// no second level, no partials, no fixed combine order (so a float sum may differ in its last
// bits from run to run). A one-thread kernel first sets *out to the identity.
#pragma once

#include <cstdint>
#include <type_traits>

#include "fastreduce/ops.cuh"
#include <algorithm>

#include "ladder/11_vector_loads.cuh"
#include "fastreduce/detail/device_pointer.hpp"

namespace fastreduce::ladder {

// *address = op(*address, value), atomically: the hardware add where there is one, else a
// compare-and-swap loop on the value's bits.
template <class T, class Op>
__device__ __forceinline__ void atomic_combine(T* address, T value, Op op) {
  if constexpr (std::is_same_v<Op, Sum> && !std::is_same_v<T, std::int64_t>) {
    atomicAdd(address, value);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;
    static_assert(sizeof(T) == sizeof(Bits));
    Bits* word = reinterpret_cast<Bits*>(address);
    Bits seen = *reinterpret_cast<volatile Bits*>(word);
    for (;;) {
      T current;
      __builtin_memcpy(&current, &seen, sizeof(T));
      const T combined = op(current, value);
      Bits wanted;
      __builtin_memcpy(&wanted, &combined, sizeof(T));
      const Bits before = atomicCAS(word, seen, wanted);
      if (before == seen) return;
      seen = before;
    }
  }
}

template <class T, class Op>
__global__ void set_identity_kernel(T* out) {
  *out = Op::template identity<T>();
}

template <class T, class Op>
__global__ void __launch_bounds__(256) read_bound_kernel(const T* in, T* out, std::size_t n, Op op) {
  const T total = block_reduce_by_warps<256, ReduceSync>(vector_tile<256>(in, n, op), op);
  if (threadIdx.x == 0) atomic_combine(out, total, op);
}

template <class T, class Op>
cudaError_t read_bound(const T* in, T* out, std::size_t n, cudaStream_t stream) {
  if (out == nullptr || (n > 0 && in == nullptr)) return cudaErrorInvalidValue;
  if (n > 0) {
    if (cudaError_t e = primitives::check_device_pointer(in); e != cudaSuccess) return e;
  }
  if (cudaError_t e = primitives::check_device_pointer(out); e != cudaSuccess) return e;
  const std::size_t tile = std::size_t(256) * 16;
  const std::size_t grid = std::max<std::size_t>(1, n / tile + (n % tile != 0));
  if (grid > 2147483647u) return cudaErrorInvalidValue;  // 2^43 elements: not a case a GPU holds
  set_identity_kernel<T, Op><<<1, 1, 0, stream>>>(out);
  read_bound_kernel<T, Op><<<unsigned(grid), 256, 0, stream>>>(in, out, n, Op{});
  return cudaGetLastError();
}

}  // namespace fastreduce::ladder
