// The arithmetic of Mode::Exact that host and device share (the CPU tests run it as the GPU does):
//   - add_if_exact: a double addition kept only when it rounds nothing, the test that lets a
//     lane sum in double until an addition would lose a bit;
//   - round_scaled: a value m * 2^scale (m a 64-bit integer whose bit 0 also stands for any bits
//     below it) rounded once, to nearest even, into float, double, half or bfloat16 bits,
//     subnormals and overflow included; round_double, a double rounded once into those formats;
//   - divide_window: the quotient of an exact magnitude by a count, in round_scaled's form (the
//     exact mean), and is_midpoint, the test that keeps a double quotient from being rounded twice.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FASTREDUCE_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FASTREDUCE_HOST_DEVICE inline
#endif

#if !defined(__CUDA_ARCH__)
#include <bit>
#include <cmath>
#endif

namespace fastreduce::primitives {

// Correctly rounded double addition and subtraction that the compiler may not contract or
// reorder (on the host, SSE2 arithmetic: the same IEEE operations).
FASTREDUCE_HOST_DEVICE double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
FASTREDUCE_HOST_DEVICE double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

// acc += x when the double sum is exact; returns false, leaving acc as it was, when it is not
// (a bit would be rounded away, the sum overflows, or x is infinite or NaN). acc must be finite.
// Why the test is exact: with t = fl(acc + x), if t = acc + x then t - acc = x and t - x = acc are
// representable and both subtractions return them. Otherwise, say |acc| >= |x|: then t - acc is
// representable (the subtraction of FastTwoSum), so fl(t - acc) = t - acc != x; symmetrically
// fl(t - x) != acc when |x| > |acc|. An overflow gives t = inf and t - acc = inf != x; an infinite
// x gives t - x = NaN; a NaN compares unequal.
FASTREDUCE_HOST_DEVICE bool add_if_exact(double& acc, double x) {
  const double t = add_rn(acc, x);
  const bool exact = sub_rn(t, acc) == x && sub_rn(t, x) == acc;
  if (exact) acc = t;
  return exact;
}

// A quiet NaN, on host and device alike.
FASTREDUCE_HOST_DEVICE double quiet_nan() {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(0x7FF8000000000000ll);
#else
  return std::bit_cast<double>(0x7FF8000000000000ull);
#endif
}

// acc + x where that sum is exact, else NaN (the test of add_if_exact). NaN marks that some
// addition would have rounded, and it stays: a NaN operand fails the test, so every later
// addition gives NaN again. This is the running sum of the exact check (detail/exact_axis.cuh), one
// double with no flag beside it.
FASTREDUCE_HOST_DEVICE double add_exact_or_nan(double acc, double x) {
  const double t = add_rn(acc, x);
  return sub_rn(t, acc) == x && sub_rn(t, x) == acc ? t : quiet_nan();
}

FASTREDUCE_HOST_DEVICE std::uint64_t double_bits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  return std::bit_cast<std::uint64_t>(x);
#endif
}
FASTREDUCE_HOST_DEVICE bool finite(double x) {
  return (double_bits(x) & 0x7FF0000000000000ull) != 0x7FF0000000000000ull;
}

// TwoSum (Knuth): sum = fl(a + b) and error with sum + error = a + b exactly, whichever of a and b
// is larger. If the sum or an intermediate difference overflows, error is NaN.
struct TwoSum {
  double sum;
  double error;
};
FASTREDUCE_HOST_DEVICE TwoSum two_sum(double a, double b) {
  const double s = add_rn(a, b);
  const double z = sub_rn(s, a);
  return {s, add_rn(sub_rn(a, sub_rn(s, z)), sub_rn(b, z))};
}

