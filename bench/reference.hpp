// CPU references: exact for integers (wrapping like the GPU), compensated long double for
// floating-point sums, so a GPU result can be judged against something more accurate.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "fastreduce/fastreduce.cuh"

namespace fastreduce::reference {

template <class T>
long double widen(T x) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else return static_cast<long double>(x);
}

// Neumaier-compensated sum in long double: error about one long double ulp of the result
// plus n * 2^-128 of the absolute sum, far below any float or double result's precision.
template <class T>
long double compensated_sum(const T* data, std::size_t n) {
  long double sum = 0.0L;
  long double compensation = 0.0L;
  for (std::size_t i = 0; i < n; ++i) {
    const long double x = widen(data[i]);
    const long double t = sum + x;
    if (std::fabs(sum) >= std::fabs(x)) compensation += (sum - t) + x;
    else compensation += (x - t) + sum;
    sum = t;
  }
  return sum + compensation;
}

// Sum of |x|: scales the rounding-error bound of a floating-point sum.
template <class T>
long double absolute_sum(const T* data, std::size_t n) {
  long double sum = 0.0L;
  for (std::size_t i = 0; i < n; ++i) sum += std::fabs(widen(data[i]));
  return sum;
}

// The reduction of data[0, n) with op, in the accumulator type, left to right (exact for
// integers, min/max and bitwise ops). Floating-point Sum should use compensated_sum instead;
// floating-point Prod is accumulated in long double.
template <class T, class Op>
auto reduce(const T* data, std::size_t n, Op op) {
  using A = acc_t<T, Op>;
  if constexpr (std::is_floating_point_v<A> && (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>)) {
    long double acc = Op::template identity<long double>();
    for (std::size_t i = 0; i < n; ++i) acc = op(acc, widen(data[i]));
    return acc;
  } else {
    A acc = Op::template identity<A>();
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<A, T>) acc = op(acc, data[i]);
      else acc = op(acc, static_cast<A>(widen(data[i])));
    }
    return acc;
  }
}

}  // namespace fastreduce::reference

namespace fastreduce::reference {

// The exact sum of the values, correctly rounded to double (Shewchuk's non-overlapping
// partials, with the final half-even correction of Python's math.fsum). Inputs are widened to
// double exactly; the result is the reference the accuracy report measures ulps against.
template <class T>
double exact_sum(const T* data, std::size_t n) {
  std::vector<double> partials;
  for (std::size_t k = 0; k < n; ++k) {
    double x = static_cast<double>(widen(data[k]));
    std::size_t kept = 0;
    for (double y : partials) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y;
      const double lo = y - (hi - x);
      if (lo != 0.0) partials[kept++] = lo;
      x = hi;
    }
    partials.resize(kept);
    partials.push_back(x);
  }
  if (partials.empty()) return 0.0;
  std::size_t i = partials.size() - 1;
  double hi = partials[i];
  double lo = 0.0;
  while (i > 0) {
    const double x = hi;
    const double y = partials[--i];
    hi = x + y;
    lo = y - (hi - x);
    if (lo != 0.0) break;
  }
  if (i > 0 && ((lo < 0.0 && partials[i - 1] < 0.0) || (lo > 0.0 && partials[i - 1] > 0.0))) {
    const double y = lo * 2.0;
    const double x = hi + y;
    if (y == x - hi) hi = x;
  }
  return hi;
}

}  // namespace fastreduce::reference

namespace fastreduce::reference {

// The exact sum of doubles (and of anything widened to double exactly: float, half, bfloat16) as a
// big integer in units of 2^-1074, infinities and NaN tracked apart, rounded once on request to
// float, double, half or bfloat16 (nearest, ties to even) by exact comparisons. Independent of the
// engine's own exact accumulator (no 64-bit window, no sticky bit): the reference Mode::Exact is
// held to, bit for bit.
class ExactReference {
 public:
  static constexpr int kLowBit = -1074;
  static constexpr std::size_t kDigits = 72;  // 32-bit digits: bits 2^-1074 .. 2^1229

  void add(double x) {
    if (!std::isfinite(x)) {
      if (std::isnan(x)) nan_ = true;
      else if (x > 0) plus_inf_ = true;
      else minus_inf_ = true;
      return;
    }
    if (x == 0.0) return;
    int exponent = 0;
    const double fraction = std::frexp(std::fabs(x), &exponent);  // |x| = fraction * 2^exponent
    // |x| = mantissa * 2^(exponent - 53), mantissa below 2^53; bit 0 of the mantissa is bit
    // `position` of the big integer (positions below 0 hold no bits of a double).
    std::uint64_t mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
    int position = exponent - 53 - kLowBit;
    while (position < 0) {  // a subnormal: its low mantissa bits are zero
      mantissa >>= 1;
      ++position;
    }
    const unsigned __int128 shifted = static_cast<unsigned __int128>(mantissa) << (position % 32);
    for (std::size_t i = 0; i < 3; ++i) {
      const long long piece = static_cast<long long>(static_cast<std::uint64_t>(shifted >> (32 * i)) & 0xFFFFFFFFull);
      digits_.at(static_cast<std::size_t>(position / 32) + i) += x < 0 ? -piece : piece;
    }
    if (++pending_ == (1 << 28)) carry();
  }

  template <class T>
  void add_all(const T* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) add(static_cast<double>(widen(data[i])));
  }

