#include "fastreduce/detail/plan.hpp"

#include <algorithm>

#include "fastreduce/detail/device_pointer.hpp"

namespace fastreduce::engine {

namespace {
std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0); }

// Elements before the first 16-byte boundary at `address` (all n if the boundary lies beyond).
std::size_t head_elements(std::size_t n, std::size_t elem_size, std::uintptr_t address) {
  const std::size_t misalignment = address % 16;
  return misalignment == 0 ? 0 : std::min(n, (16 - misalignment) / elem_size);
}

unsigned resident_capacity(int sms, int blocks_per_sm, unsigned max_blocks) {
  std::size_t capacity = std::max<std::size_t>(1, std::size_t(std::max(sms, 0)) * std::max(blocks_per_sm, 0));
  if (max_blocks > 0) capacity = std::min<std::size_t>(capacity, max_blocks);
  return static_cast<unsigned>(std::min<std::size_t>(capacity, 1u << 20));
}
}  // namespace

const char* path_name(Path path) {
  switch (path) {
    case Path::OneBlock: return "one-block";
    case Path::Small: return "small";
    case Path::Large: return "large";
    case Path::Bulk: return "bulk";
    case Path::Reproducible: return "reproducible";
    case Path::Ordered: return "ordered";
  }
  return "?";
}

Path select_fast_path(std::size_t bytes, std::size_t elem_size, const ArchPolicy& arch, bool bulk_runs) {
  if (bytes <= arch.one_block_max_bytes) return Path::OneBlock;
  if (bytes <= arch.small_max_bytes) return Path::Small;
  // 1- and 2-byte types stay on loads, whose blocks have more threads to convert and add the 8 or
  // 16 elements of every vector.
  if (bulk_runs && elem_size >= 4 && arch.bulk_min_bytes > 0 && bytes >= arch.bulk_min_bytes) return Path::Bulk;
  return Path::Large;
}

FastPlan plan_fast(std::size_t n, std::size_t elem_size, std::uintptr_t address, std::size_t acc_size,
                   const FastPolicy& policy, int sms, int blocks_per_sm, unsigned max_blocks, unsigned vec_elems,
                   std::size_t read_per_element) {
  const std::size_t per_vector = vec_elems != 0 ? vec_elems : std::max<std::size_t>(1, 16 / elem_size);
  const std::size_t read = read_per_element != 0 ? read_per_element : elem_size;
  FastPlan plan{};
  plan.head = per_vector == 1 ? 0 : head_elements(n, elem_size, address);
  plan.vectors = (n - plan.head) / per_vector;
  // The grid follows the bytes read, not the address or the vector width, so the size query needs
  // no pointer. (vectors_per_block = 0: one block, whatever n is.)
  const std::size_t wanted = policy.vectors_per_block == 0 ? 1 : ceil_div(n * read / 16, policy.vectors_per_block);
  plan.grid = static_cast<unsigned>(
      std::clamp<std::size_t>(wanted, 1, resident_capacity(sms, blocks_per_sm, max_blocks)));
  plan.share = ceil_div(ceil_div(plan.vectors, plan.grid), policy.threads) * policy.threads;
  plan.temp_bytes = std::max<std::size_t>(16, plan.grid * acc_size);
  return plan;
}

BulkPlan plan_bulk(std::size_t n, std::size_t elem_size, std::uintptr_t address, std::size_t acc_size,
                   std::size_t stage_bytes, int sms, int blocks_per_sm, unsigned max_blocks) {
  BulkPlan plan{};
  plan.head = head_elements(n, elem_size, address);
  const std::size_t per_stage = stage_bytes / elem_size;
  plan.stages = (n - plan.head) / per_stage;
  plan.tail_begin = plan.head + plan.stages * per_stage;
  const std::size_t wanted = std::max<std::size_t>(1, ceil_div(n, per_stage));
  plan.grid = static_cast<unsigned>(
      std::clamp<std::size_t>(wanted, 1, resident_capacity(sms, blocks_per_sm, max_blocks)));
  plan.stages_per_block = ceil_div(plan.stages, plan.grid);
  plan.temp_bytes = std::max<std::size_t>(16, plan.grid * acc_size);
  return plan;
}

ReproPlan plan_reproducible(std::size_t n, int sms, int blocks_per_sm, unsigned max_blocks, unsigned block_words) {
  ReproPlan plan{};
  plan.tiles = ceil_div(n, kReproTile);
  // Up to a tile per warp of one block: that block alone (one launch). Above, one tile per block
  // first (tiles go round the blocks), up to what is resident. Which warp sums a tile cannot
  // change the bits.
  const std::size_t wanted = plan.tiles <= kReproThreads / 32 ? 1 : plan.tiles;
  plan.grid = static_cast<unsigned>(
      std::clamp<std::size_t>(wanted, 1, resident_capacity(sms, blocks_per_sm, max_blocks)));
  plan.temp_bytes = std::size_t(plan.grid) * block_words * sizeof(std::uint64_t);
  return plan;
}