// The same in float's correctly rounded additions (the reproducible lanes' running sums).
struct TwoSumFloat {
  float sum;
  float error;
};
FASTREDUCE_HOST_DEVICE TwoSumFloat two_sum_float(float a, float b) {
#if defined(__CUDA_ARCH__)
  const float s = __fadd_rn(a, b);
  const float z = __fsub_rn(s, a);
  return {s, __fadd_rn(__fsub_rn(a, __fsub_rn(s, z)), __fsub_rn(b, z))};
#else
  const float s = a + b;
  const float z = s - a;
  return {s, (a - (s - z)) + (b - z)};
#endif
}

// Mode::Exact's lanes. Every element's addition is kept only when it is exact; what would round
// is handed on, to be added exactly to a fixed-point accumulator. So a lane's running sums, plus
// everything handed on, equal the exact sum of its elements: nothing is rounded before the total.
//
// Float-valued sums (float, half, bfloat16 inputs): a double running sum of the lane's elements,
// each converted exactly and added with add_if_exact. A double holds 29 bits more than a float,
// so the additions round only for elements some 2^22 times smaller than the running sum (or for
// infinity and NaN): rare in practice; such an element goes to spill(x) instead (the lane's own
// exact limbs).
//
// The kernels' hot loop uses try_add, which has no spill path (a branch and the spill's code at
// every element would make the unrolled loop too large for the instruction cache): it keeps the
// exact additions and says whether every one was; a batch with one that was not is summed again,
// from the sums it started with, with add.
struct ExactFloatLane {
  double sum = 0.0;
  FASTREDUCE_HOST_DEVICE bool try_add(float x) { return add_if_exact(sum, static_cast<double>(x)); }
  template <class Spill>
  FASTREDUCE_HOST_DEVICE void add(float x, Spill& spill) {
    const double d = static_cast<double>(x);
    if (!add_if_exact(sum, d)) spill(d);
  }
};

// Doubles: TwoSum into `sum` (its rounding error is exact) and the errors added into `error` with
// add_if_exact. add() returns what is left for the warp's exact accumulator, or 0: the element
// itself when sum + x overflows or x is infinite or NaN, the error when adding it to `error` would
// round (data spread over more than about 2^50).
struct ExactDoubleLane {
  double sum = 0.0;
  double error = 0.0;
  // add() without a leftover: false when there would be one (the lane is then to be discarded).
  // An overflow, or an infinite or NaN x, needs no test of its own: TwoSum's error is then NaN,
  // and add_if_exact refuses a NaN.
  FASTREDUCE_HOST_DEVICE bool try_add(double x) {
    const TwoSum t = two_sum(sum, x);
    sum = t.sum;
    return add_if_exact(error, t.error);
  }
  FASTREDUCE_HOST_DEVICE double add(double x) {
    const TwoSum t = two_sum(sum, x);
    // The sum overflows, or (the sum finite) TwoSum's difference does (sum and x near the limit,
    // opposite in sign to the rounding): the error is NaN. The element goes on whole.
    if (!finite(t.sum) || !finite(t.error)) return x;
    sum = t.sum;
    return add_if_exact(error, t.error) ? 0.0 : t.error;
  }
};

// A partial of exact double lanes: sum + error is exactly the sum of what it covers, unless ok is
// false (an addition would have rounded or overflowed).
struct ExactPair {
  double sum;
  double error;
  bool ok;
};

// a + b, exactly: TwoSum of the sums, the errors and TwoSum's error added with add_if_exact.
FASTREDUCE_HOST_DEVICE ExactPair exact_pair_add(const ExactPair& a, const ExactPair& b) {
  const TwoSum s = two_sum(a.sum, b.sum);
  double error = a.error;
  bool ok = a.ok && b.ok && finite(s.sum);
  ok = ok && add_if_exact(error, b.error);
  ok = ok && add_if_exact(error, s.error);
  return {s.sum, error, ok};
}

