// fastreduce::Error: every failure the library reports to C++ callers.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace fastreduce {

// Thrown by the blocking API. The message names the argument or the CUDA call that failed;
// code() keeps the CUDA error so callers can branch on it.
class Error : public std::runtime_error {
 public:
  Error(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

// Throws Error when `status` is not cudaSuccess; `what` says which call or argument it was.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw Error(status, std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                            cudaGetErrorString(status) + ")");
  }
}

}  // namespace fastreduce
