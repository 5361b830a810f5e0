// Launching the engine's kernels: what a kernel can do on a device (queried once, remembered only
// when the query succeeded), and one launch helper for every kernel.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fastreduce::engine {

inline constexpr int kMaxDevices = 64;

struct KernelFacts {
  int ptx_version = 0;    // the virtual architecture the running code was compiled for (90 for sm_90)
  int blocks_per_sm = 0;  // blocks of the launch shape resident on one SM at once; 0: it cannot run here
};

// The facts of `Kernel` launched with Threads threads and SharedBytes of dynamic shared memory on
// `device` (the current device). A failed query returns its error and is asked again next time
// (it may have failed for a reason that passes); a successful one is remembered per device.
template <auto Kernel, unsigned Threads, std::size_t SharedBytes = 0>
cudaError_t kernel_facts(int device, KernelFacts& facts) {
  // One word per device: 0 = not known yet, else (1 << 62) | (ptx_version << 32) | blocks_per_sm.
  static std::array<std::atomic<std::uint64_t>, kMaxDevices> cache{};
  constexpr std::uint64_t kKnown = std::uint64_t(1) << 62;
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
  std::uint64_t word = cache[device].load(std::memory_order_relaxed);
  if (word == 0) {
    cudaFuncAttributes attributes{};
    cudaError_t status = cudaFuncGetAttributes(&attributes, Kernel);
    bool fits = true;
    if (status == cudaSuccess && SharedBytes > 48 * 1024) {  // opt in to more than 48 KiB of dynamic shared memory
      status = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(SharedBytes));
      // A device with less shared memory refuses the opt-in: the kernel cannot run there (0 blocks).
      if (status == cudaErrorInvalidValue) {
        cudaGetLastError();
        status = cudaSuccess;
        fits = false;
      }
    }
    int blocks = 0;
    if (status == cudaSuccess && fits) {
      status = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, Threads, SharedBytes);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();  // the failed query is not left behind as the caller's last error
      return status;
    }
    word = kKnown | (std::uint64_t(attributes.ptxVersion) << 32) | std::uint64_t(std::max(blocks, 0));
    cache[device].store(word, std::memory_order_relaxed);
  }
  facts = {static_cast<int>((word >> 32) & 0x3FFFFFFF), static_cast<int>(word & 0xFFFFFFFF)};
  return cudaSuccess;
}

// A device attribute, per device, queried once (0 for a device index out of range or a failed query).
template <cudaDeviceAttr Attribute>
int device_attribute(int device) {
  static std::array<std::atomic<int>, kMaxDevices> cache{};
  if (device < 0 || device >= kMaxDevices) return 0;
  int value = cache[device].load(std::memory_order_relaxed);
  if (value == 0) {
    if (cudaDeviceGetAttribute(&value, Attribute, device) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    cache[device].store(value, std::memory_order_relaxed);
  }
  return value;
}

inline int compute_major(int device) { return device_attribute<cudaDevAttrComputeCapabilityMajor>(device); }
inline int multiprocessors(int device) {
  return std::max(device_attribute<cudaDevAttrMultiProcessorCount>(device), 1);
}

// An ordinary launch (no block of any engine kernel waits for another block of its grid, so none
// needs co-residency). `dependent`: programmatic dependent launch, for a kernel whose code waits
// for the grid before it (primitives::wait_for_prior_grid); only on sm_90 devices running code
// compiled for sm_90.
template <class Kernel, class... Args>
cudaError_t launch(Kernel kernel, unsigned grid, unsigned threads, std::size_t shared_bytes, cudaStream_t stream,
                   bool dependent, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  if (dependent) {
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  const cudaError_t status = cudaLaunchKernelEx(&config, kernel, args...);
  if (status != cudaSuccess) cudaGetLastError();  // returned to the caller, not left behind as the last error
  return status;
}

// Lets `kernel` use `bytes` of dynamic shared memory beyond the default 48 KiB. Asked right before
// each launch that needs it: a kernel template instantiated in several translation units (the
// header-only entry points) has a host stub in each, and an attribute set through one stub does
// not reach the kernel another stub launches.
template <class Kernel>
cudaError_t allow_shared_memory(Kernel kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  const cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (status != cudaSuccess) cudaGetLastError();
  return status;
}

}  // namespace fastreduce::engine
