// Host-side check that a pointer can be dereferenced by the current device.
#pragma once

#include <cuda_runtime.h>

namespace fastreduce::primitives {

// cudaSuccess for device, managed and mapped host memory; cudaErrorInvalidDevicePointer for
// ordinary (unregistered) host memory. Costs one driver lookup, no synchronisation.
inline cudaError_t check_device_pointer(const void* pointer) {
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

}  // namespace fastreduce::primitives
