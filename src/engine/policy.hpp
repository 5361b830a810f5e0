// Tuning of the engine as data: one policy per architecture, each with the run that chose it.
#pragma once

#include <cstddef>

namespace fastreduce::engine {

enum class LoadHint {
  ReadOnly,        // ld.global.nc (what __ldg emits)
  StreamPrefetch,  // ld.global.nc, no L1 allocation, L2 prefetches the surrounding 256 bytes
};

struct FastPolicy {
  unsigned threads;           // threads per block
  unsigned unroll;            // 16-byte loads each thread has in flight per step
  unsigned vectors_per_block; // smallest share of 16-byte vectors worth a block of its own
};

// Hopper (sm_90). Chosen on an H200 with `fastreduce bench` (see docs/results/): 256 x 4 keeps
// 64 KiB of loads in flight per block, and small inputs get one block per 1024 vectors so
// mid sizes spread over many SMs in a single round of loads.
inline constexpr FastPolicy kSm90Fast{.threads = 256, .unroll = 4, .vectors_per_block = 1024};
inline constexpr LoadHint kSm90Load = LoadHint::ReadOnly;

// Reproducible mode. These values define the summation order, so they are fixed for every
// architecture and must never be tuned per GPU: changing them changes the result's bits.
inline constexpr unsigned kReproThreads = 256;       // 8 warps per block
inline constexpr std::size_t kReproTile = 4096;      // elements summed by one warp, in a fixed order
inline constexpr unsigned kReproLoadBatch = 8;       // 16-byte loads per lane in flight

}  // namespace fastreduce::engine
