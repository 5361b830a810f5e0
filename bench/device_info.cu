#include <cuda_runtime.h>

#include "device_info.hpp"
#include "timing.hpp"

namespace fastreduce::bench {

std::optional<DeviceInfo> current_device(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    if (why != nullptr) *why = status != cudaSuccess ? cudaGetErrorString(status) : "0 devices";
    cudaGetLastError();
    return std::nullopt;
  }
  DeviceInfo info;
  cudaGetDevice(&info.index);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, info.index) != cudaSuccess) return std::nullopt;
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.sms = prop.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  info.memory_bytes = prop.totalGlobalMem;
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, info.index);
  cudaDeviceGetAttribute(&info.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, info.index);
  info.memory_clock_mhz = clock_khz / 1000.0;
  return info;
}

double measure_copy_gbps(std::size_t bytes) {
  void* src = nullptr;
  void* dst = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
    cudaFree(src);
    cudaGetLastError();
    return 0.0;
  }
  cudaMemset(src, 0x3c, bytes);
  const Timing t = time_each([&](int) { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0); },
                             0, {.warmup = 3, .repetitions = 20});
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * double(bytes) / (t.median_us * 1e-6) / 1e9;
}

}  // namespace fastreduce::bench
