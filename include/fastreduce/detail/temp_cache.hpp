// The blocking API's cached temporary storage (host only).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>

namespace fastreduce::engine {

// Temporary storage of the blocking API for the current device and `stream`: at least `bytes`,
// behind a slot of at least `result_bytes` (16-byte aligned) for the result and a finish counter
// (Options::finish_counter: zeroed when the buffer is allocated, left zero by every reduction).
// The lock is held until the returned guard goes away.
struct CachedTemp {
  void* result_slot;
  unsigned* counter;
  void* temp;
  std::size_t temp_bytes;
  std::unique_lock<std::mutex> lock;
};
cudaError_t acquire_cached_temp(cudaStream_t stream, std::size_t bytes, std::size_t result_bytes, CachedTemp& out);

}  // namespace fastreduce::engine
