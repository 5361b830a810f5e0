// The family ops of the Python module (arg-extremes, mean, var, std, norms, dot): the header-only
// kernels of fastreduce/reduce.cuh and fastreduce/stats.cuh, instantiated in family_*.cu (nvcc),
// called from core.cpp (the nanobind module, host C++) through this plain interface.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "fastreduce/axis.hpp"
#include "fastreduce/fastreduce.cuh"
#include "plan.hpp"

namespace fastreduce_python {

struct FamilyCall {
  int code;           // the input type
  int op;             // OpArgMax ... OpDot
  int param;          // Var, Std: the correction
  fastreduce::Options opt;
  std::uintptr_t in;  // the input (x)
  std::uintptr_t in2; // the second input (y) of dot, with x's shape and strides
  fastreduce::Axis axis;
  std::uintptr_t out;   // the result: stat_t<T> of stats and norms (or T, see result), dot_t<T> of
                        // dot; the values (T) of arg-extremes, or 0 for indices only
  std::uintptr_t out2;  // arg-extremes: the indices (int64), or 0
  int result;           // FamilyStat (0), or FamilyNarrow (1): the stats and norms of __half and
                        // __nv_bfloat16 written in the input's own type (every mode)
  cudaStream_t stream;
};
enum FamilyResult : int { FamilyStat = 0, FamilyNarrow = 1 };

// Bytes the op needs besides the engine's storage (arg-extremes with values: their {value,
// index} pairs, split into out and out2 after the reduction; the indices alone are written by the
// reduction itself); placed first in the temporary storage.
template <class T>
std::size_t family_extra_bytes_typed(const FamilyCall& call);

// temp == nullptr: bytes = the engine's storage for the call (nothing enqueued). Otherwise
// enqueues the reduction on call.stream with the engine's storage [temp, temp + bytes) and `extra`
// (family_extra_bytes_typed of it). A cudaError_t and, where the engine gives one, a message.
// Instantiated for float, double, __half and __nv_bfloat16 (family_*.cu).
template <class T>
cudaError_t family_enqueue_typed(const FamilyCall& call, void* extra, void* temp, std::size_t& bytes,
                                 const char** message);

}  // namespace fastreduce_python
