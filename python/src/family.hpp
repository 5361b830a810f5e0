// The family ops of the Python module (arg-extremes, mean, var, std, norms, dot): the header-only
// kernels of fastreduce/reduce.cuh and fastreduce/stats.cuh, instantiated in family_*.cu (nvcc),
// called from core.cpp (the nanobind module, host C++) through this plain interface.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "fastreduce/axis.hpp"
#include "fastreduce/fastreduce.cuh"

namespace fastreduce_python {

// The type codes shared with fastreduce/_api.py (_CODES).
enum Code : int { Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64 };
// The op codes shared with fastreduce/_api.py (_OPS and _FAMILY).
enum OpCode : int {
  OpSum, OpProd, OpMin, OpMax,  // built-in ops (the precompiled engine)
  OpArgMax = 16, OpArgMin, OpMean, OpVar, OpStd, OpNormL1, OpNormL2, OpNormInf, OpDot,
};

struct FamilyCall {
  int code;           // the input type
  int op;             // OpArgMax ... OpDot
  int param;          // Var, Std: the correction
  fastreduce::Options opt;
  std::uintptr_t in;  // the input (x)
  std::uintptr_t in2; // the second input (y) of dot, with x's shape and strides
  fastreduce::Axis axis;
  std::uintptr_t out;   // the result: stat_t<T> of stats and norms, dot_t<T> of dot; the values
                        // (T) of arg-extremes, or 0 for indices only
  std::uintptr_t out2;  // arg-extremes: the indices (int64), or 0
  cudaStream_t stream;
};

// Bytes the op needs besides the engine's storage (arg-extremes: their {value, index} pairs,
// split into out and out2 after the reduction); placed first in the temporary storage.
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
