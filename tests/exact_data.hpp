// Data for Mode::Exact's tests, CPU (tests/cpu/exact_test.cpp) and GPU (tests/gpu/exact_test.cu):
// every kind of value a sum meets, for float, double, __half and __nv_bfloat16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace fastreduce::testing {

// T's range: the largest finite value, the smallest normal exponent, the bits of a subnormal and
// the largest exponent.
template <class T>
struct ValueRange {
  static double largest() {
    if constexpr (std::is_same_v<T, __half>) return 65504.0;
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return 0x1.FEp127;
    else return static_cast<double>(std::numeric_limits<T>::max());
  }
  static constexpr int min_exponent = std::is_same_v<T, __half> ? -14 : std::is_same_v<T, double> ? -1022 : -126;
  static constexpr int subnormal_bits = std::is_same_v<T, __half>          ? 10
                                        : std::is_same_v<T, __nv_bfloat16> ? 7
                                        : std::is_same_v<T, float>         ? 23
                                                                           : 52;
  static constexpr int max_exponent = std::is_same_v<T, __half> ? 15 : std::is_same_v<T, double> ? 1023 : 127;
};

inline constexpr const char* kExactDataSets[] = {
    "uniform",     "normal",           "wide range",     "cancellation",      "subnormal",
    "near the limit, sum in range",    "sum overflows",  "every exponent",    "NaN and infinities"};
inline constexpr int kExactDataSetCount = 9;

// Data set `kind` (an index into kExactDataSets) of n values of T.
template <class T>
std::vector<T> exact_data(int kind, std::size_t n, std::uint64_t seed) {
  using Range = ValueRange<T>;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double big = 0.9 * Range::largest();
  const double decades = std::is_same_v<T, double> ? 300 : std::is_same_v<T, __half> ? 4 : 30;
  const int lowest = Range::min_exponent - Range::subnormal_bits;  // the smallest subnormal's exponent
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double sign = unit(rng) < 0.5 ? -1.0 : 1.0;
    switch (kind) {
      case 0: v[i] = unit(rng); break;
      case 1: v[i] = normal(rng); break;
      case 2: v[i] = sign * std::pow(10.0, decades * (2 * unit(rng) - 1)); break;
      case 3:  // large cancelling pairs, small values between: sum |x| / |sum| around 10^10 and beyond
        v[i] = i % 3 == 2 ? 1e-3 * unit(rng) : i % 3 == 0 ? 1e-2 * big * (1 + unit(rng)) : -v[i - 1];
        break;
      case 4: v[i] = sign * std::ldexp(static_cast<double>(rng() % (1ull << Range::subnormal_bits)), lowest); break;
      case 5: v[i] = i % 2 == 0 ? sign * big : -v[i - 1] + normal(rng); break;  // pairs near the limit that cancel
      case 6: v[i] = big * (0.5 + 0.5 * unit(rng)); break;
      case 7: v[i] = sign * std::ldexp(1.0 + unit(rng), lowest + static_cast<int>(rng() % (Range::max_exponent - lowest))); break;
      default:
        v[i] = normal(rng);
        if (rng() % 4099 == 0) v[i] = rng() % 3 == 0 ? NAN : sign * INFINITY;
        break;
    }
  }
  if (kind == 3 || kind == 5) std::shuffle(v.begin(), v.end(), rng);
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(v[i]);
  return out;
}

// A natural number in 32-bit digits (least significant first), for the references of the exact
// variance: n sum x^2 - (sum x)^2 in integers, independent of the library's own digits. Throws
// std::logic_error where a result would not fit (or would be negative).
struct BigNatural {
  std::vector<std::uint32_t> d = std::vector<std::uint32_t>(40, 0);

