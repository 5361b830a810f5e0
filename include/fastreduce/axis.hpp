// fastreduce/axis.hpp: the shape of an axis reduction, shared by the library (fastreduce.cuh)
// and the header-only reductions (reduce.cuh).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastreduce {

// Axis and segmented reductions.
//
//   out[o * inner + i] = op over k < length of in[o * outer_stride + k * length_stride + i * inner_stride]
//
// With the default strides the input is a contiguous (outer, length, inner) array: row sums are
// {outer = rows, length = columns}, column sums {length = rows, inner = columns}, and any group of
// adjacent axes of a contiguous N-d tensor folds into the three. Other strides (in elements, of
// either sign) describe views: a slice of a larger matrix, a transposed tensor. d_in points at
// element (0, 0, 0). The output is always contiguous, outer * inner values.
struct Axis {
  static constexpr std::ptrdiff_t kContiguous = PTRDIFF_MIN;  // the stride of the contiguous layout

  std::size_t outer = 1;
  std::size_t length = 0;  // the reduced axis
  std::size_t inner = 1;
  std::ptrdiff_t outer_stride = kContiguous;   // contiguous: length * inner
  std::ptrdiff_t length_stride = kContiguous;  // contiguous: inner
  std::ptrdiff_t inner_stride = kContiguous;   // contiguous: 1
};

}  // namespace fastreduce
