#include "fastreduce/detail/segments_scan.hpp"

#include <cub/device/device_scan.cuh>

namespace fastreduce::engine {

cudaError_t inclusive_scan_pieces(void* temp, std::size_t& temp_bytes, const unsigned long long* in,
                                  unsigned long long* out, std::size_t count, cudaStream_t stream) {
  return cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, count, stream);
}

}  // namespace fastreduce::engine
