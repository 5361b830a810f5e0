// 11 vs 10: the same 16 elements per thread, loaded 16 bytes at a time. Rungs 1-10 issue one
// 4-byte load per float; here one instruction (LDG.E.128) brings four floats (two doubles), so
// a warp asks the memory system for 512 contiguous bytes per instruction instead of 128: four
// times fewer load instructions and memory requests per element, the same bytes. A 16-byte load
// needs a 16-byte aligned address: the input is cut into a scalar head (up to the first aligned
// address), the aligned body as vectors, and a scalar tail shorter than one vector; thread t of
// block 0 adds head element t and tail element t. Any pointer works (a level above the first
// reads partials at any offset of the workspace).
#pragma once

#include <cstdint>

#include "fastreduce/ops.cuh"
#include "ladder/10_warp_reduce_sync.cuh"
#include "fastreduce/detail/vector.cuh"

namespace fastreduce::ladder {

using primitives::kVecElems;
using primitives::Vec;

// in[0, n) as: `head` scalars, `count` aligned vectors, the scalars from `tail_begin` to n.
template <class T>
struct VectorBody {
  const Vec<T>* vectors;
  std::size_t count;
  std::size_t head;
  std::size_t tail_begin;
  std::size_t n;
};

template <class T>
__device__ __forceinline__ VectorBody<T> split_vectors(const T* in, std::size_t n) {
  const auto address = reinterpret_cast<std::uintptr_t>(in);
  std::size_t head = ((16 - address % 16) % 16) / sizeof(T);
  if (head > n) head = n;
  const std::size_t count = (n - head) / kVecElems<T>;
  return {reinterpret_cast<const Vec<T>*>(in + head), count, head, head + count * kVecElems<T>, n};
}

// The head and tail scalars (fewer than two vectors' worth): thread t of block 0 takes head
// element t and tail element t; every other thread gets the identity.
template <class T, class Op>
__device__ __forceinline__ T edge_scalars(const T* in, const VectorBody<T>& body, Op op) {
  T value = Op::template identity<T>();
  if (blockIdx.x == 0) {
    if (threadIdx.x < body.head) value = op(value, in[threadIdx.x]);
    if (body.tail_begin + threadIdx.x < body.n) value = op(value, in[body.tail_begin + threadIdx.x]);
  }
  return value;
}

// One vector's elements combined pairwise.
template <class T, class Op>
__device__ __forceinline__ T vector_value(const Vec<T>& v, Op op) {
  return primitives::reduce_vec<T>(v, op);
}

// Vectors per thread: 16 elements, as rungs 9 and 10.
template <class T>
inline constexpr unsigned kTileVectors = 16 / kVecElems<T>;

// This thread's vectors of its block's tile (kTileVectors vectors a block apart), combined,
// with the bounds check hoisted out of full tiles; plus the head and tail scalars (block 0).
template <unsigned Block, class T, class Op>
__device__ __forceinline__ T vector_tile(const T* in, std::size_t n, Op op) {
  constexpr unsigned K = kTileVectors<T>;
  const VectorBody<T> body = split_vectors(in, n);
  T value = edge_scalars(in, body, op);
  const std::size_t tile = std::size_t(blockIdx.x) * (std::size_t(Block) * K);
  const Vec<T>* mine = body.vectors + tile + threadIdx.x;
  if (tile + std::size_t(Block) * K <= body.count) {
    Vec<T> v[K];
#pragma unroll
    for (unsigned k = 0; k < K; ++k) v[k] = primitives::load_vec(mine + k * Block);  // K loads in flight
#pragma unroll
    for (unsigned k = 0; k < K; ++k) value = op(value, vector_value(v[k], op));
  } else {
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      if (tile + threadIdx.x + std::size_t(k) * Block < body.count) value = op(value, vector_value(primitives::load_vec(mine + k * Block), op));
    }
  }
  return value;
}

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block) vector_loads_kernel(const T* in, T* out, std::size_t n, Op op) {
  const T total = block_reduce_by_warps<Block, ReduceSync>(vector_tile<Block>(in, n, op), op);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

struct VectorLoads {
  static constexpr unsigned items_per_thread = 16;
  template <class T, class Op>
  static void launch(const T* in, T* out, std::size_t n, unsigned grid, unsigned block, cudaStream_t stream) {
    with_block_size(block, [&]<unsigned B>() { vector_loads_kernel<B, T, Op><<<grid, B, 0, stream>>>(in, out, n, Op{}); });
  }
};

}  // namespace fastreduce::ladder
