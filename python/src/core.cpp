// fastreduce._core: the engine's axis reduction for the Python package, on raw device pointers.
//
// The Python layer (fastreduce/_api.py) reads the array (DLPack or __cuda_array_interface__),
// folds the reduced dims into the engine's (outer, length, inner) with strides, allocates the
// result in the array's framework and calls reduce() here with the pointers and the stream. This
// side only switches on the type and op, keeps the temporary storage (per device and stream,
// stream-ordered) and turns errors into exceptions. No synchronisation, no allocation after the
// first call of a given size on a stream.
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "fastreduce/fastreduce.cuh"

namespace nb = nanobind;
namespace fr = fastreduce;

namespace {

// The type codes shared with fastreduce/_api.py (_CODES).
enum Code : int { Bool, I8, U8, I16, U16, I32, U32, I64, U64, F16, BF16, F32, F64 };
enum OpCode : int { OpSum, OpProd, OpMin, OpMax };

// Temporary storage per (device, stream): grown with stream-ordered allocations, never shrunk.
struct Temp {
  void* data = nullptr;
  std::size_t bytes = 0;
  bool captured = false;  // a CUDA graph holds data: it is never freed
  std::mutex mutex;
};
std::mutex registry_mutex;
std::map<std::pair<int, std::uintptr_t>, Temp>& registry() {
  static auto* map = new std::map<std::pair<int, std::uintptr_t>, Temp>;  // outlives the interpreter's teardown
  return *map;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string("fastreduce: ") + what + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
  }
}

template <class T, class Op>
void run(const fr::Axis& axis, std::uintptr_t in, std::uintptr_t out, cudaStream_t stream, const fr::Options& opt,
         int device) {
  using A = fr::acc_t<T, Op>;
  const T* d_in = reinterpret_cast<const T*>(in);
  A* d_out = reinterpret_cast<A*>(out);
  Temp* temp = nullptr;
  {
    std::lock_guard<std::mutex> guard(registry_mutex);
    temp = &registry()[{device, reinterpret_cast<std::uintptr_t>(stream)}];
  }
  std::lock_guard<std::mutex> lock(temp->mutex);
  // One planning pass when the storage suffices (most calls): the engine checks the size itself and
  // says cudaErrorInvalidValue, before enqueuing anything, when it does not.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &capturing), "cudaStreamIsCapturing");
  if (capturing != cudaStreamCaptureStatusNone) temp->captured = true;
  if (temp->data != nullptr) {
    std::size_t have = temp->bytes;
    const cudaError_t first = fr::reduce_axis_async<T, Op>(temp->data, have, d_in, d_out, axis, Op{}, stream, opt);
    if (first != cudaErrorInvalidValue) return check(first, "reduce");
    cudaGetLastError();
  }
  std::size_t bytes = 0;
  check(fr::reduce_axis_async<T, Op>(nullptr, bytes, d_in, d_out, axis, Op{}, stream, opt), "planning");
  if (temp->bytes < bytes) {
    if (capturing != cudaStreamCaptureStatusNone) {
      throw std::runtime_error(
          "fastreduce: this reduction needs more temporary storage than this stream has seen; run it once before "
          "capturing a CUDA graph");
    }
    // A buffer that a captured graph uses stays allocated for the graph's replays (a little memory
    // kept rather than freed under it).
    if (temp->data != nullptr && !temp->captured) check(cudaFreeAsync(temp->data, stream), "cudaFreeAsync");
    temp->captured = false;
    temp->data = nullptr;
    temp->bytes = 0;
    const std::size_t grown = std::max<std::size_t>(bytes, std::size_t(1) << 20);  // most reductions need less
    check(cudaMallocAsync(&temp->data, grown, stream), "cudaMallocAsync (temporary storage)");
    temp->bytes = grown;
  }
  std::size_t have = temp->bytes;
  check(fr::reduce_axis_async<T, Op>(temp->data, have, d_in, d_out, axis, Op{}, stream, opt), "reduce");
}

template <class T>
void run_op(int op, const fr::Axis& axis, std::uintptr_t in, std::uintptr_t out, cudaStream_t stream,
            const fr::Options& opt, int device) {
  switch (op) {
    case OpSum: return run<T, fr::Sum>(axis, in, out, stream, opt, device);
    case OpProd: return run<T, fr::Prod>(axis, in, out, stream, opt, device);
    case OpMin: return run<T, fr::Min>(axis, in, out, stream, opt, device);
    case OpMax: return run<T, fr::Max>(axis, in, out, stream, opt, device);
    default: throw std::invalid_argument("fastreduce: unknown op code");
  }
}

// out[o * inner + i] = op over k < length of in[o * outer_stride + k * length_stride + i * inner_stride],
// on `device`, enqueued on `stream` (a cudaStream_t as an integer). Strides in elements.
void reduce(int code, int op, bool reproducible, std::uintptr_t in, std::size_t outer, std::size_t length,
            std::size_t inner, std::int64_t outer_stride, std::int64_t length_stride, std::int64_t inner_stride,
            std::uintptr_t out, std::uintptr_t stream_handle, int device) {
  int previous = -1;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  if (previous != device) check(cudaSetDevice(device), "cudaSetDevice");
  const fr::Axis axis{outer, length, inner, outer_stride, length_stride, inner_stride};
  const fr::Options opt{.mode = reproducible ? fr::Mode::Reproducible : fr::Mode::Fast};
  auto* stream = reinterpret_cast<cudaStream_t>(stream_handle);
  try {
    switch (code) {
      case Bool: run_op<bool>(op, axis, in, out, stream, opt, device); break;
      case I8: run_op<std::int8_t>(op, axis, in, out, stream, opt, device); break;
      case U8: run_op<std::uint8_t>(op, axis, in, out, stream, opt, device); break;
      case I16: run_op<std::int16_t>(op, axis, in, out, stream, opt, device); break;
      case U16: run_op<std::uint16_t>(op, axis, in, out, stream, opt, device); break;
      case I32: run_op<std::int32_t>(op, axis, in, out, stream, opt, device); break;
      case U32: run_op<std::uint32_t>(op, axis, in, out, stream, opt, device); break;
      case I64: run_op<std::int64_t>(op, axis, in, out, stream, opt, device); break;
      case U64: run_op<std::uint64_t>(op, axis, in, out, stream, opt, device); break;
      case F16: run_op<__half>(op, axis, in, out, stream, opt, device); break;
      case BF16: run_op<__nv_bfloat16>(op, axis, in, out, stream, opt, device); break;
      case F32: run_op<float>(op, axis, in, out, stream, opt, device); break;
      case F64: run_op<double>(op, axis, in, out, stream, opt, device); break;
      default: throw std::invalid_argument("fastreduce: unknown type code");
    }
  } catch (...) {
    if (previous != device) cudaSetDevice(previous);
    throw;
  }
  if (previous != device) cudaSetDevice(previous);
}

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
  m.def("reduce", &reduce, nb::arg("code"), nb::arg("op"), nb::arg("reproducible"), nb::arg("ptr"), nb::arg("outer"),
        nb::arg("length"), nb::arg("inner"), nb::arg("outer_stride"), nb::arg("length_stride"), nb::arg("inner_stride"),
        nb::arg("out"), nb::arg("stream"), nb::arg("device"));
  m.def("device_count", &device_count, "CUDA devices visible (0 without a driver or GPU)");
}
