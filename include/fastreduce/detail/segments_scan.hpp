// The running count of segment pieces (host side of a CUB scan, compiled once in segments_scan.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace fastreduce::engine {

// out[s] = in[0] + ... + in[s] for s < count, on `stream`; CUB's two-phase contract (temp null:
// only sets temp_bytes).
cudaError_t inclusive_scan_pieces(void* temp, std::size_t& temp_bytes, const unsigned long long* in,
                                  unsigned long long* out, std::size_t count, cudaStream_t stream);

}  // namespace fastreduce::engine
