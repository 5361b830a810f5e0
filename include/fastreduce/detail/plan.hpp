// Launch planning for the engine: host arithmetic only, tested on the CPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "fastreduce/detail/policy.hpp"

namespace fastreduce::engine {

// The kernels a reduction takes, by input size (see ArchPolicy).
enum class Path : unsigned char {
  OneBlock,      // kOneBlock: one launch of one block
  Small,         // kSmall loads
  Large,         // kLarge loads
  Bulk,          // kBulk copies (sm_90 code and device)
  Reproducible,  // the reproducible sum's tiles
  Ordered,       // an op that is not commutative: tiles in index order (detail/ordered.cuh)
};
const char* path_name(Path path);

// The fast-mode path for `bytes` of input with elements of `elem_size` bytes; bulk copies only
// where `bulk_runs` (the bulk kernel was compiled for sm_90 or later and fits on the device).
Path select_fast_path(std::size_t bytes, std::size_t elem_size, const ArchPolicy& arch, bool bulk_runs);

struct FastPlan {
  std::size_t head;        // elements before the first 16-byte boundary (block 0 adds them)
  std::size_t vectors;     // whole 16-byte vectors after the head
  std::size_t share;       // vectors per block, a multiple of the block size
  unsigned grid;           // blocks; > 1 means partials and a combine kernel
  std::size_t temp_bytes;  // block partials; independent of the address, never 0
};

// `address` is d_in's address (only its offset from 16 bytes matters); sms * blocks_per_sm is
// how many blocks can be resident at once; max_blocks > 0 caps the grid further. vec_elems:
// elements per vector (0: 16 / elem_size; 1: single elements, no head); read_per_element: bytes
// read per element over every input (0: elem_size), which sizes the grid.
FastPlan plan_fast(std::size_t n, std::size_t elem_size, std::uintptr_t address, std::size_t acc_size,
                   const FastPolicy& policy, int sms, int blocks_per_sm, unsigned max_blocks, unsigned vec_elems = 0,
                   std::size_t read_per_element = 0);

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
  unsigned grid;           // one block while its warps can take a tile each, else tiles round the blocks
  std::size_t temp_bytes;  // per block, block_words 8-byte words (its exact accumulator)
};

ReproPlan plan_reproducible(std::size_t n, int sms, int blocks_per_sm, unsigned max_blocks, unsigned block_words);

struct OrderedPlan {
  std::size_t per_block;   // tiles of kOrderedThreads x kRound x vec_elems elements per block
  unsigned grid;
  std::size_t temp_bytes;  // block partials; never 0
};

// The ordered path: at least two tiles a block where there are enough, at most the resident blocks.
OrderedPlan plan_ordered(std::size_t n, unsigned vec_elems, std::size_t partial_size, int sms, int blocks_per_sm,
                         unsigned max_blocks);

// The additions on the longest path from an element to the result (the depth of the summation
// tree), which bounds a floating-point sum's rounding error by depth * eps * sum |x|.
// vec_depth: additions inside one 16-byte vector (log2 of its elements).
std::size_t fast_depth(const FastPlan& plan, unsigned threads, unsigned vec_depth);
std::size_t bulk_depth(const BulkPlan& plan, std::size_t n, const BulkPolicy& policy, unsigned vec_depth);

// What reduce_async launches for given arguments on the current device: the plan it follows,
// so that tests and tools can see which path ran.
struct Route {
  Path path = Path::OneBlock;
  unsigned grid = 1;               // blocks of the main kernel
  unsigned threads = 0;            // threads per block of the main kernel
  bool combine_kernel = false;     // a one-block kernel after it combines the blocks' partials
  bool dependent_launch = false;   // ... launched with programmatic dependent launch (sm_90)
  bool last_block_combines = false;  // the grid's last block combines them (Options::finish_counter): one launch
  std::size_t temp_bytes = 0;
  std::size_t depth = 0;           // fast floating-point sums: the summation tree's depth (above)
};

// The route of a main grid of `grid` blocks: more than one leaves partials for a combine kernel,
// which takes programmatic dependent launch where `dependent_ok` (sm_90 code on an sm_90 GPU), or
// where `self_finish` for the grid's last block.
inline Route make_route(Path path, unsigned grid, unsigned threads, std::size_t temp_bytes, std::size_t depth,
                        bool dependent_ok, bool self_finish = false) {
  return {.path = path,
          .grid = grid,
          .threads = threads,
          .combine_kernel = grid > 1 && !self_finish,
          .dependent_launch = grid > 1 && !self_finish && dependent_ok,
          .last_block_combines = grid > 1 && self_finish,
          .temp_bytes = temp_bytes,
          .depth = depth};
}

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
