// fastreduce._core: the engine's axis reductions for the Python package, on raw device pointers.
//
// The Python layer (fastreduce/_api.py) reads the array (DLPack or __cuda_array_interface__),
// folds the reduced dims into the engine's (outer, length, inner) with strides, allocates the
// result in the array's framework and calls reduce() (the built-in ops, the precompiled engine) or
// reduce_family() (arg-extremes, mean, var, std, norms, dot: the header-only family of
// fastreduce/reduce.cuh and stats.cuh, instantiated in family_*.cu) here with the pointers and the
// stream. This side switches on the type and op, provides the temporary storage and turns errors
// into exceptions.
//
// Temporary storage, three ways (the last two arguments of both calls):
//   temp = 0, temp_bytes = 0 (eager calls): a buffer cached per device and stream, grown with
//     stream-ordered allocations, never shrunk: no allocation after the first call of a given
//     size on a stream. Its first word is the engine's finish counter (Options::finish_counter,
//     zeroed when the buffer is allocated), so that a reduction to one result over several blocks
//     is one launch. But while `stream` is capturing a CUDA graph the cache is never touched:
//     nothing is enqueued and the call returns the bytes it needs (> 0), for the caller to
//     allocate them from its framework (torch: the graph's private pool, freed with the graph) and
//     call again with them.
//   temp != 0: the caller's storage [temp, temp + temp_bytes) (ValueError when it is too small).
//   (temp = 0 with temp_bytes != 0: ValueError.)
// Both calls return 0 once the work is enqueued. No synchronisation anywhere.

#include <cuda_runtime.h>
#include <nanobind/nanobind.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "family.hpp"
#include "fastreduce/fastreduce.cuh"
#include "plan.hpp"

namespace nb = nanobind;
namespace fr = fastreduce;

namespace {

using namespace fastreduce_python;

// Temporary storage per (device, stream) of eager calls: grown with stream-ordered allocations,
// never shrunk; the finish counter in its first kAlign bytes. Captured work never uses it (a graph
// replayed later, on any stream, would share it with the eager calls of the moment).
struct Temp {
  void* data = nullptr;
  std::size_t bytes = 0;
  std::mutex mutex;
};
std::mutex registry_mutex;
// Keyed by device, stream and, for cudaStreamPerThread (one handle, a different stream in every
// thread), the thread.
using TempKey = std::tuple<int, std::uintptr_t, std::size_t>;
std::map<TempKey, Temp>& registry() {
  static auto* map = new std::map<TempKey, Temp>;  // outlives the interpreter's teardown
  return *map;
}

void check(cudaError_t e, const char* what, const char* message = nullptr) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    std::string text = std::string("fastreduce: ") + what + ": ";
    if (message != nullptr) text += std::string(message) + " (" + cudaGetErrorName(e) + ")";
    else text += std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
    throw std::runtime_error(text);
  }
}

