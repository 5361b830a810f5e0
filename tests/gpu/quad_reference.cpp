#include "quad_reference.hpp"

#include <cmath>

namespace fastreduce::testing {

QuadMoments quad_moments(const double* x, std::size_t n) {
  if (n == 0) return {NAN, NAN};
  __float128 sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += x[i];
  const __float128 mean = sum / static_cast<__float128>(n);
  __float128 m2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const __float128 d = x[i] - mean;
    m2 += d * d;
  }
  return {static_cast<double>(mean), static_cast<double>(m2)};
}

double quad_norm1(const double* x, std::size_t n) {
  __float128 sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += x[i] < 0 ? -static_cast<__float128>(x[i]) : static_cast<__float128>(x[i]);
  return static_cast<double>(sum);
}

double quad_norm2(const double* x, std::size_t n) {
  // Quad's exponent range holds the square of every double, subnormals and the largest included.
  __float128 sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<__float128>(x[i]) * x[i];
  // sqrt in long double (64-bit significand) of the quad sum's leading part, then rounded to double.
  return static_cast<double>(std::sqrt(static_cast<long double>(sum)));
}

double quad_dot(const double* x, const double* y, std::size_t n) {
  __float128 sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<__float128>(x[i]) * y[i];
  return static_cast<double>(sum);
}

}  // namespace fastreduce::testing