// The exact check's partial of doubles: sum + error is exactly the sum of what it covers, unless
// error is NaN (an addition would have rounded or overflowed; it stays NaN). sum is TwoSum's
// running sum and error the sum of its errors, each added with add_exact_or_nan. An overflow, or
// an infinite or NaN element, makes TwoSum's error NaN or infinite, and add_exact_or_nan refuses
// both, so a non-NaN error always comes with a finite sum.
struct CheckedPair {
  double sum;
  double error;
};
FASTREDUCE_HOST_DEVICE CheckedPair checked_pair_add(const CheckedPair& s, double x) {
  const TwoSum t = two_sum(s.sum, x);
  return {t.sum, add_exact_or_nan(s.error, t.error)};
}
FASTREDUCE_HOST_DEVICE CheckedPair checked_pair_join(const CheckedPair& a, const CheckedPair& b) {
  const TwoSum s = two_sum(a.sum, b.sum);
  return {s.sum, add_exact_or_nan(add_exact_or_nan(a.error, b.error), s.error)};
}

// An IEEE binary format: `precision` significand bits (the implicit one included), the smallest
// normal exponent, the exponent bias and the total width in bits.
struct BinaryFormat {
  int precision;
  int min_exponent;
  int bias;
  int width;
};
inline constexpr BinaryFormat kFloatFormat{24, -126, 127, 32};
inline constexpr BinaryFormat kDoubleFormat{53, -1022, 1023, 64};
inline constexpr BinaryFormat kHalfFormat{11, -14, 15, 16};
inline constexpr BinaryFormat kBfloat16Format{8, -126, 127, 16};

FASTREDUCE_HOST_DEVICE int leading_zeros64(std::uint64_t m) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(m));
#else
  return std::countl_zero(m);
#endif
}

// The bits of m * 2^scale rounded to nearest even in format F, with `negative` giving the sign.
// Bit 0 of m may be sticky: set when the value has bits below it (so the value lies strictly
// between m - 1 and m + 1 times 2^scale, never on a rounding boundary it does not show). That is
// valid only where at least two of m's bits fall below the result's last bit: m with its top bit
// at 63 (round_exact's), or an m that is exact. m = 0 gives a zero of the sign. Results beyond
// the format's range are infinities.
template <BinaryFormat F>
FASTREDUCE_HOST_DEVICE std::uint64_t round_scaled(std::uint64_t m, int scale, bool negative) {
  constexpr int p = F.precision;
  const std::uint64_t sign = negative ? std::uint64_t(1) << (F.width - 1) : 0;
  if (m == 0) return sign;
  const int top = 63 - leading_zeros64(m);  // the value is in [2^(top + scale), 2^(top + scale + 1))
  const int exponent = top + scale;
  constexpr std::uint64_t kInfinity = ((std::uint64_t(1) << (F.width - 1 - (p - 1))) - 1) << (p - 1);
  if (exponent > F.bias) return sign | kInfinity;  // even the smallest such value is too large
  const bool subnormal = exponent < F.min_exponent;
  // The weight of the result's last bit, and how many of m's bits fall below it.
  const int last_bit = (subnormal ? F.min_exponent : exponent) - (p - 1);
  const int drop = last_bit - scale;
  std::uint64_t q;
  if (drop <= 0) {
    q = m << -drop;  // every bit fits (then drop > -64: m has at most p bits here)
  } else if (drop >= 65) {
    q = 0;  // the value is below half the last bit
  } else {
    q = drop == 64 ? 0 : m >> drop;
    const std::uint64_t rest = drop == 64 ? m : m & ((std::uint64_t(1) << drop) - 1);
    const std::uint64_t half = std::uint64_t(1) << (drop - 1);
    if (rest > half || (rest == half && (q & 1) != 0)) ++q;
  }
  // A normal result: q in [2^(p-1), 2^p]; q = 2^p carries into the exponent (and past the largest
  // finite value into the infinity's bits). A subnormal: q <= 2^(p-1), which is the smallest normal.
  const std::uint64_t biased = subnormal ? 0 : static_cast<std::uint64_t>(exponent + F.bias - 1);
  const std::uint64_t bits = (biased << (p - 1)) + q;
  return sign | (bits >= kInfinity ? kInfinity : bits);
}

