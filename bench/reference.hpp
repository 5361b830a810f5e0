// CPU references: exact for integers (wrapping like the GPU), compensated long double for
// floating-point sums, so a GPU result can be judged against something more accurate.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
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
