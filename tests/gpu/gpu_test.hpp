// Shared pieces of the GPU tier: device detection (the tier skips without a GPU), device
// buffers, fresh random inputs, and the quick mode used under compute-sanitizer.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "data.hpp"
#include "device_memory.hpp"

namespace fastreduce::testing {

inline bool gpu_present() {
  static const bool present = [] {
    int count = 0;
    const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    cudaGetLastError();
    return ok;
  }();
  return present;
}

// FASTREDUCE_TEST_QUICK=1 (set by scripts/gpu-check.sh under compute-sanitizer) trims sizes.
inline bool quick() {
  const char* v = std::getenv("FASTREDUCE_TEST_QUICK");
  return v != nullptr && std::strcmp(v, "0") != 0;
}

#define FASTREDUCE_REQUIRE_GPU()                                                  \
  do {                                                                            \
    if (!::fastreduce::testing::gpu_present()) GTEST_SKIP() << "no CUDA device found"; \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

// Device memory owned by a test, with a way to poison it.
template <class T>
class DeviceBuffer : public bench::DeviceArray<T> {
 public:
  using bench::DeviceArray<T>::DeviceArray;
  // Fills every byte with 0xA5, so an unwritten result is noticed; synchronises, so work on
  // any stream launched afterwards sees the poison.
  void poison() {
    cudaMemset(this->get(), 0xA5, std::max<std::size_t>(this->size(), 1) * sizeof(T));
    cudaDeviceSynchronize();
  }
};

template <class T>
T read_back(const T* d) {
  T v{};
  cudaMemcpy(&v, d, sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The edge sizes every path is checked at.
inline std::vector<std::size_t> edge_sizes() {
  if (quick()) return {0, 1, 2, 31, 33, 257, 4097, 65537, (std::size_t(1) << 21) + 3};
  return {0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 65537, (std::size_t(1) << 20) + 3, std::size_t(1) << 24};
}

class NoDeviceNotice : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!gpu_present()) std::printf("no CUDA device found: the GPU tier is skipped\n");
  }
};
inline const auto* const kNoDeviceNotice = ::testing::AddGlobalTestEnvironment(new NoDeviceNotice);

}  // namespace fastreduce::testing
