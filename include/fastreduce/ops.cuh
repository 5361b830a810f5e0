// Reduction operators shared by the ladder, the engine and the CPU references.
//
// Each op is a stateless functor usable on host and device, with an identity for every type
// it supports. Integer Sum and Prod wrap modulo 2^bits (computed in the unsigned type, so
// there is no signed-overflow undefined behaviour). Floating Min and Max propagate NaN:
// if either operand is NaN the result is NaN, as torch.min/torch.max do (CUB drops it).
#pragma once

#include <cuda_runtime.h>

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace fastreduce {

namespace detail {
template <class T>
__host__ __device__ constexpr T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class T>
__host__ __device__ constexpr T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Promote narrow unsigned types so the product is computed unsigned, never as int.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}
// The limits the ops' identities need, usable in device code without a compiler flag (and
// without CCCL, so that host compilers need nothing but the CUDA runtime headers).
template <class T>
__host__ __device__ constexpr T max_value() {
  if constexpr (std::is_same_v<T, bool>) return true;
  else if constexpr (std::is_unsigned_v<T>) return static_cast<T>(~T(0));
  else return static_cast<T>(static_cast<std::make_unsigned_t<T>>(~std::make_unsigned_t<T>(0)) >> 1);
}
template <class T>
__host__ __device__ constexpr T lowest_value() {
  if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) return T(0);
  else return static_cast<T>(-max_value<T>() - 1);
}
template <class T>
__host__ __device__ constexpr T infinity() {
  if constexpr (std::is_same_v<T, float>) return __builtin_huge_valf();
  else return static_cast<T>(__builtin_huge_val());
}

template <class T>
__host__ __device__ constexpr bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}
}  // namespace detail

struct Sum {
  static constexpr const char* name = "sum";
  template <class T>
  __host__ __device__ static constexpr T identity() { return T(0); }
  template <class T>
  __host__ __device__ constexpr T operator()(T a, T b) const { return detail::wrap_add(a, b); }
};

struct Prod {
  static constexpr const char* name = "prod";
  template <class T>
  __host__ __device__ static constexpr T identity() { return T(1); }
  template <class T>
  __host__ __device__ constexpr T operator()(T a, T b) const { return detail::wrap_mul(a, b); }
};

struct Min {
  static constexpr const char* name = "min";
  template <class T>
  __host__ __device__ static constexpr T identity() {
    if constexpr (std::is_floating_point_v<T>) return detail::infinity<T>();
    else return detail::max_value<T>();
  }
  // b wins when it is smaller or NaN; a NaN in `a` survives because both tests are false.
  template <class T>
  __host__ __device__ constexpr T operator()(T a, T b) const {
    return (b < a || detail::is_nan(b)) ? b : a;
  }
};

struct Max {
  static constexpr const char* name = "max";
  template <class T>
  __host__ __device__ static constexpr T identity() {
    if constexpr (std::is_floating_point_v<T>) return -detail::infinity<T>();
    else return detail::lowest_value<T>();
  }
  template <class T>
  __host__ __device__ constexpr T operator()(T a, T b) const {
    return (b > a || detail::is_nan(b)) ? b : a;
  }
};

struct BitAnd {
  static constexpr const char* name = "and";
  template <std::integral T>
  __host__ __device__ static constexpr T identity() {
    if constexpr (std::is_same_v<T, bool>) return true;
    else return static_cast<T>(~T(0));
  }
  template <std::integral T>
  __host__ __device__ constexpr T operator()(T a, T b) const { return static_cast<T>(a & b); }
};

struct BitOr {
  static constexpr const char* name = "or";
  template <std::integral T>
  __host__ __device__ static constexpr T identity() { return T(0); }
  template <std::integral T>
  __host__ __device__ constexpr T operator()(T a, T b) const { return static_cast<T>(a | b); }
};

struct BitXor {
  static constexpr const char* name = "xor";
  template <std::integral T>
  __host__ __device__ static constexpr T identity() { return T(0); }
  template <std::integral T>
  __host__ __device__ constexpr T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};

template <class Op>
inline constexpr bool is_bitwise_v =
    std::is_same_v<Op, BitAnd> || std::is_same_v<Op, BitOr> || std::is_same_v<Op, BitXor>;

// An op applies to an accumulator type when it is arithmetic, and integral for bitwise ops.
template <class A, class Op>
concept op_applies_to = std::is_arithmetic_v<A> && (!is_bitwise_v<Op> || std::is_integral_v<A>);

}  // namespace fastreduce
