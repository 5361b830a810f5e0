// Reduction operators shared by the ladder, the engine and the CPU references.
//
// Each op is a stateless functor usable on host and device, with an identity for every type
// it supports. Integer Sum and Prod wrap modulo 2^bits (computed in the unsigned type, so
// there is no signed-overflow undefined behaviour). Floating Min and Max propagate NaN:
// if either operand is NaN the result is NaN, as torch.min/torch.max do (CUB drops it).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
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

// ---------------------------------------------------------------------------------------------
// Arg-extremes: the value and the index of the maximum (minimum) element. The first index wins
// on ties; NaN counts as the extreme and the first NaN's index is returned, as NumPy and
// PyTorch do. Indices are 64-bit: right beyond 2^32 elements. Along an axis or in a segment, the
// index is the position within the row or segment.

template <class V>
struct Indexed {
  V value;
  std::int64_t index;
};

namespace detail {
template <class V>
__host__ __device__ constexpr bool nan_value(const V& v) {
  if constexpr (std::is_integral_v<V>) return false;
  else return !(v == v);
}
// Does b replace a as the extreme? NaN first, then the greater (Greater) or smaller value, then the lower index.
// (I: an Indexed<V>, or a form with a narrower index.)
template <class V, bool Greater, class I>
__host__ __device__ constexpr bool wins(const I& b, const I& a) {
  const bool an = nan_value(a.value), bn = nan_value(b.value);
  if (an || bn) return bn && (!an || b.index < a.index);
  if (Greater ? b.value > a.value : b.value < a.value) return true;
  return b.value == a.value && b.index < a.index;
}
}  // namespace detail

struct ArgMax {
  static constexpr const char* name = "argmax";
  static constexpr bool commutative = true;  // ties go to the lower index, whatever the order
  template <class R>  // R = Indexed<V>; the identity loses to every element (index past any)
  __host__ __device__ static constexpr R identity() {
    using V = decltype(R::value);
    if constexpr (std::is_floating_point_v<V>) return {-detail::infinity<V>(), INT64_MAX};
    else return {detail::lowest_value<V>(), INT64_MAX};
  }
  template <class V>
  __host__ __device__ constexpr Indexed<V> operator()(const Indexed<V>& a, const Indexed<V>& b) const {
    return detail::wins<V, true>(b, a) ? b : a;
  }
};

struct ArgMin {
  static constexpr const char* name = "argmin";
  static constexpr bool commutative = true;
  template <class R>
  __host__ __device__ static constexpr R identity() {
    using V = decltype(R::value);
    if constexpr (std::is_floating_point_v<V>) return {detail::infinity<V>(), INT64_MAX};
    else return {detail::max_value<V>(), INT64_MAX};
  }
  template <class V>
  __host__ __device__ constexpr Indexed<V> operator()(const Indexed<V>& a, const Indexed<V>& b) const {
    return detail::wins<V, false>(b, a) ? b : a;
  }
};

template <class Op>
inline constexpr bool is_arg_op_v = std::is_same_v<Op, ArgMax> || std::is_same_v<Op, ArgMin>;

// ---------------------------------------------------------------------------------------------
// Moments: count, mean = shift + offset, and M2 (the sum of squared deviations from the mean).
template <class A>
struct Moments {
  std::int64_t count;
  A shift;
  A offset;
  A m2;
  __host__ __device__ A mean() const { return count > 0 ? shift + offset : A(NAN); }
  // M2 / (count - correction); NaN where count <= correction (as torch).
  __host__ __device__ A variance(int correction = 1) const {
    return count > correction ? m2 / static_cast<A>(count - correction) : A(NAN);
  }
};

// The moments op: Chan's merge of two triples (commutative up to rounding; the left operand's
// shift is kept). Through the reduce family it gives the moments of the elements.
struct MeanVar {
  static constexpr const char* name = "meanvar";
  static constexpr bool commutative = true;
  template <class R>
  __host__ __device__ static R identity() { return R{0, 0, 0, 0}; }
  template <class A>
  __host__ __device__ Moments<A> operator()(const Moments<A>& a, const Moments<A>& b) const {
    if (b.count == 0) return a;
    if (a.count == 0) return b;
    const std::int64_t n = a.count + b.count;
    if (!(a.offset - a.offset == A(0) && b.offset - b.offset == A(0))) {  // an infinity or NaN: M2 NaN
      return {n, a.shift, a.offset + b.offset, A(NAN)};
    }
    // mean_b - mean_a: the shifts' difference is exact for nearby shifts (Sterbenz).
    const A d = (b.shift - a.shift) + (b.offset - a.offset);
    const A wb = static_cast<A>(b.count) / static_cast<A>(n);
    return {n, a.shift, a.offset + d * wb, a.m2 + b.m2 + d * d * static_cast<A>(a.count) * wb};
  }
};

template <class Op>
inline constexpr bool is_bitwise_v =
    std::is_same_v<Op, BitAnd> || std::is_same_v<Op, BitOr> || std::is_same_v<Op, BitXor>;

// An op's identity for values of type R: a static member template `identity<R>()` (the built-in
// ops) or a member function `identity()` (users' ops may keep state).
template <class Op, class R>
concept static_identity = requires { { Op::template identity<R>() } -> std::convertible_to<R>; };
template <class Op, class R>
concept member_identity = requires(const Op& op) { { op.identity() } -> std::convertible_to<R>; };
template <class Op, class R>
concept has_identity = static_identity<Op, R> || member_identity<Op, R>;

namespace detail {
template <class R, class Op>
__host__ __device__ R identity_of(const Op& op) {
  if constexpr (static_identity<Op, R>) return Op::template identity<R>();
  else return static_cast<R>(op.identity());
}
}  // namespace detail

// An op applies to an accumulator type when it is arithmetic, and integral for bitwise ops.
template <class A, class Op>
concept op_applies_to = std::is_arithmetic_v<A> && (!is_bitwise_v<Op> || std::is_integral_v<A>);

}  // namespace fastreduce
