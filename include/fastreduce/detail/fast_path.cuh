// The engine's load path: one pass over the input with 16-byte loads.
//
// Each block reduces a contiguous share of the 16-byte-aligned body with vector loads, `unroll`
// of them in flight per thread (each into the thread's state number u % folds, so that a large
// state's update does not wait for the previous one's); block 0 also takes the few elements
// before the first aligned address and after the last whole vector. A grid of one block writes
// the result; a larger grid stores one partial per block for primitives::combine_partials_kernel,
// or its last block combines them (no block waits for another: see grid_finish.cuh). For a given
// grid the combine order is fixed either way, so results are bitwise repeatable.
#pragma once

#include "fastreduce/detail/block_reduce.cuh"
#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/detail/vector.cuh"

namespace fastreduce::engine {

using primitives::LoadHint;

template <class R>
struct FastArgs {
  inputs_t<R> in;
  std::size_t n;
  std::size_t head;       // elements before the first vector-aligned one
  std::size_t vectors;    // whole vectors after the head
  std::size_t share;      // vectors per block (a multiple of the block size)
  typename R::Partial* partials;  // one per block; unused with a single block
  typename R::Out* out;
  unsigned* counter;              // the SelfFinish kernels: the grid's finish counter (grid_finish.cuh)
};

// SelfFinish: the grid's last block combines the partials (args.counter; grid_finish.cuh).
template <unsigned Threads, unsigned Unroll, LoadHint Hint, unsigned V, class R, bool SelfFinish = false>
__global__ void __launch_bounds__(Threads) fast_reduce_kernel(FastArgs<R> args, R red) {
  using State = typename R::State;
  using Acc = typename R::Acc;
  constexpr unsigned F = R::folds < Unroll ? R::folds : Unroll;
  static_assert(Unroll % F == 0, "each state takes whole rounds of loads");
  __shared__ primitives::BlockReduceStorage<Acc, Threads> storage;
  const unsigned tid = threadIdx.x;
  const std::size_t begin = std::size_t(blockIdx.x) * args.share;
  const std::size_t end = begin + args.share < args.vectors ? begin + args.share : args.vectors;
  // The block's unit of work starts at its first vector (block 0: at element 0).
  const std::size_t first = blockIdx.x == 0 ? 0 : args.head + begin * V;
  const R r = red.at(args.n == 0 ? nullptr : args.in.x + (first < args.n ? first : args.n - 1));

  State s[F];
#pragma unroll
  for (unsigned f = 0; f < F; ++f) s[f] = r.start();
  std::size_t i = begin + tid;
  for (; i + (Unroll - 1) * Threads < end; i += Unroll * Threads) {
    Loaded<R, V> v[Unroll];
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) v[u] = load_vector<V, Hint, R>(args.in, args.head, i + u * Threads);  // all in flight
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) s[u % F] = fold_loaded(r, s[u % F], v[u], args.head + (i + u * Threads) * V);
  }
#pragma unroll
  for (unsigned u = 0; u < Unroll - 1; ++u) {  // fewer than Unroll vectors left for this thread
    if (i + u * Threads < end) {
      s[u % F] = fold_loaded(r, s[u % F], load_vector<V, Hint, R>(args.in, args.head, i + u * Threads),
                             args.head + (i + u * Threads) * V);
    }
  }
  if (blockIdx.x == 0) {  // unaligned head and partial-vector tail, element by element
    for (std::size_t k = tid; k < args.head; k += Threads) s[0] = fold_element(r, s[0], args.in, std::ptrdiff_t(k), k);
    const std::size_t tail = args.head + args.vectors * V;
    for (std::size_t k = tail + tid; k < args.n; k += Threads) s[0] = fold_element(r, s[0], args.in, std::ptrdiff_t(k), k);
  }

  Acc acc = r.value(s[0]);
#pragma unroll
  for (unsigned f = 1; f < F; ++f) acc = r.combine(acc, r.value(s[f]));
  primitives::store_block_result<Threads, SelfFinish>(acc, r, storage, args.partials, args.out, args.counter);
}

}  // namespace fastreduce::engine
