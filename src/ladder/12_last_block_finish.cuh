// 12 vs 11: one kernel instead of one per level. Rungs 1-11 end each block with a partial, and
// the host launches the kernel again over the partials (2 or 3 launches at 2^24 floats); each
// launch drains the GPU, waits for the next to be scheduled and, at small n, costs more than
// the work. Here a fixed grid (enough blocks to fill every SM, as rung 7) walks the vectors of
// rung 11 with a grid-stride loop, four 16-byte loads in flight per thread, and the grid
// finishes by itself: each block stores its partial, makes it visible to the whole GPU
// (__threadfence), and counts itself on an atomic counter; the block that arrives last reads
// every partial and writes the result, then sets the counter back to zero for the next launch.
// No block ever waits for another, so the kernel runs on whatever SMs are free (compare 12c).
#pragma once

#include "fastreduce/ops.cuh"
#include "ladder/11_vector_loads.cuh"

namespace fastreduce::ladder {

// Threads and blocks one SM holds on the architecture being compiled (sm_80, sm_90, sm_100:
// 2048 and 32; sm_75: 1024 and 16; the others: 1536 and at least 16), as
// cudaDevAttrMaxThreadsPerMultiProcessor reports the threads at run time.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000 || \
    __CUDA_ARCH__ == 1030
inline constexpr unsigned kSmThreads = 2048, kSmBlocks = 32;
#elif __CUDA_ARCH__ == 750
inline constexpr unsigned kSmThreads = 1024, kSmBlocks = 16;
#else
inline constexpr unsigned kSmThreads = 1536, kSmBlocks = 16;
#endif

// Resident blocks of Block threads per SM that the one-kernel rungs ask the compiler to allow
// (registers for a full SM of threads): the grid the driver plans (Limits::grid_stride_blocks)
// is then resident at once.
template <unsigned Block>
inline constexpr unsigned kFullSmBlocks = kSmThreads / Block < kSmBlocks ? kSmThreads / Block : kSmBlocks;

// This thread's share of the aligned vectors, walked with a grid-stride loop, K loads issued
// before the first add.
template <unsigned Block, class T, class Op>
__device__ __forceinline__ T grid_stride_vectors(const VectorBody<T>& body, Op op) {
  constexpr unsigned K = 4;
  const std::size_t threads = std::size_t(gridDim.x) * Block;
  std::size_t i = std::size_t(blockIdx.x) * Block + threadIdx.x;
  T value = Op::template identity<T>();
  for (; i + (K - 1) * threads < body.count; i += K * threads) {
    Vec<T> v[K];
#pragma unroll
    for (unsigned k = 0; k < K; ++k) v[k] = primitives::load_vec(body.vectors + i + k * threads);
#pragma unroll
    for (unsigned k = 0; k < K; ++k) value = op(value, vector_value(v[k], op));
  }
  for (; i < body.count; i += threads) value = op(value, vector_value(primitives::load_vec(body.vectors + i), op));
  return value;
}

// One block combines the gridDim.x partials in index order (served from L2: other blocks wrote
// them); thread 0 gets the result. The finish of rungs 12-14 and 12c.
template <unsigned Block, class T, class Op>
__device__ __forceinline__ T combine_partials(const T* partials, Op op) {
  T value = Op::template identity<T>();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += Block) value = op(value, __ldcg(partials + b));
  return block_reduce_by_warps<Block, ReduceSync>(value, op);
}

// Every thread passes its share; the block combines them, and the last block to arrive
// combines the blocks' partials and writes *out.
template <unsigned Block, class T, class Op>
__device__ __forceinline__ void finish_in_last_block(T value, T* partials, unsigned* arrived, T* out, Op op) {
  const T block_total = block_reduce_by_warps<Block, ReduceSync>(value, op);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_total;
    __threadfence();  // the partial is visible to every block before this block is counted
    last = atomicAdd(arrived, 1u) == gridDim.x - 1;
  }
  __syncthreads();  // `last` is known to the whole block (and warp 0 is done with the warp totals)
  if (!last) return;
  __threadfence();  // the other blocks' partials, counted before this block, are read after the count
  const T total = combine_partials<Block>(partials, op);
  if (threadIdx.x == 0) {
    *out = total;
    *arrived = 0;  // ready for the next launch (stream order keeps launches apart)
  }
}

// This thread's elements: its head/tail scalars (block 0) and its grid-stride share of vectors.
template <unsigned Block, class T, class Op>
__device__ __forceinline__ T thread_share_of_vectors(const T* in, std::size_t n, Op op) {
  const VectorBody<T> body = split_vectors(in, n);
  return op(edge_scalars(in, body, op), grid_stride_vectors<Block>(body, op));
}

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block, kFullSmBlocks<Block>)
    last_block_finish_kernel(const T* in, T* out, std::size_t n, T* partials, unsigned* arrived, Op op) {
  finish_in_last_block<Block>(thread_share_of_vectors<Block>(in, n, op), partials, arrived, out, op);
}

// A one-kernel rung: KernelOf<Block, T, Op>::kernel(in, out, n, partials, arrived, op) on the
// planned grid, no dynamic shared memory (rungs 12, 13, 13t and 14 differ only in the kernel).
template <template <unsigned, class, class> class KernelOf>
struct OneKernelLaunch {
  static constexpr unsigned items_per_thread = 16;
  static constexpr bool one_kernel = true;
  template <class T, class Op>
  static cudaError_t launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block, T* partials,
                            unsigned* arrived, cudaStream_t stream) {
    with_block_size(block, [&]<unsigned B>() {
      KernelOf<B, T, Op>::kernel<<<grid, B, 0, stream>>>(in, out, n, partials, arrived, Op{});
    });
    return cudaGetLastError();
  }
};

template <unsigned Block, class T, class Op>
struct LastBlockFinishKernel {
  static constexpr auto kernel = last_block_finish_kernel<Block, T, Op>;
};
using LastBlockFinish = OneKernelLaunch<LastBlockFinishKernel>;

}  // namespace fastreduce::ladder
