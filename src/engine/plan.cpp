#include "engine/plan.hpp"

#include <algorithm>

#include "primitives/device_pointer.hpp"

namespace fastreduce::engine {

namespace {
std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0); }

unsigned resident_capacity(int sms, int blocks_per_sm, unsigned max_blocks) {
  std::size_t capacity = std::max<std::size_t>(1, std::size_t(std::max(sms, 0)) * std::max(blocks_per_sm, 0));
  if (max_blocks > 0) capacity = std::min<std::size_t>(capacity, max_blocks);
  return static_cast<unsigned>(std::min<std::size_t>(capacity, 1u << 20));
}
}  // namespace

FastPlan plan_fast(std::size_t n, std::size_t elem_size, std::uintptr_t address, std::size_t acc_size,
                   const FastPolicy& policy, int sms, int blocks_per_sm, unsigned max_blocks) {
  const std::size_t per_vector = 16 / elem_size;
  FastPlan plan{};
  const std::size_t misalignment = address % 16;
  plan.head = misalignment == 0 ? 0 : std::min(n, (16 - misalignment) / elem_size);
  plan.vectors = (n - plan.head) / per_vector;
  // The grid follows n, not the address, so the size query needs no pointer.
  const std::size_t wanted = ceil_div(n / per_vector, policy.vectors_per_block);
  plan.grid = static_cast<unsigned>(
      std::clamp<std::size_t>(wanted, 1, resident_capacity(sms, blocks_per_sm, max_blocks)));
  plan.share = ceil_div(ceil_div(plan.vectors, plan.grid), policy.threads) * policy.threads;
  plan.temp_bytes = std::max<std::size_t>(16, plan.grid * acc_size);
  return plan;
}

BulkPlan plan_bulk(std::size_t n, std::size_t elem_size, std::uintptr_t address, std::size_t acc_size,
                   std::size_t stage_bytes, int sms, int blocks_per_sm, unsigned max_blocks) {
  BulkPlan plan{};
  const std::size_t misalignment = address % 16;
  plan.head = misalignment == 0 ? 0 : std::min(n, (16 - misalignment) / elem_size);
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
  // One tile per block first (tiles go round the blocks), up to what is resident.
  plan.grid = static_cast<unsigned>(
      std::clamp<std::size_t>(plan.tiles, 1, resident_capacity(sms, blocks_per_sm, max_blocks)));
  plan.temp_bytes = std::size_t(plan.grid) * block_words * sizeof(std::uint64_t);
  return plan;
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
