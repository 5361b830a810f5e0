// The engine's load path: one pass over the input with 16-byte loads.
//
// Each block reduces a contiguous share of the 16-byte-aligned body with vector loads, `unroll`
// of them in flight per thread; block 0 also takes the few elements before the first aligned
// address and after the last whole vector. A grid of one block writes the result; a larger grid
// stores one partial per block for primitives::combine_partials_kernel (no block waits for
// another: see primitives/grid_finish.cuh). No atomics: for a given grid the combine order is
// fixed, so results are bitwise repeatable.
#pragma once

#include "fastreduce/fastreduce.cuh"
#include "primitives/block_reduce.cuh"
#include "primitives/grid_finish.cuh"
#include "primitives/vector.cuh"

namespace fastreduce::engine {

using primitives::LoadHint;

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

template <unsigned Threads, unsigned Unroll, LoadHint Hint, class T, class Op>
__global__ void __launch_bounds__(Threads) fast_reduce_kernel(FastArgs<T, acc_t<T, Op>> args, Op op) {
  using A = acc_t<T, Op>;
  __shared__ primitives::BlockReduceStorage<A, Threads> storage;
  const unsigned tid = threadIdx.x;
  using primitives::load_vec;
  using primitives::reduce_vec;
  using primitives::to_acc;
  using primitives::Vec;
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
    const std::size_t tail = args.head + args.vectors * primitives::kVecElems<T>;
    for (std::size_t k = tail + tid; k < args.n; k += Threads) acc = op(acc, to_acc<A>(args.in[k]));
  }

  primitives::store_block_result<Threads>(acc, op, storage, args.partials, args.out);
}

}  // namespace fastreduce::engine
