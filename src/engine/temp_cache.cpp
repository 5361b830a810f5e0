// Cached temporary storage of the blocking API, one buffer per (device, stream).
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "fastreduce/detail/temp_cache.hpp"
#include "fastreduce/fastreduce.cuh"

namespace fastreduce::engine {

namespace {
struct Buffer {
  void* data = nullptr;
  std::size_t bytes = 0;
  std::mutex mutex;  // one reduction at a time uses a buffer
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::pair<int, cudaStream_t>, Buffer>& registry() {
  static std::map<std::pair<int, cudaStream_t>, Buffer> buffers;
  return buffers;
}
}  // namespace

cudaError_t acquire_cached_temp(cudaStream_t stream, std::size_t bytes, std::size_t result_bytes, CachedTemp& out) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  Buffer* buffer = nullptr;
  {
    std::lock_guard<std::mutex> guard(registry_mutex());
    buffer = &registry()[{device, stream}];  // map nodes never move
  }
  std::unique_lock<std::mutex> lock(buffer->mutex);
  constexpr std::size_t kCounter = 16;  // the finish counter, first
  const std::size_t kSlot = kCounter + std::max<std::size_t>(16, (result_bytes + 15) / 16 * 16);
  if (buffer->bytes < kSlot + bytes) {
    if (buffer->data != nullptr) {
      // The previous call on this stream has finished (reduce() synchronises), so it can go.
      cudaFree(buffer->data);
      buffer->data = nullptr;
      buffer->bytes = 0;
    }
    if (cudaError_t e = cudaMalloc(&buffer->data, kSlot + bytes); e != cudaSuccess) {
      buffer->data = nullptr;
      return e;
    }
    if (cudaError_t e = cudaMemsetAsync(buffer->data, 0, kCounter, stream); e != cudaSuccess) {
      cudaFree(buffer->data);
      buffer->data = nullptr;
      return e;
    }
    buffer->bytes = kSlot + bytes;
  }
  out.counter = static_cast<unsigned*>(buffer->data);
  out.result_slot = static_cast<char*>(buffer->data) + kCounter;
  out.temp = static_cast<char*>(buffer->data) + kSlot;
  out.temp_bytes = buffer->bytes - kSlot;
  out.lock = std::move(lock);
  return cudaSuccess;
}

}  // namespace fastreduce::engine

namespace fastreduce {

void release_cached_workspaces() {
  std::lock_guard<std::mutex> guard(engine::registry_mutex());
  for (auto& [key, buffer] : engine::registry()) {
    std::lock_guard<std::mutex> lock(buffer.mutex);
    if (buffer.data != nullptr) {
      int current = 0;
      cudaGetDevice(&current);
      cudaSetDevice(key.first);
      cudaFree(buffer.data);
      cudaSetDevice(current);
      buffer.data = nullptr;
      buffer.bytes = 0;
    }
  }
}

}  // namespace fastreduce
