// A non-commutative op for the tests of users' ops: maps x -> a x + b over the integers mod 2^32,
// composed in index order (combining f then g gives g(f(x))).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fastreduce::testing {

struct Affine {
  std::uint32_t a = 1, b = 0;
};
struct Compose {
  __host__ __device__ Affine identity() const { return {1u, 0u}; }
  __host__ __device__ Affine operator()(const Affine& f, const Affine& g) const { return {g.a * f.a, g.a * f.b + g.b}; }
};

}  // namespace fastreduce::testing
