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

struct BulkPolicy {
  unsigned threads;
  unsigned stages;       // bulk copies in flight per block
  unsigned stage_bytes;  // bytes per copy
};

// Hopper (sm_90), chosen by measurement (float sum, back to back, against CUB or the other
// candidates in the same run; 2026-11-22), with scripts/probe/engine_variants.cu on an H200 or
// builds of the candidates benched side by side on an H100, as each entry says:
// - up to 64 KB, one block of 1024 threads x 4 loads: one round of loads, and an ordinary launch
//   instead of a cooperative one (H100, 2026-11-22, same run: 2^13 and 2^14 floats 3.84 and
//   3.79 us against 4.47 and 4.42 us with 256-thread blocks; one block for 128 or 256 KB was no
//   faster than several);
// - up to 4 MB, 512 threads x 4 loads, a block per 2048 vectors: 2^20 floats 6.02-6.04 us on an
//   H100 against 6.27-6.34 us with 256 threads x 4 (a block per 1024 vectors), 6.26-6.34 us with
//   256 x 8 and 6.28-6.31 us with 512 x 2 (three runs each, 2026-11-22); on the H200 earlier,
//   256 x 4 gave 5.60 us, 1.92x CUB, and 1024-thread blocks 5.88 us;
// - up to 128 MB, 1024 threads x 4 loads: 2^22 8.80 us (1.18x), 2^24 20.35 us (1.05x), against
//   9.99 and 21.91 us with 256 threads;
// - from 128 MB, bulk copies of 4 x 32 KiB per 512-thread block: 2^28 236.1 us (1.02x CUB)
//   against 238.2 us with 1024 x 4 loads.
inline constexpr std::size_t kSm90TinyMaxBytes = std::size_t(64) << 10;
inline constexpr FastPolicy kSm90Tiny{.threads = 1024, .unroll = 4, .vectors_per_block = unsigned(kSm90TinyMaxBytes / 16)};
inline constexpr FastPolicy kSm90Small{.threads = 512, .unroll = 4, .vectors_per_block = 2048};
inline constexpr FastPolicy kSm90Large{.threads = 1024, .unroll = 4, .vectors_per_block = 1024};
inline constexpr BulkPolicy kSm90Bulk{.threads = 512, .stages = 4, .stage_bytes = 32768};
inline constexpr std::size_t kSm90SmallMaxBytes = std::size_t(4) << 20;
inline constexpr std::size_t kSm90BulkMinBytes = std::size_t(128) << 20;
inline constexpr LoadHint kSm90Load = LoadHint::ReadOnly;

// Reproducible mode. These values define the summation order, so they are fixed for every
// architecture and must never be tuned per GPU: changing them changes the result's bits.
inline constexpr unsigned kReproThreads = 256;       // 8 warps per block
inline constexpr std::size_t kReproTile = 4096;      // elements summed by one warp, in a fixed order
inline constexpr unsigned kReproLoadBatch = 16;      // 16-byte loads per lane in flight (two batches in registers)

// The exact accumulators' 64-bit limbs must not overflow: a warp adds two 32-bit pieces per
// lane and tile into each limb (64 per tile), and at most 2^25 tiles (2^40 elements over the
// 8 warps of one block) keep that below 2^63. Rows carried per warp add up safely after that.
inline constexpr std::size_t kReproMaxElements = std::size_t(1) << 40;

}  // namespace fastreduce::engine
