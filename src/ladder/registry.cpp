// The rung registry and the multi-level planning arithmetic (host only, no device needed).
#include <algorithm>
#include <array>
#include <limits>

#include "fastreduce/ladder.hpp"

namespace fastreduce::ladder {

namespace {
constexpr std::array kRungs = {
    Rung{"1", 1, "interleaved_divergent", "tid % (2*s) picks the active threads: divergent warps",
         "lecture, Reduction #1", 1, false},
    Rung{"2", 2, "interleaved_strided", "index = 2*s*tid: no divergence, but bank conflicts",
         "lecture, Reduction #2", 1, false},
    Rung{"3", 3, "sequential_addressing", "stride halves from blockDim/2: contiguous, conflict-free",
         "lecture, Reduction #3", 1, false},
    Rung{"4", 4, "first_add_during_load", "each thread adds 2 elements while loading",
         "lecture #4, seeds 000-002", 2, false},
    Rung{"5", 5, "unroll_last_warp", "last warp without __syncthreads (with __syncwarp)",
         "seed 003, Harris #5", 2, false},
    Rung{"6", 6, "complete_unroll", "block size as a template: the whole tree unrolled",
         "Harris #6", 2, false},
    Rung{"7", 7, "multiple_per_thread", "fixed grid, grid-stride loop: many elements per thread",
         "Harris #7 (Brent)", 2, true},
    Rung{"8f4", 8, "coarsened_load", "first add of F=4 elements, bounds check hoisted",
         "lecture reduce5", 4, false},
    Rung{"8f8", 8, "coarsened_load", "first add of F=8 elements, bounds check hoisted",
         "lecture reduce6", 8, false},
    Rung{"8f16", 8, "coarsened_load", "first add of F=16 elements, bounds check hoisted",
         "lecture reduce7", 16, false},
    Rung{"8f32", 8, "coarsened_load", "first add of F=32 elements, bounds check hoisted",
         "lecture reduce8", 32, false},
    Rung{"8f64", 8, "coarsened_load", "first add of F=64 elements, bounds check hoisted",
         "lecture reduce9", 64, false},
    // The lecture's "where to go from here", one step each.
    Rung{"9", 9, "warp_shuffle", "warp stage in registers with __shfl_down_sync (rung 8f16's tile)",
         "lecture, next steps", 16, false},
    Rung{"10", 10, "warp_reduce_sync", "warp stage in one __reduce_*_sync (32-bit integers; else rung 9)",
         "lecture, next steps", 16, false},
    Rung{"11", 11, "vector_loads", "16-byte loads: 4 floats or 2 doubles per instruction",
         "lecture, next steps", 16, false, false, 2},
    Rung{"12", 12, "last_block_finish", "one kernel: fixed grid, the last block to arrive combines",
         "lecture, next steps", 16, true, true, 2},
    Rung{"12c", 12, "grid_barrier", "one kernel: cooperative launch, grid.sync(), block 0 combines",
         "lecture, next steps", 16, true, true, 2},
    Rung{"13", 13, "async_copy", "cp.async: 16-byte copies into shared memory, 4 in flight per thread",
         "lecture, next steps", 16, true, true, 2},
    Rung{"13t", 13, "bulk_copy_ring", "TMA bulk copies into a 6-stage ring, mbarrier completion (sm_90)",
         "lecture, next steps", 16, true, true, 2},
    Rung{"14", 14, "tensor_core_sum", "float/double sums by mma against a ones matrix; else rung 12",
         "lecture, next steps", 16, true, true, 6},
};
}  // namespace

std::span<const Rung> rungs() { return kRungs; }

const Rung* find_rung(std::string_view id) {
  for (const Rung& r : kRungs) {
    if (id == r.id) return &r;
  }
  return nullptr;
}

std::vector<Level> plan_levels(std::size_t n, std::size_t items_per_block, std::size_t grid_cap) {
  std::vector<Level> levels;
  std::size_t length = n;
  do {
    std::size_t grid = length / items_per_block + (length % items_per_block != 0);
    grid = std::clamp<std::size_t>(grid, 1, std::max<std::size_t>(grid_cap, 1));
    levels.push_back({length, grid});
    length = grid;
  } while (length > 1);
  return levels;
}

std::size_t workspace_bytes(std::span<const Level> levels, std::size_t elem_size) {
  // Level i (all but the last) writes its partials to buffer i % 2; grids only shrink, so the
  // first two levels size the two buffers.
  std::size_t total = 0;
  for (std::size_t i = 0; i + 1 < levels.size() && i < 2; ++i) total += levels[i].grid;
  return total * elem_size;
}

std::size_t bytes_moved(std::span<const Level> levels, std::size_t elem_size) {
  std::size_t elements = 0;
  for (const Level& level : levels) elements += level.length + level.grid;
  return elements * elem_size;
}

std::vector<Level> plan_for(const Rung& rung, std::size_t n, unsigned block, const Limits& limits) {
  const std::size_t cap = rung.grid_stride ? limits.grid_stride_blocks
                                           : std::numeric_limits<std::size_t>::max();
  std::vector<Level> levels = plan_levels(n, std::size_t(block) * rung.items_per_thread, cap);
  if (rung.one_kernel && levels.size() > 1) {
    // The grid's own last block (or block 0 after the barrier) combines the partials: the second
    // level runs inside the same launch, with one block.
    levels.resize(2);
    levels[1].grid = 1;
  }
  return levels;
}

std::size_t error_depth(const Rung& rung, std::size_t n, unsigned block, const Limits& limits) {
  std::size_t tree = 0;
  for (unsigned b = block; b > 1; b /= 2) ++tree;
  std::size_t depth = 0;
  for (const Level& level : plan_for(rung, n, block, limits)) {
    const std::size_t threads = level.grid * block;
    const std::size_t serial = rung.grid_stride ? (level.length + threads - 1) / threads + 1
                                                : rung.items_per_thread;
    depth += serial + tree;
  }
  return depth + rung.extra_depth;
}

Limits device_limits(int device, unsigned block) {
  int sms = 0;
  int threads_per_sm = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
  Limits limits;
  // Blocks of `block` threads that fill every SM's thread slots, at most 32 per SM.
  const std::size_t per_sm = std::clamp<std::size_t>(threads_per_sm / std::max(block, 1u), 1, 32);
  limits.grid_stride_blocks = std::max<std::size_t>(1, std::size_t(sms) * per_sm);
  return limits;
}

Workspace::~Workspace() {
  if (data_ != nullptr) cudaFree(data_);
  if (counter_ != nullptr) cudaFree(counter_);
}

cudaError_t Workspace::counter(unsigned** counter) {
  if (counter_ == nullptr) {
    unsigned* fresh = nullptr;
    if (cudaError_t e = cudaMalloc(&fresh, sizeof(unsigned)); e != cudaSuccess) return e;
    if (cudaError_t e = cudaMemset(fresh, 0, sizeof(unsigned)); e != cudaSuccess) {
      cudaFree(fresh);
      return e;
    }
    counter_ = fresh;
  }
  *counter = counter_;
  return cudaSuccess;
}

cudaError_t Workspace::reserve(std::size_t bytes) {
  if (bytes <= capacity_) return cudaSuccess;
  if (data_ != nullptr) {
    // The old buffer may still be read by work in flight on any stream.
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return e;
    cudaFree(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  if (cudaError_t e = cudaMalloc(&data_, bytes); e != cudaSuccess) {
    data_ = nullptr;
    return e;
  }
  capacity_ = bytes;
  return cudaSuccess;
}

}  // namespace fastreduce::ladder
