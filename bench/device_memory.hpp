// Device memory owned by a scope: freed on every path out of it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace fastreduce::bench {

template <class T>
class DeviceArray {
 public:
  // Allocates count elements (at least one); get() is null when the allocation failed.
  explicit DeviceArray(std::size_t count) : count_(count) {
    if (cudaMalloc(&data_, std::max<std::size_t>(count, 1) * sizeof(T)) != cudaSuccess) {
      data_ = nullptr;
      cudaGetLastError();  // an out-of-memory is reported through get() == nullptr
    }
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  [[nodiscard]] T* get() const { return data_; }
  [[nodiscard]] std::size_t size() const { return count_; }

 private:
  T* data_ = nullptr;
  std::size_t count_;
};

}  // namespace fastreduce::bench
