// Vectors of elements: 16-byte vectors of the types that divide 16 bytes (4 floats, 8 halves, 2
// doubles), single elements of any other type; the load instructions the engine uses for them,
// the widening of an element to its accumulator, and the reduction of one vector's elements.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "fastreduce/detail/load_hint.hpp"

namespace fastreduce::primitives {

// Elements per vector: 16 bytes' worth, or one element of a type that does not divide 16 bytes.
template <class T>
inline constexpr unsigned kVecElems = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? unsigned(16 / sizeof(T)) : 1u;

// Several elements fill a 16-byte vector, loaded at once; a single element is loaded as itself.
template <class T, unsigned V>
inline constexpr bool kWideVec = V > 1 && V * sizeof(T) == 16;

// V elements, aligned as one 16-byte load when they fill 16 bytes, else as the element.
template <class T, unsigned V = kVecElems<T>>
struct alignas(kWideVec<T, V> ? 16 : alignof(T)) Vec {
  T elem[V];
};

// Bytes a pointer must be aligned to for a Vec<T, V> load.
template <class T, unsigned V = kVecElems<T>>
inline constexpr std::size_t kVecAlign = alignof(Vec<T, V>);

template <LoadHint Hint, class T, unsigned V>
__device__ __forceinline__ Vec<T, V> load_vec(const Vec<T, V>* p) {
  if constexpr (kWideVec<T, V>) {
    int4 raw;
    if constexpr (Hint == LoadHint::StreamPrefetch) {
      asm("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0, %1, %2, %3}, [%4];"
          : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
          : "l"(p));
    } else {
      raw = __ldg(reinterpret_cast<const int4*>(p));
    }
    Vec<T, V> v;
    static_assert(sizeof(v) == sizeof(raw));
    __builtin_memcpy(&v, &raw, sizeof(v));
    return v;
  } else {
    return *p;  // elements of a type that does not fill a 16-byte vector, one by one
  }
}

template <class T, unsigned V>
__device__ __forceinline__ Vec<T, V> load_vec(const Vec<T, V>* p) {
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

// |x| of a floating-point element by its bits (the sign bit cleared): exact for every value, NaN
// stays NaN with its payload. The reproducible and exact sums of magnitudes (the L1 norm) load
// their elements through it.
template <class T>
__device__ __forceinline__ T magnitude(T x) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 8) {
    return __longlong_as_double(__double_as_longlong(x) & 0x7FFFFFFFFFFFFFFFll);
  } else if constexpr (sizeof(T) == 4) {
    return __int_as_float(__float_as_int(x) & 0x7FFFFFFF);
  } else {
    unsigned short bits;
    __builtin_memcpy(&bits, &x, 2);
    bits &= 0x7FFFu;
    T y;
    __builtin_memcpy(&y, &bits, 2);
    return y;
  }
}

// Half and bfloat16 values as doubles by their bits, with no conversion instruction (on sm_90 a
// conversion to or from double issues at a quarter of a double multiply's rate): the sign,
// exponent and significand placed in a double's high word by an arithmetic shift and a mask read
// as the value times 2^-896 (bfloat16) or 2^-1008 (half), zeros and subnormals included, and one
// multiplication by that power of two makes it the value, exactly. Nothing is flushed, whatever
// -ftz says. An infinity or NaN, whose bits would read as a finite double, must be converted
// instead (widen_halves does).
template <class T>
struct HalfBits {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>);
  static constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  static constexpr int kShift = kBf16 ? 3 : 6;                          // exponent to a double's bit 20
  static constexpr unsigned kKeep = kBf16 ? 0x8FFFE000u : 0x81FFFC00u;  // sign, exponent, significand
  static constexpr double kScale = kBf16 ? 0x1p896 : 0x1p1008;
  static constexpr unsigned kExp = kBf16 ? 0x7F80u : 0x7C00u;  // all ones: infinite or NaN
  static constexpr unsigned kExpLow = kBf16 ? 0x0080u : 0x0400u;
  // Nonzero where either half of w is infinite or NaN (all ones plus one carries into its sign bit).
  __device__ static __forceinline__ unsigned special(unsigned w) {
    return ((w & (kExp * 0x10001u)) + kExpLow * 0x10001u) & 0x80008000u;
  }
  // The finite element in the high half of w as a double times 1 / kScale.
  __device__ static __forceinline__ double unscaled(unsigned w) {
    const unsigned hi = static_cast<unsigned>(static_cast<int>(w) >> kShift) & kKeep;
    return __hiloint2double(static_cast<int>(hi), 0);
  }
  // ... as a double.
  __device__ static __forceinline__ double high(unsigned w) { return unscaled(w) * kScale; }
};