// The bits of a finite double rounded once, to nearest even, into format F (half and bfloat16
// results of Mode::Exact whose exact sum is a double). A double is m * 2^scale with m its
// significand, exact, so round_scaled applies.
template <BinaryFormat F>
FASTREDUCE_HOST_DEVICE std::uint64_t round_double(double x) {
  const std::uint64_t bits = double_bits(x);
  const bool negative = (bits >> 63) != 0;
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t fraction = bits & ((std::uint64_t(1) << 52) - 1);
  if (biased == 0) return round_scaled<F>(fraction, -1074, negative);  // zero or subnormal
  return round_scaled<F>(fraction | (std::uint64_t(1) << 52), biased - 1075, negative);
}

// The quotient of an exact magnitude by an integer, in round_scaled's form: m (its top bit at 63,
// bit 0 sticky) times 2^scale, scale counted from bit 0 of window[4]. The magnitude is given by its
// five highest 32-bit limbs, window[0] (non-zero) down to window[4] (zeros under the lowest limb),
// and whether any limb under them is non-zero (`below`). Long division in D-bit digits, highest
// first: the remainder stays under the divisor, so remainder * 2^D + digit fits 64 bits for
// divisors under 2^(64 - D): D = 32 under 2^32, else D = 16 (divisors under 2^48). The first
// non-zero digit of the quotient comes by the window's second digit (D = 32) or fifth (D = 16, the
// divisor being under 2^48 = 2^(3 D)), and 64 more bits of it by the window's fourth or ninth, so
// the window holds every digit the division needs. The rest of the quotient is zero exactly when
// the remainder and every digit left (in the window and below it) are: that is the sticky bit.
struct Scaled {
  std::uint64_t m;
  int scale;
};
template <int D>
FASTREDUCE_HOST_DEVICE Scaled divide_window_in(const std::uint32_t (&window)[5], bool below, std::uint64_t divisor) {
  constexpr int kDigits = 5 * 32 / D;
  constexpr int kMore = 64 / D;  // digits after the quotient's first non-zero one
  constexpr std::uint64_t kMask = (std::uint64_t(1) << D) - 1;
  auto digit = [&](int i) -> std::uint64_t { return (window[D * i / 32] >> (32 - D - D * i % 32)) & kMask; };
  std::uint64_t remainder = 0, high = 0, low = 0;
  int taken = 0, t = 0;
  // D = 32: each digit of the quotient (under 2^32) from a double estimate, within 2^-19 of the
  // real quotient (three roundings of 2^-53 each), so its truncation is the digit or one off, and
  // one step of the remainder corrects it: a few instructions, where a 64-bit division is a
  // routine of dozens. Every digit of the window is visited (those past the last one needed only
  // feed the sticky bit), so that the window's indices are constants and it stays in registers.
  // On an H100 (float, 2^24 elements, Mode::Exact), the mean over 4096 columns against the L1
  // norm's time: 1.07x with 64-bit divisions in a loop that stopped at the last digit needed (the
  // window in local memory), 1.19x with the estimate in that loop, 1.20x with divisions in this
  // one, 1.04x as here (rows of 4096: 1.06x, 1.04x, 1.04x, 1.02x).
  const double inverse = 1.0 / static_cast<double>(divisor);
  bool sticky = below;
#pragma unroll
  for (int i = 0; i < kDigits; ++i) {
    if (taken > kMore) {
      sticky = sticky || digit(i) != 0;
      continue;
    }
    const std::uint64_t current = (remainder << D) | digit(i);
    std::uint64_t q;
    if constexpr (D == 32) {
      q = static_cast<std::uint64_t>(static_cast<double>(current) * inverse);
      const std::int64_t r = static_cast<std::int64_t>(current - q * divisor);  // within (-divisor, 2 divisor)
      if (r < 0) --q;
      else if (r >= static_cast<std::int64_t>(divisor)) ++q;
    } else {
      q = current / divisor;
    }
    remainder = current - q * divisor;
    if (taken > 0) {
      low = (low << D) | q;
      ++taken;
    } else if (q != 0) {
      high = q;
      taken = 1;
    }
    t = i + 1;
  }
  sticky = sticky || remainder != 0;
  // high * 2^64 + low, its top 64 bits in m: high has D - lz bits, low gives the other 64 - D + lz.
  const int lz = leading_zeros64(high) - (64 - D);
  const int shift = D - lz;  // 1 .. D
  sticky = sticky || (low & ((std::uint64_t(1) << shift) - 1)) != 0;
  const std::uint64_t m = (high << (64 - D + lz)) | (low >> shift);
  // The last digit taken, t - 1, counts units of 2^(160 - D t).
  return {m | (sticky ? 1 : 0), 160 - D * t + shift};
}
// The same for any divisor from 1 to 2^48 - 1.
FASTREDUCE_HOST_DEVICE Scaled divide_window(const std::uint32_t (&window)[5], bool below, std::uint64_t divisor) {
  return divisor >> 32 == 0 ? divide_window_in<32>(window, below, divisor) : divide_window_in<16>(window, below, divisor);
}