OrderedPlan plan_ordered(std::size_t n, unsigned vec_elems, std::size_t partial_size, int sms, int blocks_per_sm,
                         unsigned max_blocks) {
  const std::size_t resident = resident_capacity(sms, blocks_per_sm, max_blocks);
  const std::size_t tile = std::size_t(kOrderedThreads) * kOrderedRound * std::max(vec_elems, 1u);
  const std::size_t tiles = ceil_div(n, tile);
  const std::size_t grid = std::clamp<std::size_t>(std::min(resident, (tiles + 1) / 2), 1, resident);
  OrderedPlan plan{};
  plan.per_block = std::max<std::size_t>(ceil_div(tiles, grid), 1);
  plan.grid = static_cast<unsigned>(std::max<std::size_t>(ceil_div(tiles, plan.per_block), 1));
  plan.temp_bytes = std::max<std::size_t>(16, std::size_t(resident) * partial_size);
  return plan;
}

namespace {
// Combining steps on the longest path through primitives::block_reduce over `threads` threads:
// five shuffle levels in every warp, five more in warp 0 when there are several warps.
std::size_t block_reduce_depth(unsigned threads) { return threads > 32 ? 10 : 5; }

// The combine (a kernel, or the grid's last block, of the main kernel's `threads`): a thread's own
// partials one after another, then its block reduction.
std::size_t combine_depth(unsigned grid, unsigned threads) {
  return grid > 1 ? ceil_div(grid, threads) + block_reduce_depth(threads) : 0;
}
}  // namespace

std::size_t fast_depth(const FastPlan& plan, unsigned threads, unsigned vec_depth) {
  // A thread adds its vectors one after another (each reduced pairwise first); block 0's threads
  // also add the head and the tail (fewer than 16 elements each, so one of each per thread).
  return ceil_div(plan.share, threads) + vec_depth + 2 + block_reduce_depth(threads) + combine_depth(plan.grid, threads);
}

std::size_t bulk_depth(const BulkPlan& plan, std::size_t n, const BulkPolicy& policy, unsigned vec_depth) {
  // A thread adds stage_bytes / 16 / threads vectors of each of its block's stages; block 0 adds
  // the head (one element per thread), the last block what follows the last whole stage.
  const std::size_t per_stage = policy.stage_bytes / 16 / policy.threads;
  const std::size_t tail = n - std::min(n, plan.tail_begin);
  return plan.stages_per_block * per_stage + vec_depth + 1 + ceil_div(tail, policy.threads) +
         block_reduce_depth(policy.threads) + combine_depth(plan.grid, policy.threads);
}

ArgumentError validate_arguments(const void* d_in, const void* d_out, const void* d_temp,
                                 std::size_t n, std::size_t in_align, std::size_t out_align,
                                 std::size_t temp_bytes, std::size_t temp_needed) {
  if (d_out == nullptr) return {cudaErrorInvalidValue, "d_out is null"};
  if (n > 0 && d_in == nullptr) return {cudaErrorInvalidValue, "d_in is null but n > 0"};
  if (temp_bytes < temp_needed) {
    return {cudaErrorInvalidValue, "temp_bytes is smaller than the size query returned"};
  }
  if (reinterpret_cast<std::uintptr_t>(d_in) % in_align != 0) {
    return {cudaErrorMisalignedAddress, "d_in is not aligned to its element type"};
  }
  if (reinterpret_cast<std::uintptr_t>(d_out) % out_align != 0) {
    return {cudaErrorMisalignedAddress, "d_out is not aligned to its element type"};
  }
  if (reinterpret_cast<std::uintptr_t>(d_temp) % kTempAlignment != 0) {
    return {cudaErrorMisalignedAddress, "d_temp is not 16-byte aligned"};
  }
  if (n > 0 && primitives::check_device_pointer(d_in) != cudaSuccess) {
    return {cudaErrorInvalidDevicePointer, "d_in is host memory the device cannot read"};
  }
  if (primitives::check_device_pointer(d_out) != cudaSuccess) {
    return {cudaErrorInvalidDevicePointer, "d_out is host memory the device cannot write"};
  }
  if (primitives::check_device_pointer(d_temp) != cudaSuccess) {
    return {cudaErrorInvalidDevicePointer, "d_temp is host memory the device cannot use"};
  }
  return {};
}

}  // namespace fastreduce::engine
