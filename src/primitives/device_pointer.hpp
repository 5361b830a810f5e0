// Host-side check that a pointer can be dereferenced by the current device.
#pragma once

#include <cuda.h>  // CUdeviceptr, CUresult: types only (the driver function is looked up at run time)
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace fastreduce::primitives {

// cudaSuccess for device, managed and mapped host memory; cudaErrorInvalidDevicePointer for
// ordinary (unregistered) host memory. One driver lookup (0.26 us on an H100's host), no
// synchronisation.
inline cudaError_t query_device_pointer(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // the query's failure is not a sticky error; do not leave it behind
    return cudaErrorInvalidDevicePointer;
  }
  if (attributes.type == cudaMemoryTypeUnregistered) return cudaErrorInvalidDevicePointer;
  if (attributes.type == cudaMemoryTypeHost && attributes.devicePointer == nullptr) {
    return cudaErrorInvalidDevicePointer;
  }
  return cudaSuccess;
}

// The device allocation that holds `pointer`, as [begin, end) addresses; [pointer, pointer + 1)
// where the driver does not know one (host memory, or no driver entry point).
inline std::array<std::uintptr_t, 2> allocation_range(const void* pointer) {
  using GetRange = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
  static const GetRange get_range = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &function, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return GetRange(nullptr);
    }
    return reinterpret_cast<GetRange>(function);
  }();
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (get_range == nullptr || get_range(&base, &size, CUdeviceptr(address)) != CUDA_SUCCESS || size == 0) {
    return {address, address + 1};
  }
  return {std::uintptr_t(base), std::uintptr_t(base) + size};
}

// query_device_pointer with a small per-thread memory of the allocations found device-accessible,
// so that a loop over buffers, or over slices of one allocation, pays the driver lookups once per
// allocation. (A freed allocation's range can only be reused for device memory.)
inline cudaError_t check_device_pointer(const void* pointer) {
  constexpr int kRemembered = 8;
  thread_local std::array<std::array<std::uintptr_t, 2>, kRemembered> remembered{};
  thread_local int next = 0;
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  for (const auto& [begin, end] : remembered) {
    if (address >= begin && address < end) return cudaSuccess;
  }
  const cudaError_t status = query_device_pointer(pointer);
  if (status == cudaSuccess && pointer != nullptr) {
    remembered[next] = allocation_range(pointer);
    next = (next + 1) % kRemembered;
  }
  return status;
}

}  // namespace fastreduce::primitives