// A vector of half or bfloat16 elements as doubles by their bits (HalfBits): its words tested first
// (a word's two exponents at once, HalfBits::special), then every element placed; a vector that
// holds an infinity or NaN is converted, element by element (under -ftz=true a subnormal beside the
// infinity or NaN may then read as zero: for the norms, which use this, the infinity or NaN decides
// the result anyway). Tested after the widening, the same loop ran slower (bfloat16 L2 norms along
// rows of 4096 read from L2, on an H200: 10.8 against 9.0 us); an element-by-element select where
// the test fails took the 1-D kernel from 48 registers to 62.
template <class T, unsigned V>
__device__ __forceinline__ void widen_halves(const Vec<T, V>& v, double (&out)[V]) {
  static_assert(V % 2 == 0);
  using Bits = HalfBits<T>;
  unsigned w[V / 2];
  __builtin_memcpy(w, &v, sizeof(w));
  unsigned special = 0;
#pragma unroll
  for (unsigned k = 0; k < V / 2; ++k) special |= Bits::special(w[k]);
  if (special == 0) {
#pragma unroll
    for (unsigned k = 0; k < V / 2; ++k) {
      out[2 * k] = Bits::high(w[k] << 16);
      out[2 * k + 1] = Bits::high(w[k]);
    }
  } else {
#pragma unroll
    for (unsigned k = 0; k < V; ++k) out[k] = static_cast<double>(static_cast<float>(v.elem[k]));
  }
}

// Every element of a vector as magnitude(): a 16-byte vector's four words masked at once.
template <class T, unsigned V>
__device__ __forceinline__ Vec<T, V> magnitudes(const Vec<T, V>& v) {
  Vec<T, V> m;
  if constexpr (kWideVec<T, V>) {
    unsigned w[4];
    __builtin_memcpy(w, &v, 16);
#pragma unroll
    for (unsigned i = 0; i < 4; ++i) w[i] &= sizeof(T) == 8 ? (i % 2 == 1 ? 0x7FFFFFFFu : 0xFFFFFFFFu)
                                        : sizeof(T) == 4 ? 0x7FFFFFFFu
                                                         : 0x7FFF7FFFu;
    __builtin_memcpy(&m, w, 16);
  } else {
#pragma unroll
    for (unsigned k = 0; k < V; ++k) m.elem[k] = magnitude(v.elem[k]);
  }
  return m;
}

// x, or (Abs: the sums of magnitudes) magnitude(x); a vector likewise.
template <bool Abs, class T>
__device__ __forceinline__ T magnitude_if(T x) {
  if constexpr (Abs) return magnitude(x);
  else return x;
}
template <bool Abs, class T, unsigned V>
__device__ __forceinline__ Vec<T, V> magnitudes_if(const Vec<T, V>& v) {
  if constexpr (Abs) return magnitudes(v);
  else return v;
}

// The type a float-valued sum's exact total is rounded into (the reproducible and exact kernels,
// shared by the float accumulator's inputs, take it as an argument): the accumulator's (float,
// double), or half or bfloat16 (half and bfloat16 inputs' results in their own type, rounded once).
enum class ResultType : unsigned char { Acc, Half, Bfloat16 };

// The narrow result type of input T: Half for __half, Bfloat16 for __nv_bfloat16, else Acc.
template <class T>
inline constexpr ResultType kNarrowResult = std::is_same_v<T, __half>          ? ResultType::Half
                                            : std::is_same_v<T, __nv_bfloat16> ? ResultType::Bfloat16
                                                                               : ResultType::Acc;

// A float result rounded once to nearest even into O (__half or __nv_bfloat16).
template <class O>
__host__ __device__ __forceinline__ O narrow_float(float x) {
  static_assert(std::is_same_v<O, __half> || std::is_same_v<O, __nv_bfloat16>);
  if constexpr (std::is_same_v<O, __half>) return __float2half_rn(x);
  else return __float2bfloat16_rn(x);
}

// A double rounded once to nearest even into O: float, or __half or __nv_bfloat16 (no float
// between, which would round twice).
template <class O>
__host__ __device__ __forceinline__ O narrow_double(double x) {
  static_assert(std::is_same_v<O, float> || std::is_same_v<O, __half> || std::is_same_v<O, __nv_bfloat16>);
  if constexpr (std::is_same_v<O, float>) return static_cast<float>(x);
  else if constexpr (std::is_same_v<O, __half>) return __double2half(x);
  else return __double2bfloat16(x);
}

// One vector's elements combined pairwise (shorter chains than left to right), in accumulator A.
template <class A, class T, unsigned V, class Op>
__device__ __forceinline__ A reduce_vec(const Vec<T, V>& v, Op op) {
  A lanes[V];
#pragma unroll
  for (unsigned k = 0; k < V; ++k) lanes[k] = to_acc<A>(v.elem[k]);
#pragma unroll
  for (unsigned width = V / 2; width > 0; width /= 2) {
#pragma unroll
    for (unsigned k = 0; k < width; ++k) lanes[k] = op(lanes[k], lanes[k + width]);
  }
  return lanes[0];
}

// Additions on the longest path through reduce_vec: log2 of the elements per vector.
template <class T>
inline constexpr unsigned kVecDepth = kVecElems<T> == 16 ? 4 : kVecElems<T> == 8 ? 3 : kVecElems<T> == 4 ? 2 : 1;

}  // namespace fastreduce::primitives
