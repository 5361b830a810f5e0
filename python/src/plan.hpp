// A repeated call's decisions, made once by fastreduce/_api.py and kept in a capsule of
// fastreduce._core ("fastreduce._core.Plan"), and the C interface through which another extension
// module runs it: fastreduce._torch_core, built against torch, which allocates the results with
// torch's allocator in C++ (python/src/torch_core.cpp). The interface is plain C data and function
// pointers, shared the way CPython documents for extension modules (a capsule, "fastreduce._core._C_API"),
// so the two modules need not be built by the same compiler or with the same C++ library flags.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastreduce_python {

// The type codes shared with fastreduce/_api.py (_CODES).
enum Code : int { Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64 };
// The op codes shared with fastreduce/_api.py (_OPS and _FAMILY).
enum OpCode : int {
  OpSum, OpProd, OpMin, OpMax,  // built-in ops (the precompiled engine)
  OpArgMax = 16, OpArgMin, OpMean, OpVar, OpStd, OpNormL1, OpNormL2, OpNormInf, OpDot,
};

inline constexpr const char* kPlanCapsule = "fastreduce._core.Plan";
inline constexpr const char* kApiCapsule = "fastreduce._core._C_API";
inline constexpr int kPlanMaxDims = 64;  // results with more dims are not planned
inline constexpr int kApiVersion = 1;

struct Plan {
  // The engine's call (python/src/core.cpp's reduce and reduce_family; the op codes above).
  int code;    // the input's type code
  int op;      // OpSum ... OpMax, OpArgMax ... OpDot
  int param;   // var, std: the correction
  int mode;    // 0 fast, 1 reproducible, 2 exact
  int result;  // the result kind: core.cpp's ResultKind (built-in ops), family.hpp's FamilyResult (family ops)
  std::uint64_t outer, length, inner;
  std::int64_t outer_stride, length_stride, inner_stride;  // elements
  // What the caller allocates and returns.
  int ndim;
  std::int64_t shape[kPlanMaxDims];  // the result's shape
  int out_code;   // the type of `out`, the engine's output (arg-extremes: the values, of the input's type)
  int want_code;  // the type returned, -1 for out_code's (else one conversion after the engine)
  int values;     // arg-extremes: 1 to return (values, indices), 0 for the indices (int64) alone
};

struct CoreApi {
  int version;  // kApiVersion
  // Enqueues the plan's reduction of `in` (`in2`: dot's second input) into `out` (and `out2`, the
  // arg-extremes' int64 indices) on `stream` and `device`, with temporary storage as
  // fastreduce._core.reduce takes it (temp = 0, temp_bytes = 0: the module's cached storage for
  // eager calls). Returns 0 once enqueued; > 0 where the stream captures a CUDA graph and no storage
  // was given: the bytes to pass in a second call (nothing enqueued); -1 on an error, whose text
  // *error then points to (valid until the thread's next call).
  long long (*run)(const Plan* plan, std::uintptr_t in, std::uintptr_t in2, std::uintptr_t out, std::uintptr_t out2,
                   std::uintptr_t stream, int device, std::uintptr_t temp, std::size_t temp_bytes, const char** error);
};

}  // namespace fastreduce_python
