// Shared pieces of the GPU tier: device detection (the tier skips without a GPU), device
// buffers, fresh random inputs with their seeds printed on failure, and the quick mode used
// under compute-sanitizer.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "data.hpp"
#include "device_memory.hpp"
#include "fastreduce/detail/describe.hpp"
#include "fastreduce/detail/policy.hpp"
#include "fastreduce/fastreduce.cuh"

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

// The seeds the running test has drawn, printed after each of its failures.
class SeedLog : public ::testing::EmptyTestEventListener {
 public:
  static SeedLog& instance() {
    static SeedLog* log = [] {
      auto* l = new SeedLog;
      ::testing::UnitTest::GetInstance()->listeners().Append(l);  // gtest owns it from here
      return l;
    }();
    return *log;
  }
  void add(std::uint64_t seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    seeds_.push_back(seed);
  }
  void OnTestStart(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    seeds_.clear();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text = "  seeds drawn by this test so far (FASTREDUCE_TEST_SEED=<seed> replays one):";
    for (std::uint64_t s : seeds_) text += " " + std::to_string(s);
    std::printf("%s\n", seeds_.empty() ? "  (no random data drawn yet)" : text.c_str());
  }

 private:
  std::mutex mutex_;
  std::vector<std::uint64_t> seeds_;
};

// A fresh seed for a test's random data (FASTREDUCE_TEST_SEED, when set, replaces every one),
// remembered so that a failure prints it.
inline std::uint64_t test_seed() {
  const char* fixed = std::getenv("FASTREDUCE_TEST_SEED");
  const std::uint64_t seed = fixed != nullptr ? std::strtoull(fixed, nullptr, 10) : bench::fresh_seed();
  SeedLog::instance().add(seed);
  return seed;
}

// Device memory owned by a test, with a way to poison it.
template <class T>
class DeviceBuffer : public bench::DeviceArray<T> {
 public:
  using bench::DeviceArray<T>::DeviceArray;
  static constexpr unsigned char kPoison = 0xA5;
  // Fills every byte with kPoison, so an unwritten result is noticed; synchronises, so work on
  // any stream launched afterwards sees the poison.
  void poison() {
    cudaMemset(this->get(), kPoison, std::max<std::size_t>(this->size(), 1) * sizeof(T));
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

// The current device's compute capability major version.
inline int device_major() {
  int device = 0, major = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return major;
}

// The engine's tuning for the current device (where its paths change).
inline const engine::ArchPolicy& device_policy() { return engine::policy_for(device_major()); }

// The path reduce_async takes for these arguments (engine::describe_launch).
template <class T, class Op = Sum>
engine::Route route_of(const T* d_in, std::size_t n, const Options& opt = {}) {
  engine::Route route{};
  EXPECT_EQ((engine::describe_launch<storage_t<T>, Op>(reinterpret_cast<const storage_t<T>*>(d_in), n, opt, route)),
            cudaSuccess);
  return route;
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