  static void check(bool ok, const char* what) {
    if (!ok) throw std::logic_error(what);
  }
  void add(std::uint64_t m, int shift) {  // += m 2^shift (bits below 2^0 must be zero)
    for (; shift < 0; ++shift) {
      check((m & 1) == 0, "BigNatural::add: a bit below 2^0");
      m >>= 1;
    }
    unsigned __int128 carry = static_cast<unsigned __int128>(m) << (shift % 32);
    for (std::size_t i = std::size_t(shift / 32); carry != 0; ++i) {
      carry += d.at(i);
      d[i] = static_cast<std::uint32_t>(carry);
      carry >>= 32;
    }
  }
  void add(const BigNatural& o, int digit_shift = 0) {  // += o 2^(32 digit_shift)
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i + digit_shift < d.size(); ++i) {
      carry += std::uint64_t(d[i + digit_shift]) + (i < o.d.size() ? o.d[i] : 0);
      d[i + digit_shift] = static_cast<std::uint32_t>(carry);
      carry >>= 32;
    }
    check(carry == 0, "BigNatural::add: overflow");
  }
  BigNatural times(std::uint32_t k) const {
    BigNatural r;
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
      carry += std::uint64_t(d[i]) * k;
      r.d[i] = static_cast<std::uint32_t>(carry);
      carry >>= 32;
    }
    check(carry == 0, "BigNatural::times: overflow");
    return r;
  }
  BigNatural times(std::uint64_t k) const {
    BigNatural r = times(static_cast<std::uint32_t>(k));
    r.add(times(static_cast<std::uint32_t>(k >> 32)), 1);
    return r;
  }
  BigNatural times(const BigNatural& o) const {
    BigNatural r;
    for (std::size_t i = 0; i < o.d.size(); ++i) {
      if (o.d[i] != 0) r.add(times(o.d[i]), int(i));
    }
    return r;
  }
  // Floor division by k (below 2^64); *rest (if given) the remainder.
  BigNatural divided(std::uint64_t k, std::uint64_t* rest = nullptr) const {
    BigNatural q;
    unsigned __int128 r = 0;
    for (std::size_t i = d.size(); i-- > 0;) {
      r = (r << 32) | d[i];
      q.d[i] = static_cast<std::uint32_t>(r / k);
      r %= k;
    }
    if (rest != nullptr) *rest = static_cast<std::uint64_t>(r);
    return q;
  }
  bool less(const BigNatural& o) const {
    for (std::size_t i = d.size(); i-- > 0;) {
      if (d[i] != o.d[i]) return d[i] < o.d[i];
    }
    return false;
  }
  BigNatural minus(const BigNatural& o) const {
    BigNatural r;
    std::int64_t borrow = 0;
    for (std::size_t i = 0; i < d.size(); ++i) {
      const std::int64_t t = std::int64_t(d[i]) - o.d[i] - borrow;
      r.d[i] = static_cast<std::uint32_t>(t);
      borrow = t < 0;
    }
    check(borrow == 0, "BigNatural::minus: negative");
    return r;
  }
  bool bit(int i) const { return i >= 0 && (d[std::size_t(i) / 32] >> (i % 32) & 1u) != 0; }
  int top_bit() const {  // -1 for zero
    int top = int(d.size()) * 32 - 1;
    while (top >= 0 && !bit(top)) --top;
    return top;
  }
  // The value times 2^scale rounded once to `precision` bits (nearest, ties to even; `sticky`: the
  // value has more bits below its own), as a double holding it (normal results only).
  double rounded(int scale, int precision = 53, bool sticky = false) const {
    const int top = top_bit();
    if (top < 0) return 0.0;
    std::uint64_t q = 0;
    const int last = std::max(top - (precision - 1), 0);
    for (int i = top; i >= last; --i) q = 2 * q + (bit(i) ? 1 : 0);
    for (int i = 0; i < last - 1; ++i) sticky = sticky || bit(i);
    if (last > 0 && bit(last - 1) && (sticky || (q & 1) != 0)) ++q;
    return std::ldexp(static_cast<double>(q), last + scale);
  }
};

}  // namespace fastreduce::testing
