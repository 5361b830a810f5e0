// Fresh random inputs, generated on the device from a seed (never zeros), and their host copies.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fastreduce::bench {

enum class Distribution {
  Positive,  // floats in [0.5, 1.5), integers in [0, 1024): sums without cancellation
  Signed,    // floats in [-1, 1), integers over their whole range
  NearOne,   // floats in [1 - a, 1 + a] with a ~ 4 / sqrt(n); odd integers: products stay nonzero
  SmallIntegers,  // whole numbers 1..15 in any type: float sums are exact up to n = 2^20
  SignedSmallIntegers,  // whole numbers +-1..+-15, never 0: every partial sum of a fixed summation
                        // order is a random walk far inside float's 2^24 (exact, see data.cu)
  SparseBits, // one bit set (or, for `clear`, one bit cleared) per element: and/or tests
  WideExponents  // floating point: +-(1 + u) * 2^k, both signs, k uniform over the type's range
                 // (subnormals included) short of where 2^30 elements could overflow the sum:
                 // the adversarial data of exact sums. Integers: as Signed.
};

// The distribution that gives a meaningful check of `op` ("sum", "prod", "min", ...).
Distribution distribution_for(std::string_view op);

// Fills d[0, n) with values drawn from `dist` by a counter-based hash of (seed, index).
// `clear` flips SparseBits to one bit cleared. Synchronous; returns the CUDA error.
template <class T>
cudaError_t fill_random(T* d, std::size_t n, std::uint64_t seed, Distribution dist, bool clear = false);

// Copies d[0, n) back to the host.
template <class T>
std::vector<T> to_host(const T* d, std::size_t n);

// A fresh seed per call (time and a counter), so no two runs reuse data.
std::uint64_t fresh_seed();

}  // namespace fastreduce::bench
