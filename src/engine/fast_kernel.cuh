// The engine's fast path: one launch, one pass over the input.
//
// Each block reduces a contiguous share of the 16-byte-aligned body with vector loads, `unroll`
// of them in flight per thread; block 0 also takes the few elements before the first aligned
// address and after the last whole vector. With more than one block, the kernel is launched
// cooperatively: after a grid-wide barrier block 0 combines the block partials in index order.
// No atomics: for a given grid the combine order is fixed, so results are bitwise repeatable.
// (A last-block counter would need its word zeroed before the first call on an opaque temp
// buffer: an extra memset per call, 1.5 us on an H200, more than the barrier costs.)
#pragma once

#include <cooperative_groups.h>

#include "engine/vector_load.cuh"
#include "fastreduce/fastreduce.cuh"
#include "primitives/block_reduce.cuh"

namespace fastreduce::engine {

template <class T, class A>
struct FastArgs {
  const T* in;
  std::size_t n;
  std::size_t head;       // elements before the first 16-byte-aligned one
  std::size_t vectors;    // whole 16-byte vectors after the head
  std::size_t share;      // vectors per block (a multiple of the block size)
  A* partials;            // one per block; unused with a single block
  A* out;
};

template <class A, class T, class Op>
__device__ __forceinline__ A reduce_vec(const Vec<T>& v, Op op) {
  A lanes[kVecElems<T>];
#pragma unroll
  for (unsigned k = 0; k < kVecElems<T>; ++k) lanes[k] = to_acc<A>(v.elem[k]);
#pragma unroll
  for (unsigned width = kVecElems<T> / 2; width > 0; width /= 2) {  // pairwise: shorter chains
#pragma unroll
    for (unsigned k = 0; k < width; ++k) lanes[k] = op(lanes[k], lanes[k + width]);
  }
  return lanes[0];
}

// Ends a one-pass kernel: the block's threads reduce `acc`; with one block thread 0 writes the
// result, otherwise each block stores its partial, all meet at the grid barrier (the launch is
// cooperative), and block 0 combines the partials in index order.
template <unsigned Threads, class A, class Op>
__device__ __forceinline__ void finish_grid(A acc, Op op, primitives::BlockReduceStorage<A, Threads>& storage,
                                            A* partials, A* out) {
  const unsigned tid = threadIdx.x;
  const A block_total = primitives::block_reduce<Threads>(acc, op, storage);
  if (gridDim.x == 1) {
    if (tid == 0) *out = block_total;
    return;
  }
  if (tid == 0) partials[blockIdx.x] = block_total;
  cooperative_groups::this_grid().sync();  // all partials are written and visible grid-wide
  if (blockIdx.x != 0) return;
  A combined = Op::template identity<A>();
  for (unsigned b = tid; b < gridDim.x; b += Threads) combined = op(combined, __ldcg(partials + b));
  const A total = primitives::block_reduce<Threads>(combined, op, storage);
  if (tid == 0) *out = total;
}

template <unsigned Threads, unsigned Unroll, LoadHint Hint, class T, class Op>
__global__ void __launch_bounds__(Threads) fast_reduce_kernel(FastArgs<T, acc_t<T, Op>> args, Op op) {
  using A = acc_t<T, Op>;
  __shared__ primitives::BlockReduceStorage<A, Threads> storage;
  const unsigned tid = threadIdx.x;
  const Vec<T>* body = reinterpret_cast<const Vec<T>*>(args.in + args.head);
  const std::size_t begin = std::size_t(blockIdx.x) * args.share;
  const std::size_t end = begin + args.share < args.vectors ? begin + args.share : args.vectors;

  A acc = Op::template identity<A>();
  std::size_t i = begin + tid;
  for (; i + (Unroll - 1) * Threads < end; i += Unroll * Threads) {
    Vec<T> v[Unroll];
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) v[u] = load_vec<Hint>(body + i + u * Threads);  // all in flight
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) acc = op(acc, reduce_vec<A>(v[u], op));
  }
#pragma unroll
  for (unsigned u = 0; u < Unroll - 1; ++u) {  // fewer than Unroll vectors left for this thread
    if (i + u * Threads < end) acc = op(acc, reduce_vec<A>(load_vec<Hint>(body + i + u * Threads), op));
  }
  if (blockIdx.x == 0) {  // unaligned head and partial-vector tail, element by element
    for (std::size_t k = tid; k < args.head; k += Threads) acc = op(acc, to_acc<A>(args.in[k]));
    const std::size_t tail = args.head + args.vectors * kVecElems<T>;
    for (std::size_t k = tail + tid; k < args.n; k += Threads) acc = op(acc, to_acc<A>(args.in[k]));
  }

  finish_grid<Threads>(acc, op, storage, args.partials, args.out);
}

}  // namespace fastreduce::engine