// Whether the finite double x lies exactly halfway between two neighbours of format F (the largest
// finite value and the overflow threshold included): its significand's bits under F's last bit are
// 1 followed by zeros. Rounding a double quotient into F rounds it twice where x is such a point and
// the exact quotient is not (Mode::Exact's mean of short axes).
template <BinaryFormat F>
FASTREDUCE_HOST_DEVICE bool is_midpoint(double x) {
  const std::uint64_t bits = double_bits(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  if (biased == 0) return false;  // below F's smallest subnormal's half, for every F narrower than double
  const int exponent = biased - 1023;
  if (exponent > F.bias) return false;
  const int last_bit = (exponent < F.min_exponent ? F.min_exponent : exponent) - (F.precision - 1);
  const int drop = last_bit - (exponent - 52);  // the significand's bits under F's last bit
  if (drop <= 0 || drop > 53) return false;
  const std::uint64_t significand = (bits & ((std::uint64_t(1) << 52) - 1)) | (std::uint64_t(1) << 52);
  return (significand & ((std::uint64_t(1) << drop) - 1)) == std::uint64_t(1) << (drop - 1);
}

FASTREDUCE_HOST_DEVICE double double_from_bits(std::uint64_t bits) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  return std::bit_cast<double>(bits);
#endif
}

// A double q that a value v was rounded to, with residual = v - q (its sign is what counts), made
// safe to round once more into F: rounding q into F rounds twice only where q is a midpoint of F
// that v is not, and there q moves one double ulp toward v (up in magnitude where the residual has
// q's sign), which leaves no midpoint of F between them. Else q itself.
template <BinaryFormat F>
FASTREDUCE_HOST_DEVICE double off_midpoint(double q, double residual) {
  if (residual == 0.0 || !is_midpoint<F>(q)) return q;
  const std::uint64_t bits = double_bits(q);
  return double_from_bits((residual > 0.0) == (q > 0.0) ? bits + 1 : bits - 1);
}