  // Same exact value and the same special values seen.
  bool operator==(const ExactReference& other) const {
    ExactReference a = *this, b = other;
    a.carry();
    b.carry();
    return a.digits_ == b.digits_ && a.nan_ == b.nan_ && a.plus_inf_ == b.plus_inf_ && a.minus_inf_ == b.minus_inf_;
  }

  // The exact sum (divided by `divisor`: the exact mean) rounded to nearest even with `precision`
  // significand bits and exponents min_exponent .. max_exponent (subnormals below), as a double
  // holding that value; beyond the range, an infinity. Infinities and NaN as IEEE addition gives
  // them; an exact zero is +0; a divisor of 0 (the mean of nothing) gives NaN.
  double rounded(int precision, int min_exponent, int max_exponent, std::uint64_t divisor = 1) const {
    if (divisor == 0 || nan_ || (plus_inf_ && minus_inf_)) return std::numeric_limits<double>::quiet_NaN();
    if (plus_inf_) return std::numeric_limits<double>::infinity();
    if (minus_inf_) return -std::numeric_limits<double>::infinity();
    ExactReference c = *this;
    c.carry();
    const bool negative = c.digits_.back() < 0;
    std::vector<std::uint32_t> magnitude(kDigits);
    long long borrow = 0;
    for (std::size_t i = 0; i < kDigits; ++i) {
      long long v = negative ? -c.digits_[i] - borrow : c.digits_[i];
      borrow = 0;
      if (i + 1 < kDigits && v < 0) {
        v += 1ll << 32;
        borrow = 1;
      }
      magnitude[i] = static_cast<std::uint32_t>(v);
    }
    // A quotient: the magnitude times 2^128 divided by `divisor`, digit by digit (a 128-bit
    // remainder), the remainder kept as a sticky flag. Its bits reach far below every format's.
    int low_bit = kLowBit;
    bool remainder = false;
    if (divisor != 1) {
      std::vector<std::uint32_t> quotient(kDigits + 4);
      unsigned __int128 rest = 0;
      for (std::size_t i = quotient.size(); i-- > 0;) {
        const unsigned __int128 current = (rest << 32) | (i >= 4 ? magnitude[i - 4] : 0u);
        quotient[i] = static_cast<std::uint32_t>(current / divisor);
        rest = current % divisor;
      }
      magnitude = quotient;
      low_bit = kLowBit - 128;
      remainder = rest != 0;
    }
    auto bit = [&](long i) { return i >= 0 && ((magnitude[std::size_t(i) / 32] >> (i % 32)) & 1u) != 0; };
    long top = static_cast<long>(32 * magnitude.size()) - 1;
    while (top >= 0 && !bit(top)) --top;
    if (top < 0) return 0.0;
    const int exponent = static_cast<int>(top) + low_bit;
    if (exponent > max_exponent) return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    const long last = static_cast<long>(std::max(exponent, min_exponent) - (precision - 1) - low_bit);  // the last bit kept
    std::uint64_t q = 0;
    for (long i = top; i >= std::max(last, 0l); --i) q = 2 * q + (bit(i) ? 1 : 0);
    if (last > 0) {
      bool sticky = remainder;
      for (long i = 0; i < last - 1; ++i) sticky = sticky || bit(i);
      if (bit(last - 1) && (sticky || (q & 1) != 0)) ++q;
    }
    double value = std::ldexp(static_cast<double>(q), static_cast<int>(std::max(last, 0l)) + low_bit);
    const double largest = std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), max_exponent);
    if (value > largest) value = std::numeric_limits<double>::infinity();
    return negative ? -value : value;
  }

  // Rounded to T's format: float, double, __half or __nv_bfloat16 (divided by `divisor`: the mean).
  template <class T>
  double rounded(std::uint64_t divisor = 1) const {
    if constexpr (std::is_same_v<T, float>) return rounded(24, -126, 127, divisor);
    else if constexpr (std::is_same_v<T, double>) return rounded(53, -1022, 1023, divisor);
    else if constexpr (std::is_same_v<T, __half>) return rounded(11, -14, 15, divisor);
    else return rounded(8, -126, 127, divisor);
  }

 private:
  // Digits 0 .. kDigits - 2 into [0, 2^32), the top one keeping the sign and everything above.
  void carry() {
    long long c = 0;
    for (std::size_t i = 0; i + 1 < kDigits; ++i) {
      const long long v = digits_[i] + c;
      c = v >> 32;  // arithmetic shift: floor division by 2^32
      digits_[i] = v & 0xFFFFFFFFll;
    }
    digits_.back() += c;
    pending_ = 0;
  }

  std::vector<long long> digits_ = std::vector<long long>(kDigits, 0);
  long pending_ = 0;  // additions since the last carry (each adds less than 2^32 to a digit)
  bool nan_ = false;
  bool plus_inf_ = false;
  bool minus_inf_ = false;
};

// The exact sum of data[0, n) rounded once to R's format (a double holding that value).
template <class R, class T>
double exact_rounded(const T* data, std::size_t n) {
  ExactReference exact;
  exact.add_all(data, n);
  return exact.template rounded<R>();
}

// The exact mean of data[0, n) (the exact sum divided by n) rounded once to R's format; NaN for n = 0.
template <class R, class T>
double exact_mean_rounded(const T* data, std::size_t n) {
  ExactReference exact;
  exact.add_all(data, n);
  return exact.template rounded<R>(n);
}

}  // namespace fastreduce::reference
