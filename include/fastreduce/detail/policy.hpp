// Tuning of the engine as data: the kernel shapes, and per architecture the sizes where the paths
// change, each with the run that chose it.
#pragma once

#include <cstddef>

#include "fastreduce/detail/load_hint.hpp"

namespace fastreduce::engine {

using primitives::LoadHint;

struct FastPolicy {
  unsigned threads;           // threads per block
  unsigned unroll;            // 16-byte loads each thread has in flight per step
  unsigned vectors_per_block; // smallest share of 16-byte vectors worth a block of its own
};

struct BulkPolicy {
  unsigned threads;
  unsigned stages;       // bulk copies in flight per block
  unsigned stage_bytes;  // bytes per copy
  [[nodiscard]] constexpr std::size_t shared_bytes() const { return std::size_t(stages) * stage_bytes; }
};

// The kernel shapes (template arguments of the kernels, so every architecture shares the same
// compiled kernels). Chosen on Hopper, float sum against CUB or the other candidates in the same
// run, with builds of the candidates benched side by side (2026-11-22, docs/notes.md):
// - one block of 1024 threads x 4 loads: one launch, no partials (up to 4 rounds of loads at 256 KB);
// - 512 threads x 4 loads, a block per 2048 vectors: 2^20 floats 6.02-6.04 us on an H100 against
//   6.27-6.34 us with 256 x 4, 6.26-6.34 us with 256 x 8 and 6.28-6.31 us with 512 x 2;
// - 1024 threads x 4 loads, a block per 1024 vectors: 2^22 8.80 us, 2^24 20.35 us (H200),
//   against 9.99 and 21.91 us with 256 threads;
// - bulk copies of 4 x 32 KiB per 512-thread block: 2^28 236.1 us (H200, 1.02x CUB) against
//   238.2 us with 1024 x 4 loads.
inline constexpr FastPolicy kOneBlock{.threads = 1024, .unroll = 4, .vectors_per_block = 0};
inline constexpr FastPolicy kSmall{.threads = 512, .unroll = 4, .vectors_per_block = 2048};
inline constexpr FastPolicy kLarge{.threads = 1024, .unroll = 4, .vectors_per_block = 1024};
inline constexpr BulkPolicy kBulk{.threads = 512, .stages = 4, .stage_bytes = 32768};

// Reductions whose thread state is large (an arg-extreme keeps its best element and its best
// vector; the moments three sums): kSmall's blocks of 512 threads x 4 loads above one block
// (registers leave three blocks an SM; 1024 threads would leave one), a block per 4096 vectors on
// the large path. Direct launches of the pass on an H100 over data beyond the L2
// (scripts/probe/heavy_blocks.cu, docs/results/heavy_blocks_H100_2026-11-28.txt): argmax at 2^24
// floats 30.5 us against 31.8 with the 256 x 4 blocks per 2048 vectors it replaced (six an SM),
// 30.6 with 1024 x 2, 31.4 with 512 x 2; at 2^22 13.4 us per 4096 vectors against 13.9 per 2048
// (256 x 4: 13.5); the variance 31.6 against 32.9 us at 2^24. On the small path the replaced
// 256 x 4 per 1024 vectors was 0-3% faster in the same run; put back, it did not recover the CLI's
// float var at 2^17-2^18 (4-9% behind the older binary, which has that same small shape), so it
// was dropped (docs/notes.md, "The heavy reductions' shares in elements").
inline constexpr FastPolicy kHeavySmall = kSmall;
inline constexpr FastPolicy kHeavyLarge{.threads = kSmall.threads, .unroll = kSmall.unroll, .vectors_per_block = 4096};
// A heavy reduction's work is per element, not per byte: 2- and 1-byte inputs take a block per as
// many elements as 4-byte ones on each load path (half and a quarter of the vectors; never fewer
// than one); 8-byte ones keep the bytes' share. (The paths themselves are chosen by bytes, so a
// 2-byte input of 2^21 elements is on the small path where a float one is on the large.) On an
// H100, the bfloat16 variance of 2^22 elements (8 MB) took 11.1 us per 4096 vectors (128 blocks
// for 132 SMs) and 10.2-10.4 us per 2048 (256 blocks), three passes each in one run; 2^23 to 2^28
// the same (docs/results/heavy_shares_H100_2026-11-28.txt).
constexpr FastPolicy per_element_share(FastPolicy policy, std::size_t element_bytes) {
  if (element_bytes < 4) {
    const std::size_t share = std::size_t(policy.vectors_per_block) * element_bytes / 4;
    policy.vectors_per_block = static_cast<unsigned>(share > 0 ? share : 1);
  }
  return policy;
}
inline constexpr std::size_t kHeavyStateBytes = 16;  // a thread state above this is large

// The ordered path (ops that are not commutative): tiles of kOrderedRound sub-tiles of
// kOrderedThreads threads x one vector each.
inline constexpr unsigned kOrderedThreads = 256;
inline constexpr unsigned kOrderedRound = 4;
inline constexpr LoadHint kLoadHint = LoadHint::ReadOnly;  // L2::256B prefetch: 2^28 260 vs 246 us (H200)

// Where an architecture's paths change, by bytes of input.
struct ArchPolicy {
  std::size_t one_block_max_bytes;  // up to this: kOneBlock
  std::size_t small_max_bytes;      // up to this: kSmall, then kLarge
  std::size_t bulk_min_bytes;       // from this: kBulk, for 4- and 8-byte types; 0: never
  std::size_t self_finish_max_bytes;  // up to this, a grid given Options::finish_counter finishes in its last block
};

// Hopper (sm_90). H100, 2026-11-23, float sum, back to back against two kernels (the partials
// and a one-block combine with programmatic dependent launch) in the same run
// (scripts/probe/finish_variants.cu one-block, docs/results/finish_variants_one-block_H100_2026-11-23.txt):
// one block 4.3 us at 2^16 floats against 5.6 us, but 6.3 us at 2^17 against 5.5 us: one block
// up to 256 KB. Small blocks up to 4 MB, bulk copies from 128 MB (see the shapes above).
// Grids that finish in their last block (one launch) up to 8 MB: back to back on an H100
// (2026-11-27, `bench --finish-counter`, docs/results/finish_counter_H100_2026-11-27.txt) 4.9 against
// 8.4 us at 2^18 floats, 6.2 against 8.8 at 2^20 and 7.9 against 8.9 at 2^21 (host-bound: one
// launch instead of two), but 10.5 against 10.1 us at 2^22 and 0.1-0.4 us more up to 64 MB for
// every type (GPU-bound: the last block's count and combine against the combine kernel prepared
// during the grid by programmatic dependent launch).
inline constexpr ArchPolicy kSm90{
    .one_block_max_bytes = std::size_t(256) << 10,
    .small_max_bytes = std::size_t(4) << 20,
    .bulk_min_bytes = std::size_t(128) << 20,
    .self_finish_max_bytes = std::size_t(8) << 20,
};

// Every other architecture: not measured. The same shapes, one block only up to 64 KB (where one
// block beat several on an H100 when there was no second launch to save), no bulk copies (sm_90
// instructions), and grids finishing in their last block over the small blocks' sizes only.
inline constexpr ArchPolicy kGeneric{
    .one_block_max_bytes = std::size_t(64) << 10,
    .small_max_bytes = std::size_t(4) << 20,
    .bulk_min_bytes = 0,
    .self_finish_max_bytes = std::size_t(4) << 20,
};

inline constexpr const ArchPolicy& policy_for(int compute_major) { return compute_major >= 9 ? kSm90 : kGeneric; }

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
