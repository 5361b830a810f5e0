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

}  // namespace fastreduce::testing
