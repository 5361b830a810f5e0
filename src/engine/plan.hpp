// Launch planning for the engine: host arithmetic only, tested on the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/policy.hpp"

namespace fastreduce::engine {

struct FastPlan {
  std::size_t head;        // elements before the first 16-byte boundary (block 0 adds them)
  std::size_t vectors;     // whole 16-byte vectors after the head
  std::size_t share;       // vectors per block, a multiple of the block size
  unsigned grid;           // blocks; > 1 means a cooperative launch
  std::size_t temp_bytes;  // block partials; independent of the address, never 0
};

// `address` is d_in's address (only its offset from 16 bytes matters); sms * blocks_per_sm is
// how many blocks can be resident at once; max_blocks > 0 caps the grid further.
FastPlan plan_fast(std::size_t n, std::size_t elem_size, std::uintptr_t address, std::size_t acc_size,
                   const FastPolicy& policy, int sms, int blocks_per_sm, unsigned max_blocks);

struct BulkPlan {
  std::size_t head;             // elements before the first 16-byte boundary
  std::size_t stages;           // whole stages of stage_bytes after the head
  std::size_t stages_per_block;
  std::size_t tail_begin;       // first element after the last whole stage
  unsigned grid;
  std::size_t temp_bytes;
};

// Plan of the bulk-copy path: whole stages split evenly over the resident blocks.
BulkPlan plan_bulk(std::size_t n, std::size_t elem_size, std::uintptr_t address, std::size_t acc_size,
                   std::size_t stage_bytes, int sms, int blocks_per_sm, unsigned max_blocks);

struct ReproPlan {
  std::size_t tiles;       // kReproTile-element tiles, the last one partial
  unsigned grid;
  std::size_t temp_bytes;  // per block, block_words 8-byte words (its exact accumulator)
};

ReproPlan plan_reproducible(std::size_t n, int sms, int blocks_per_sm, unsigned max_blocks, unsigned block_words);

// What d_temp must be aligned to (the kernels store 4- and 8-byte partials there; cudaMalloc gives 256).
inline constexpr std::size_t kTempAlignment = 16;

struct ArgumentError {
  cudaError_t code = cudaSuccess;
  const char* message = nullptr;  // names the argument; null on success
};

// The checks reduce_async makes before it launches anything, in this order.
ArgumentError validate_arguments(const void* d_in, const void* d_out, const void* d_temp,
                                 std::size_t n, std::size_t in_align, std::size_t out_align,
                                 std::size_t temp_bytes, std::size_t temp_needed);

}  // namespace fastreduce::engine
