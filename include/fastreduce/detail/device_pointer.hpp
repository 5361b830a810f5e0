// Host-side check that a pointer can be dereferenced by the current device.
#pragma once

#include <cuda.h>  // CUdeviceptr, CUresult: types only (the driver function is looked up at run time)
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace fastreduce::primitives {

enum class PointerKind { Inaccessible, Device, MappedHost };

// What the current device can do with `pointer`: device and managed memory, mapped (pinned or
// registered) host memory, or nothing (ordinary host memory). One driver lookup (0.26 us on an
// H100's host), no synchronisation.
inline PointerKind pointer_kind(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // the query's failure is not a sticky error; do not leave it behind
    return PointerKind::Inaccessible;
  }
  if (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged) return PointerKind::Device;
  if (attributes.type == cudaMemoryTypeHost && attributes.devicePointer != nullptr) return PointerKind::MappedHost;
  return PointerKind::Inaccessible;
}

// The device allocation that holds `pointer`, as [begin, end) addresses; [pointer, pointer + 1)
// where the driver does not say. The driver is asked only when a context is current on this
// thread (a thread that has not launched anything yet may have none: its first launch binds it).
inline std::array<std::uintptr_t, 2> allocation_range(const void* pointer) {
  using GetRange = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  using GetContext = CUresult (*)(CUcontext*);
  struct Driver {
    GetRange get_range = nullptr;
    GetContext get_context = nullptr;
  };
  static const Driver driver = [] {
    auto find = [](const char* name) -> void* {
      void* function = nullptr;
      cudaDriverEntryPointQueryResult found{};
      if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) != cudaSuccess ||
          found != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        return nullptr;
      }
      return function;
    };
    return Driver{reinterpret_cast<GetRange>(find("cuMemGetAddressRange")),
                  reinterpret_cast<GetContext>(find("cuCtxGetCurrent"))};
  }();
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  CUcontext context = nullptr;
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (driver.get_range == nullptr || driver.get_context == nullptr || driver.get_context(&context) != CUDA_SUCCESS ||
      context == nullptr || driver.get_range(&base, &size, CUdeviceptr(address)) != CUDA_SUCCESS || size == 0) {
    return {address, address + 1};
  }
  return {std::uintptr_t(base), std::uintptr_t(base) + size};
}

// cudaSuccess where the device can dereference `pointer`, cudaErrorInvalidDevicePointer for
// ordinary host memory. Each thread remembers the last few device allocations it found, so that a
// loop over buffers, or over slices of one allocation, pays the driver lookups once per
// allocation. Only device and managed memory is remembered: registered host memory can be
// unregistered and its addresses reused by plain host memory. (A pointer into a device
// allocation that was freed is not caught, as no cheap check catches it.)
inline cudaError_t check_device_pointer(const void* pointer) {
  constexpr int kRemembered = 8;
  thread_local std::array<std::array<std::uintptr_t, 2>, kRemembered> remembered{};
  thread_local int next = 0;
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  for (const auto& [begin, end] : remembered) {
    if (address >= begin && address < end) return cudaSuccess;
  }
  const PointerKind kind = pointer_kind(pointer);
  if (kind == PointerKind::Device) {
    remembered[next] = allocation_range(pointer);
    next = (next + 1) % kRemembered;
  }
  return kind == PointerKind::Inaccessible ? cudaErrorInvalidDevicePointer : cudaSuccess;
}

}  // namespace fastreduce::primitives