// The exact value of a pair of finite doubles, sum + error (their sum finite), rounded once to
// float (nearest even): one IEEE addition gives it rounded to double and TwoSum its residual,
// off_midpoint the double that converts as the exact value would. (TermCheck's dot product of
// short axes, detail/exact_axis.cuh.)
FASTREDUCE_HOST_DEVICE float pair_to_float(double sum, double error) {
  const TwoSum t = two_sum(sum, error);
  return static_cast<float>(off_midpoint<kFloatFormat>(t.sum, t.error));  // round to nearest even, host and device alike
}
FASTREDUCE_HOST_DEVICE float float_from_bits(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

// The variance's numerator (Mode::Exact): N = n S2 - S1^2 exactly, in 32-bit digits (least
// significant first), and N 2^-298 rounded once to double (nearest even). a: |S1| in units of
// 2^-149 (kMomentDigits / 2 digits); b: S2 in units of 2^-298 (kMomentDigits digits; sums of
// squares of float, half and bfloat16 values have no bit below 2^-298). For sums of fewer than
// 2^40 such elements |S1| < 2^168 (below 2^317 units) and S2 < 2^296 (below 2^594 units), so N <
// 2^634 fits kMomentDigits digits; n < 2^40, and n S2 >= S1^2, as for any data. Its two forms below
// (exact limbs, exact pairs) hand the same integers to this one rounding: the same bits.
inline constexpr int kMomentDigits = 24;
FASTREDUCE_HOST_DEVICE double variance_numerator_of_digits(const std::uint32_t (&a)[kMomentDigits / 2],
                                                           const std::uint32_t (&b)[kMomentDigits], std::uint64_t n) {
  constexpr int D = kMomentDigits;
  std::uint32_t square[D] = {};  // S1^2, units of 2^-298
  for (int i = 0; i < D / 2; ++i) {
    std::uint64_t carry = 0;
    for (int j = 0; j < D / 2; ++j) {
      const std::uint64_t t = std::uint64_t(a[i]) * a[j] + square[i + j] + carry;
      square[i + j] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
    square[i + D / 2] = static_cast<std::uint32_t>(carry);
  }
  // n S2 (n below 2^40: two 32-bit digits), minus S1^2.
  std::uint32_t numerator[D] = {};
  const std::uint32_t n_digits[2] = {static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n >> 32)};
  for (int i = 0; i < 2; ++i) {
    std::uint64_t carry = 0;
    for (int j = 0; i + j < D; ++j) {
      const std::uint64_t t = std::uint64_t(n_digits[i]) * b[j] + numerator[i + j] + carry;
      numerator[i + j] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
  }
  std::int64_t borrow = 0;
  for (int j = 0; j < D; ++j) {
    const std::int64_t t = std::int64_t(numerator[j]) - std::int64_t(square[j]) - borrow;
    numerator[j] = static_cast<std::uint32_t>(t);
    borrow = t < 0 ? 1 : 0;
  }
  // N's top 64 bits, everything under them sticky, rounded once.
  int top = D - 1;
  while (top >= 0 && numerator[top] == 0) --top;
  if (top < 0) return 0.0;
  const std::uint64_t d2 = numerator[top], d1 = top >= 1 ? numerator[top - 1] : 0, d0 = top >= 2 ? numerator[top - 2] : 0;
  bool sticky = false;
  for (int j = 0; j < top - 2; ++j) sticky = sticky || numerator[j] != 0;
  const int lz = leading_zeros64(d2) - 32;
  std::uint64_t m = (((d2 << 32) | d1) << lz) | (lz > 0 ? d0 >> (32 - lz) : 0);
  m |= (sticky || ((d0 << lz) & 0xFFFFFFFFull) != 0) ? 1 : 0;
  const int scale = -298 + 32 * (top - 1) - lz;
  return double_from_bits(round_scaled<kDoubleFormat>(m, scale, false));
}

// The numerator from the exact sums' limbs (exact_variance_finish_kernel, detail/repro_path.cuh):
// s1, |S1| as normalised limbs (each below 2^32) in units of 2^-149, limb j of weight 2^(32 j),
// s1_limbs of them; s2, S2 in units of 2^-1074 (s2_limbs).
FASTREDUCE_HOST_DEVICE double variance_numerator(const unsigned long long* s1, unsigned s1_limbs,
                                                 const unsigned long long* s2, unsigned s2_limbs, std::uint64_t n) {
  constexpr int D = kMomentDigits;
  std::uint32_t a[D / 2] = {};  // |S1|, units of 2^-149
  for (unsigned j = 0; j < s1_limbs && j < unsigned(D / 2); ++j) a[j] = static_cast<std::uint32_t>(s1[j]);
  // S2 in units of 2^-298: 2^-298 = 2^(-1074 + 776), 776 = 24 * 32 + 8.
  std::uint32_t b[D] = {};
  for (int j = 0; j < D; ++j) {
    const unsigned lo = 24 + j, hi = 25 + j;
    const std::uint64_t low = lo < s2_limbs ? s2[lo] : 0, high = hi < s2_limbs ? s2[hi] : 0;
    b[j] = static_cast<std::uint32_t>((low >> 8) | (high << 24));
  }
  return variance_numerator_of_digits(a, b, n);
}

// Adds x, a finite double that is a whole multiple of 2^unit, to the two's complement integer of N
// 32-bit digits (least significant first) that counts units of 2^unit. The sum must fit.
template <int N>
FASTREDUCE_HOST_DEVICE void add_to_digits(std::uint32_t (&digits)[N], double x, int unit) {
  const std::uint64_t bits = double_bits(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  std::uint64_t m = bits & ((std::uint64_t(1) << 52) - 1);
  if (biased != 0) m |= std::uint64_t(1) << 52;
  if (m == 0) return;
  int shift = (biased != 0 ? biased - 1075 : -1074) - unit;
  if (shift < 0) {  // bits under the unit are zero (x is a multiple of it)
    m >>= -shift;
    shift = 0;
  }
  const int q = shift / 32, r = shift % 32;
  const std::uint64_t low = m << r, high = r != 0 ? m >> (64 - r) : 0;
  const std::int64_t parts[3] = {static_cast<std::int64_t>(low & 0xFFFFFFFFull), static_cast<std::int64_t>(low >> 32),
                                 static_cast<std::int64_t>(high)};
  const bool negative = (bits >> 63) != 0;
  std::int64_t carry = 0;
  for (int j = q; j < N; ++j) {
    const std::int64_t part = j - q < 3 ? parts[j - q] : 0;
    const std::int64_t t = std::int64_t(digits[j]) + (negative ? -part : part) + carry;
    digits[j] = static_cast<std::uint32_t>(t);
    carry = t >> 32;  // arithmetic shift: floor division by 2^32 (a borrow is -1)
    if (j - q >= 2 && carry == 0) break;
  }
}

// a b as an unevaluated pair: `sum` the rounded product, `error` its exact remainder (by a fused
// multiply-add; exact where the product neither overflows nor comes within 2^106 of the subnormals).
FASTREDUCE_HOST_DEVICE TwoSum two_product(double a, double b) {
#if defined(__CUDA_ARCH__)
  const double p = __dmul_rn(a, b);
  return {p, __fma_rn(a, b, -p)};
#else
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
#endif
}

// The variance's numerator N = n (s2 + e2) - (s1 + e1)^2 from exact pairs, rounded once to double,
// by a filter: the ten exact terms (two_product of n s2, n e2, s1^2, 2 s1 e1 and e1^2) summed in
// double-double (TwoSum, the errors added in double).
//   - Where every addition of the errors was exact (most rows: few or no errors), hi + lo is N
//     and one addition rounds it.
//   - Otherwise hi + lo is within 2^-96 of the terms' magnitudes of N (ten error additions, each
//     within 2^-53 of a sum of errors that are each within 2^-53 of a partial sum: under 2^-99).
//     It rounds to r with the exact residual r.error; where that window round r + r.error lies
//     strictly between the midpoints next to r, r is N rounded.
//   - Else NaN: the digits decide (ties and near-ties, numerators cancelled to within about 2^-43
//     of the terms).
// The pairs of float, half and bfloat16 sums (of up to 4096 elements, VarianceCheck's) have terms
// that are multiples of 2^-298 below 2^281: no overflow, no remainder lost.
FASTREDUCE_HOST_DEVICE double variance_numerator_filter(double s1, double e1, double s2, double e2, std::uint64_t n) {
  const double count = static_cast<double>(n);  // exact: n < 2^53
  const TwoSum products[5] = {two_product(count, s2), two_product(count, e2), two_product(s1, s1),
                              two_product(add_rn(s1, s1), e1), two_product(e1, e1)};
  double hi = 0.0, lo = 0.0, magnitude = 0.0;
  bool exact = true;  // every addition to lo was exact: hi + lo == N
  for (int k = 0; k < 5; ++k) {
    const double terms[2] = {products[k].sum, products[k].error};
    for (double t : terms) {
      if (k >= 2) t = -t;
      const TwoSum u = two_sum(hi, t);
      hi = u.sum;
      const double next = add_rn(lo, u.error);
      exact = exact && sub_rn(next, lo) == u.error && sub_rn(next, u.error) == lo;  // (add_if_exact's test)
      lo = next;
      magnitude = add_rn(magnitude, t < 0.0 ? -t : t);
    }
  }
  if (exact) {
    const double v = add_rn(hi, lo);  // N itself, rounded once
    return v == 0.0 ? 0.0 : v;        // (+0 for N = 0, as the digits: a row of one value)
  }
  const TwoSum r = two_sum(hi, lo);  // r.sum + r.error == hi + lo exactly
  const std::uint64_t bits = double_bits(r.sum);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  if (biased <= 54 || biased == 0x7FF) return quiet_nan();  // zero, tiny or not finite: the digits
  // The midpoints next to r: half an ulp away from zero, half (a quarter below a power of two) toward it.
  const double half = double_from_bits(std::uint64_t(biased - 53) << 52);
  const double toward_zero = (bits & ((std::uint64_t(1) << 52) - 1)) == 0 ? 0.5 * half : half;
  const double window = magnitude * 0x1p-96;
  const double away = (bits >> 63) != 0 ? -r.error : r.error;  // r.error's part away from zero
  return add_rn(away, window) < half && sub_rn(window, away) < toward_zero ? r.sum : quiet_nan();
}

// The numerator from exact pairs (VarianceCheck, detail/exact_axis.cuh): S1 = s1 + e1 exactly (a
// sum of float, half or bfloat16 values: a multiple of 2^-149), S2 = s2 + e2 (their squares: a
// multiple of 2^-298), each pair finite, of a row of n < 2^32 elements: the filter's N where it
// decides, else the digits'.
FASTREDUCE_HOST_DEVICE double variance_numerator_of_pairs(double s1, double e1, double s2, double e2, std::uint64_t n) {
  if (const double fast = variance_numerator_filter(s1, e1, s2, e2, n); !(fast != fast)) return fast;  // (NaN: undecided)
  constexpr int D = kMomentDigits;
  std::uint32_t a[D / 2] = {};
  add_to_digits(a, s1, -149);
  add_to_digits(a, e1, -149);
  if ((a[D / 2 - 1] >> 31) != 0) {  // negative: the magnitude is the two's complement
    std::uint64_t carry = 1;
    for (int j = 0; j < D / 2; ++j) {
      const std::uint64_t t = std::uint64_t(~a[j]) + carry;
      a[j] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
  }
  std::uint32_t b[D] = {};
  add_to_digits(b, s2, -298);
  add_to_digits(b, e2, -298);
  return variance_numerator_of_digits(a, b, n);
}

// The variance from its numerator (N 2^-298 rounded to double, n elements): divided by n, then by
// n - correction, each correctly rounded; the standard deviation (root) its square root in double.
// NaN where n <= correction.
FASTREDUCE_HOST_DEVICE double variance_from_numerator(double numerator, std::uint64_t n, std::int64_t correction,
                                                      bool root) {
  const double divisor = static_cast<double>(static_cast<std::int64_t>(n) - correction);
  if (!(divisor > 0.0)) return quiet_nan();
#if defined(__CUDA_ARCH__)
  const double v = __ddiv_rn(__ddiv_rn(numerator, static_cast<double>(n)), divisor);
  return root ? __dsqrt_rn(v) : v;
#else
  const double v = numerator / static_cast<double>(n) / divisor;
  return root ? std::sqrt(v) : v;
#endif
}

}  // namespace fastreduce::primitives