constexpr std::size_t kAlign = 256;
constexpr std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Runs enqueue(extra, temp, bytes, counter, message) (temp == nullptr: bytes = the engine's storage,
// nothing enqueued) with storage for `extra` bytes (the op's own, first) and the engine's (after
// it), taken as the header says; `counter`: the cached storage's finish counter, or nullptr (the
// caller's storage, whose contents are unknown). Returns 0, or under capture with no storage given
// the bytes needed.
template <class Enqueue>
std::size_t execute(int device, cudaStream_t stream, std::size_t extra, std::uintptr_t temp, std::size_t temp_bytes,
                    const Enqueue& enqueue) {
  const std::size_t head = round_up(extra);
  const char* message = nullptr;
  auto plan = [&]() {
    std::size_t bytes = 0;
    check(enqueue(nullptr, nullptr, bytes, nullptr, &message), "planning", message);
    return std::max<std::size_t>(head + bytes, kAlign);
  };
  if (temp != 0) {
    const std::size_t need = plan();
    if (temp_bytes < need) {
      throw std::invalid_argument("fastreduce: the temporary storage given has " + std::to_string(temp_bytes) +
                                  " bytes, the reduction needs " + std::to_string(need));
    }
    char* base = reinterpret_cast<char*>(temp);
    std::size_t have = temp_bytes - head;
    check(enqueue(base, base + head, have, nullptr, &message), "reduce", message);
    return 0;
  }
  if (temp_bytes != 0) throw std::invalid_argument("fastreduce: temp_bytes without temp");
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &capturing), "cudaStreamIsCapturing");
  // Captured: the caller allocates `need` bytes from its framework and calls again with them.
  if (capturing != cudaStreamCaptureStatusNone) return plan();
  Temp* t = nullptr;
  {
    std::lock_guard<std::mutex> guard(registry_mutex);
    const std::size_t thread =
        stream == cudaStreamPerThread ? std::hash<std::thread::id>{}(std::this_thread::get_id()) : 0;
    t = &registry()[TempKey{device, reinterpret_cast<std::uintptr_t>(stream), thread}];
  }
  std::lock_guard<std::mutex> lock(t->mutex);
  // The cached buffer: the finish counter, then the op's own bytes, then the engine's.
  auto enqueue_cached = [&]() {
    char* base = static_cast<char*>(t->data) + kAlign;
    std::size_t have = t->bytes - kAlign - head;
    return enqueue(base, base + head, have, static_cast<unsigned*>(t->data), &message);
  };
  // One planning pass when the storage suffices (most calls): the engine checks the size itself and
  // says cudaErrorInvalidValue, before enqueuing anything, when it does not.
  if (t->data != nullptr && t->bytes >= kAlign + head + kAlign) {
    const cudaError_t first = enqueue_cached();
    if (first != cudaErrorInvalidValue) {
      check(first, "reduce", message);
      return 0;
    }
    cudaGetLastError();
    message = nullptr;
  }
  const std::size_t need = kAlign + plan();
  if (t->bytes < need) {
    if (t->data != nullptr) check(cudaFreeAsync(t->data, stream), "cudaFreeAsync");
    t->data = nullptr;
    t->bytes = 0;
    const std::size_t grown = std::max<std::size_t>(need, std::size_t(1) << 20);  // most reductions need less
    void* fresh = nullptr;
    check(cudaMallocAsync(&fresh, grown, stream), "cudaMallocAsync (temporary storage)");
    if (const cudaError_t e = cudaMemsetAsync(fresh, 0, kAlign, stream); e != cudaSuccess) {
      cudaFreeAsync(fresh, stream);
      check(e, "cudaMemsetAsync (the finish counter)");
    }
    t->data = fresh;
    t->bytes = grown;
  }
  check(enqueue_cached(), "reduce", message);
  return 0;
}

// Python's mode codes (fastreduce/_api.py's _MODES) as the engine's Mode.
fr::Mode mode_of(int mode) {
  switch (mode) {
    case 0: return fr::Mode::Fast;
    case 1: return fr::Mode::Reproducible;
    case 2: return fr::Mode::Exact;
    default: throw std::invalid_argument("fastreduce: unknown mode code");
  }
}

