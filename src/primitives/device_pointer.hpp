// Host-side check that a pointer can be dereferenced by the current device.
#pragma once

#include <cuda_runtime.h>

namespace fastreduce::primitives {

// cudaSuccess for device, managed and mapped host memory; cudaErrorInvalidDevicePointer for
// ordinary (unregistered) host memory. Costs one driver lookup, no synchronisation.
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

// query_device_pointer with a small per-thread memory of pointers found device-accessible, so a
// loop that reuses its output and temporary buffers pays the driver lookup once per buffer
// (0.1 us each on an H200's host, next to a 3.5 us launch).
inline cudaError_t check_device_pointer(const void* pointer) {
  constexpr int kRemembered = 4;
  thread_local const void* remembered[kRemembered] = {};
  thread_local int next = 0;
  for (const void* p : remembered) {
    if (p == pointer && p != nullptr) return cudaSuccess;
  }
  const cudaError_t status = query_device_pointer(pointer);
  if (status == cudaSuccess) {
    remembered[next] = pointer;
    next = (next + 1) % kRemembered;
  }
  return status;
}

}  // namespace fastreduce::primitives
