// References in binary128 (__float128, quad precision): mean and M2 in two passes, sums of
// products. Compiled by the host compiler (tests/gpu/quad_reference.cpp).
#pragma once

#include <cstddef>

namespace fastreduce::testing {

struct QuadMoments {
  double mean;  // rounded once from quad
  double m2;    // the sum of squared deviations from the exact-to-quad mean, rounded once
};
QuadMoments quad_moments(const double* x, std::size_t n);
// sum |x|, sqrt(sum x^2) and sum x y, each rounded once from quad.
double quad_norm1(const double* x, std::size_t n);
double quad_norm2(const double* x, std::size_t n);
double quad_dot(const double* x, const double* y, std::size_t n);

}  // namespace fastreduce::testing
