// The ladder: the seeds' optimisation journey, one rung per file (01_*.cuh ... 14_*.cuh),
// registered once here so the CLI, the tests and the README loop over the same list.
// This header is host-only: the kernels are instantiated in ladder_<type>.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fastreduce::ladder {

struct Rung {
  const char* id;             // "1" ... "7", "8f4" ... "8f64", "9" ... "14": what --rung takes
  int number;                 // position on the ladder (1-8: the seeds' table; 9-14: its next steps)
  const char* name;           // the kernel's name in code, snake_case
  const char* change;         // one line: what it changes from the rung before
  const char* seed;           // where the idea comes from
  unsigned items_per_thread;  // elements a thread adds before the tree (per grid-stride step for 7)
  bool grid_stride;           // fixed grid walking the input (rung 7, 12-14) instead of one tile per block
  bool one_kernel = false;    // the grid finishes the reduction itself: one launch, no second level
  unsigned extra_depth = 0;   // additions outside the serial loop and the tree (a vector's pairwise
                              // sum, the tensor-core split), for error_depth
};

// Every rung, in order.
std::span<const Rung> rungs();
// The rung with this id, or nullptr.
const Rung* find_rung(std::string_view id);

// The rows printed under the rungs in the same run, which `--rung` also takes: the engine
// (fastreduce::reduce), cub::DeviceReduce, and a read-bound kernel (one pass, 16-byte loads,
// partials combined by atomics in no fixed order: what reading the input costs).
inline constexpr std::string_view kReferenceIds[] = {"engine", "cub", "read-bound"};

// One launch of the multi-level driver: `length` inputs reduced by `grid` blocks to `grid`
// partials. The last level has grid == 1 and writes the result.
struct Level {
  std::size_t length;
  std::size_t grid;
};

// The levels that reduce n elements with tiles of `items_per_block` and at most `grid_cap`
// blocks per level (a grid-stride rung caps its grid; the others pass SIZE_MAX). n = 0 gives
// one level that writes the identity.
std::vector<Level> plan_levels(std::size_t n, std::size_t items_per_block, std::size_t grid_cap);

// Device bytes for the partials of every level but the last (two ping-pong buffers).
std::size_t workspace_bytes(std::span<const Level> levels, std::size_t elem_size);

// Bytes read and written by all levels, as the lecture counts them.
std::size_t bytes_moved(std::span<const Level> levels, std::size_t elem_size);

// Launch limits for one device and block size.
struct Limits {
  std::size_t grid_stride_blocks = 0;        // rung 7's grid: enough blocks to fill every SM
  std::size_t max_grid_x = 2147483647;       // larger levels are split into several launches
};
Limits device_limits(int device, unsigned block);

// The levels a rung runs for n elements with these limits.
std::vector<Level> plan_for(const Rung& rung, std::size_t n, unsigned block, const Limits& limits);

// The longest chain of operations any input element goes through (sequential adds in a thread
// plus the tree levels, over all levels): a floating-point sum is within depth * eps * sum|x|.
std::size_t error_depth(const Rung& rung, std::size_t n, unsigned block, const Limits& limits);

// Device memory for the partials, allocated once and grown only when a larger run needs it,
// and the arrival counter of the one-kernel rungs (zeroed when allocated; the last block of each
// launch sets it back to zero). One workspace serves one stream at a time.
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();
  cudaError_t reserve(std::size_t bytes);
  [[nodiscard]] void* data() const { return data_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  // The counter, allocated and zeroed on first use.
  cudaError_t counter(unsigned** counter);

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
  unsigned* counter_ = nullptr;
};

// True for the block sizes the rungs support: powers of two from 32 to 1024.
constexpr bool valid_block(unsigned block) {
  return block >= 32 && block <= 1024 && (block & (block - 1)) == 0;
}

// Reduces in[0, n) into *out (device pointers) with the rung's kernel, level after level.
// Errors: cudaErrorInvalidValue (bad block size, null pointer with n > 0, null out),
// cudaErrorInvalidDevicePointer (host memory), or the CUDA error of a launch. Nothing is written
// to *out on a validation error.
template <class T, class Op>
cudaError_t run(const Rung& rung, const T* in, T* out, std::size_t n, unsigned block,
                Workspace& workspace, cudaStream_t stream, const Limits& limits);

// The read-bound reference row (src/ladder/read_bound.cuh): one pass of 16-byte loads over
// in[0, n), one tile of 4096 elements per block of 256 threads, each block's total combined into
// *out by an atomic (in no fixed order). Same errors as run.
template <class T, class Op>
cudaError_t read_bound(const T* in, T* out, std::size_t n, cudaStream_t stream);

// The names of the types and ops the ladder is built for, for the CLI and the tests.
inline constexpr std::string_view kTypeNames[] = {"int32", "uint32", "int64", "float", "double"};
inline constexpr std::string_view kOpNames[] = {"sum", "prod", "min", "max", "and", "or"};

}  // namespace fastreduce::ladder