// Makes `device` current for the call's lifetime.
struct OnDevice {
  int previous = -1;
  int device;
  explicit OnDevice(int d) : device(d) {
    check(cudaGetDevice(&previous), "cudaGetDevice");
    if (previous != device) check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~OnDevice() {
    if (previous != device && previous >= 0) cudaSetDevice(previous);
  }
};

// The type of the results (reduce's `result` argument): the engine's accumulator (acc_t<T, Op>),
// the input's own type (float16, bfloat16: rounded once by the engine's finish step), or 8 bytes
// (int32 and uint32 sums and products, accumulated in them).
enum ResultKind { ResultAcc = 0, ResultNarrow = 1, ResultWide = 2 };

template <class T, class Op>
std::size_t run(const fr::Axis& axis, std::uintptr_t in, std::uintptr_t out, int result, cudaStream_t stream,
                const fr::Options& opt, int device, std::uintptr_t temp, std::size_t temp_bytes) {
  const T* d_in = reinterpret_cast<const T*>(in);
  auto go = [&](auto* d_out) {
    return execute(device, stream, 0, temp, temp_bytes,
                   [&](void*, void* storage, std::size_t& bytes, unsigned* counter, const char**) {
                     fr::Options o = opt;
                     o.finish_counter = counter;
                     return fr::reduce_axis_async(storage, bytes, d_in, d_out, axis, Op{}, stream, o);
                   });
  };
  if (result == ResultNarrow) {
    if constexpr (fr::narrow_result<T, Op>) return go(reinterpret_cast<T*>(out));
    throw std::invalid_argument("fastreduce: results in the input's type are for float16 and bfloat16");
  }
  if (result == ResultWide) {
    if constexpr (fr::wide_result<T, Op, fr::wide_t<T>>) {
      return go(reinterpret_cast<fr::wide_t<T>*>(out));
    }
    throw std::invalid_argument("fastreduce: 64-bit results are for int32 and uint32 sums and products");
  }
  if (result != ResultAcc) throw std::invalid_argument("fastreduce: unknown result kind");
  return go(reinterpret_cast<fr::acc_t<T, Op>*>(out));
}

template <class T>
std::size_t run_op(int op, const fr::Axis& axis, std::uintptr_t in, std::uintptr_t out, int result, cudaStream_t stream,
                   const fr::Options& opt, int device, std::uintptr_t temp, std::size_t temp_bytes) {
  switch (op) {
    case OpSum: return run<T, fr::Sum>(axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case OpProd: return run<T, fr::Prod>(axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case OpMin: return run<T, fr::Min>(axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case OpMax: return run<T, fr::Max>(axis, in, out, result, stream, opt, device, temp, temp_bytes);
    default: throw std::invalid_argument("fastreduce: unknown op code");
  }
}

// out[o * inner + i] = op over k < length of in[o * outer_stride + k * length_stride + i * inner_stride],
// on `device`, enqueued on `stream` (a cudaStream_t as an integer). Strides in elements. The built-in
// ops (sum, prod, min, max); `out` holds results of the type `result` says (ResultKind).
// Temporary storage as the header says.
std::size_t reduce(int code, int op, int mode, std::uintptr_t in, std::size_t outer, std::size_t length,
                   std::size_t inner, std::int64_t outer_stride, std::int64_t length_stride, std::int64_t inner_stride,
                   std::uintptr_t out, int result, std::uintptr_t stream_handle, int device, std::uintptr_t temp,
                   std::size_t temp_bytes) {
  const fr::Options opt{.mode = mode_of(mode)};
  OnDevice on(device);
  const fr::Axis axis{outer, length, inner, outer_stride, length_stride, inner_stride};
  auto* stream = reinterpret_cast<cudaStream_t>(stream_handle);
  switch (code) {
    case Bool: return run_op<bool>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case I8: return run_op<std::int8_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case U8: return run_op<std::uint8_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case I16: return run_op<std::int16_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case U16: return run_op<std::uint16_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case I32: return run_op<std::int32_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case U32: return run_op<std::uint32_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case I64: return run_op<std::int64_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case U64: return run_op<std::uint64_t>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case F16: return run_op<__half>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case BF16: return run_op<__nv_bfloat16>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case F32: return run_op<float>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    case F64: return run_op<double>(op, axis, in, out, result, stream, opt, device, temp, temp_bytes);
    default: throw std::invalid_argument("fastreduce: unknown type code");
  }
}

template <class T>
std::size_t run_family(const FamilyCall& call, int device, std::uintptr_t temp, std::size_t temp_bytes) {
  return execute(device, call.stream, family_extra_bytes_typed<T>(call), temp, temp_bytes,
                 [&](void* extra, void* storage, std::size_t& bytes, unsigned* counter, const char** message) {
                   FamilyCall c = call;
                   c.opt.finish_counter = counter;
                   return family_enqueue_typed<T>(c, extra, storage, bytes, message);
                 });
}

// The family ops (OpArgMax ... OpDot): out, out2 and the types as family.hpp's FamilyCall says.
std::size_t reduce_family(int code, int op, int param, int mode, std::uintptr_t in, std::uintptr_t in2,
                          std::size_t outer, std::size_t length, std::size_t inner, std::int64_t outer_stride,
                          std::int64_t length_stride, std::int64_t inner_stride, std::uintptr_t out,
                          std::uintptr_t out2, int result, std::uintptr_t stream_handle, int device,
                          std::uintptr_t temp, std::size_t temp_bytes) {
  if (op < OpArgMax || op > OpDot) throw std::invalid_argument("fastreduce: unknown op code");
  if (result != FamilyStat && result != FamilyNarrow) throw std::invalid_argument("fastreduce: unknown result kind");
  if (result == FamilyNarrow && (op < OpMean || op > OpNormInf || (code != F16 && code != BF16))) {
    throw std::invalid_argument("fastreduce: results in the input's type are for the float16 and bfloat16 means, "
                                "variances and norms");
  }
  const bool arg = op == OpArgMax || op == OpArgMin;
  const fr::Options opt{.mode = mode_of(mode)};
  OnDevice on(device);
  const FamilyCall call{code,
                        op,
                        param,
                        opt,
                        in,
                        in2,
                        fr::Axis{outer, length, inner, outer_stride, length_stride, inner_stride},
                        out,
                        out2,
                        result,
                        reinterpret_cast<cudaStream_t>(stream_handle)};
  switch (code) {
    case F32: return run_family<float>(call, device, temp, temp_bytes);
    case F64: return run_family<double>(call, device, temp, temp_bytes);
    case F16: return run_family<__half>(call, device, temp, temp_bytes);
    case BF16: return run_family<__nv_bfloat16>(call, device, temp, temp_bytes);
    default: break;
  }
  if (arg) {
    switch (code) {
      case I8: return run_family<std::int8_t>(call, device, temp, temp_bytes);
      case U8: return run_family<std::uint8_t>(call, device, temp, temp_bytes);
      case I16: return run_family<std::int16_t>(call, device, temp, temp_bytes);
      case I32: return run_family<std::int32_t>(call, device, temp, temp_bytes);
      case I64: return run_family<std::int64_t>(call, device, temp, temp_bytes);
      default: break;
    }
  }
  throw std::invalid_argument("fastreduce: this op is not built for this type code");
}

// A plan (plan.hpp) of a repeated call, as a capsule; None where the result has too many dims.
nb::object make_plan(int code, int op, int param, int mode, std::size_t outer, std::size_t length, std::size_t inner,
                     std::int64_t outer_stride, std::int64_t length_stride, std::int64_t inner_stride, int result,
                     const nb::sequence& shape, int out_code, int want_code, bool values) {
  if (op < OpSum || (op > OpMax && op < OpArgMax) || op > OpDot) throw std::invalid_argument("fastreduce: unknown op code");
  mode_of(mode);  // the code's check
  const auto type_code = [](int c) { return c >= Bool && c <= F64; };
  if (!type_code(code) || !type_code(out_code) || (want_code != -1 && !type_code(want_code))) {
    throw std::invalid_argument("fastreduce: unknown type code");
  }
  if (result < 0 || result > (op < OpArgMax ? int(ResultWide) : int(FamilyNarrow))) {
    throw std::invalid_argument("fastreduce: unknown result kind");
  }
  const std::size_t ndim = nb::len(shape);
  if (ndim > std::size_t(kPlanMaxDims)) return nb::none();
  auto plan = std::make_unique<Plan>();
  *plan = Plan{code, op, param, mode, result, outer, length, inner, outer_stride, length_stride, inner_stride,
               static_cast<int>(ndim), {}, out_code, want_code, values ? 1 : 0};
  for (std::size_t d = 0; d < ndim; ++d) plan->shape[d] = nb::cast<std::int64_t>(shape[d]);
  nb::capsule capsule(plan.get(), kPlanCapsule, [](void* p) noexcept { delete static_cast<Plan*>(p); });
  plan.release();
  return capsule;
}

// CoreApi::run (plan.hpp): the plan's call through reduce or reduce_family, errors as text.
long long run_plan(const Plan* p, std::uintptr_t in, std::uintptr_t in2, std::uintptr_t out, std::uintptr_t out2,
                   std::uintptr_t stream, int device, std::uintptr_t temp, std::size_t temp_bytes,
                   const char** error) {
  thread_local std::string text;
  try {
    const std::size_t need =
        p->op < OpArgMax
            ? reduce(p->code, p->op, p->mode, in, p->outer, p->length, p->inner, p->outer_stride, p->length_stride,
                     p->inner_stride, out, p->result, stream, device, temp, temp_bytes)
            : reduce_family(p->code, p->op, p->param, p->mode, in, in2, p->outer, p->length, p->inner,
                            p->outer_stride, p->length_stride, p->inner_stride, out, out2, p->result, stream,
                            device, temp, temp_bytes);
    return static_cast<long long>(need);
  } catch (const std::exception& e) {
    text = e.what();
  } catch (...) {
    text = "fastreduce: unknown error";
  }
  *error = text.c_str();
  return -1;
}

const CoreApi core_api{kApiVersion, &run_plan};

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "fastreduce's engine on raw device pointers (use the functions of the fastreduce package)";
  m.def("reduce", &reduce, nb::arg("code"), nb::arg("op"), nb::arg("mode"), nb::arg("ptr"), nb::arg("outer"),
        nb::arg("length"), nb::arg("inner"), nb::arg("outer_stride"), nb::arg("length_stride"), nb::arg("inner_stride"),
        nb::arg("out"), nb::arg("result"), nb::arg("stream"), nb::arg("device"), nb::arg("temp") = 0,
        nb::arg("temp_bytes") = 0,
        "The built-in ops (0 sum, 1 prod, 2 min, 3 max); results (result) 0 in the engine's accumulator type, "
        "1 in the float16/bfloat16 input's own, 2 in 8 bytes (int32/uint32 sum and prod); returns 0 once enqueued, "
        "or (capturing, no temp given) the temporary bytes to pass in a second call");
  m.def("reduce_family", &reduce_family, nb::arg("code"), nb::arg("op"), nb::arg("param"), nb::arg("mode"),
        nb::arg("ptr"), nb::arg("ptr2"), nb::arg("outer"), nb::arg("length"), nb::arg("inner"),
        nb::arg("outer_stride"), nb::arg("length_stride"), nb::arg("inner_stride"), nb::arg("out"), nb::arg("out2"),
        nb::arg("result"), nb::arg("stream"), nb::arg("device"), nb::arg("temp") = 0, nb::arg("temp_bytes") = 0,
        "The family ops (16 argmax, 17 argmin, 18 mean, 19 var, 20 std, 21 L1, 22 L2, 23 Linf norms, 24 dot); "
        "arg-extremes with out = 0 write the indices alone; result 1: the stats and norms of float16/bfloat16 in "
        "the input's own type, every mode (rounded once by the engine), else 0; returns as reduce");
  m.def("device_count", &device_count, "CUDA devices visible (0 without a driver or GPU)");
  m.def("plan", &make_plan, nb::arg("code"), nb::arg("op"), nb::arg("param"), nb::arg("mode"), nb::arg("outer"),
        nb::arg("length"), nb::arg("inner"), nb::arg("outer_stride"), nb::arg("length_stride"),
        nb::arg("inner_stride"), nb::arg("result"), nb::arg("shape"), nb::arg("out_code"), nb::arg("want_code"),
        nb::arg("values"),
        "A repeated call's plan (python/src/plan.hpp) as a capsule for fastreduce._torch_core.run, or None where "
        "the result has more dims than a plan holds");
  // The C interface of plan.hpp, for fastreduce._torch_core (PyCapsule_Import).
  m.attr("_C_API") = nb::capsule(&core_api, kApiCapsule);
}
