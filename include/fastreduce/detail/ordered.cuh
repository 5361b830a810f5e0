// Kernels for reductions whose op is associative but not commutative (composing affine maps,
// concatenating ranges): operands always meet in index order, only bracketed differently.
//
// 1-D: each block takes a contiguous run of tiles (a tile is kRound sub-tiles of kOrderedThreads
// threads x V elements); a thread folds its V elements of a sub-tile in order, the block combines
// the threads' values in order (ordered warp shuffles, then the warps in order), tile after tile;
// one more block merges the blocks' partials in order (ordered_partials_kernel).
// Axis and segments: a group of G threads (1, a warp or the block) per output, each thread a
// contiguous run of the output's elements, the threads meeting in order.
// At most two kernels, no allocation, no block waiting for another.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/policy.hpp"
#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/detail/vector.cuh"
#include "fastreduce/detail/warp_reduce.cuh"

namespace fastreduce::engine {

inline constexpr unsigned kOrderedWarps = kOrderedThreads / 32;
// Sub-tiles per round: each thread's kRound values go through the ordered warp combine, and the
// block meets once per round (two barriers per kRound x 256 x V elements).
inline constexpr unsigned kRound = kOrderedRound;

// Shared memory for the warps' values of a round (raw storage: a value may have member initialisers).
template <class A>
struct RoundTotals {
  alignas(A) unsigned char bytes[sizeof(A) * kRound * kOrderedWarps];
  __device__ A& at(unsigned u, unsigned w) { return reinterpret_cast<A*>(bytes)[u * kOrderedWarps + w]; }
};

// Thread 0 gets v[0] c v[1] c ... c v[Threads - 1] (threads in order) of a block's values.
template <unsigned Threads, class A, class Combine>
__device__ __forceinline__ A block_ordered(A v, const Combine& c, RoundTotals<A>& shared) {
  static_assert(Threads / 32 <= kRound * kOrderedWarps, "a slot of `shared` per warp");
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = primitives::warp_ordered(v, c, lane);
  if (lane == 0) shared.at(0, warp) = v;
  __syncthreads();  // every warp's value is staged
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < Threads / 32; ++w) v = c(v, shared.at(0, w));
  }
  __syncthreads();  // thread 0 has read the slots before anyone writes them again
  return v;
}

template <class R>
struct OrderedArgs {
  const typename R::Input* in;
  std::size_t n;
  std::size_t per_block;  // tiles per block
  typename R::Partial* partials;
  typename R::Out* out;
};

// Block b folds tiles [b per_block, (b + 1) per_block) into partials[b], or writes the result for
// a grid of one block. V > 1 only for a vector-aligned input.
template <unsigned V, class R>
__global__ void __launch_bounds__(kOrderedThreads) ordered_tiles_kernel(OrderedArgs<R> args, R red) {
  using Acc = typename R::Acc;
  static_assert(kRound == 4, "the value arrays below are written out for 4 sub-tiles");
  __shared__ RoundTotals<Acc> totals;
  const R r = red.at(nullptr);
  const CombineWith<R> c{r};
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  Acc acc = r.identity();
  constexpr std::size_t kSub = std::size_t(kOrderedThreads) * V;
  constexpr std::size_t kTile = kSub * kRound;
  const std::size_t first = std::size_t(blockIdx.x) * args.per_block;
  const std::size_t tiles = (args.n + kTile - 1) / kTile;
  const std::size_t last = first + args.per_block < tiles ? first + args.per_block : tiles;
  for (std::size_t t = first; t < last; ++t) {
    Acc v[kRound] = {r.identity(), r.identity(), r.identity(), r.identity()};
#pragma unroll
    for (unsigned u = 0; u < kRound; ++u) {
      const std::size_t base = t * kTile + u * kSub + std::size_t(threadIdx.x) * V;
      typename R::State s = r.start();
      if (base + V <= args.n) {
        s = r.fold_vec(s, primitives::load_vec(reinterpret_cast<const primitives::Vec<typename R::Input, V>*>(args.in + base)),
                       base);
      } else {
        for (unsigned i = 0; i < V && base + i < args.n; ++i) s = r.fold(s, args.in[base + i], base + i);
      }
      v[u] = r.value(s);
    }
    // The round's values in (sub-tile, thread) order into acc.
#pragma unroll
    for (unsigned u = 0; u < kRound; ++u) {
      const Acc w = primitives::warp_ordered(v[u], c, lane);
      if (lane == 0) totals.at(u, warp) = w;
    }
    __syncthreads();  // every warp's values of the round are staged
    if (threadIdx.x == 0) {
      for (unsigned u = 0; u < kRound; ++u) {
        for (unsigned w = 0; w < kOrderedWarps; ++w) acc = r.combine(acc, totals.at(u, w));
      }
    }
    __syncthreads();  // thread 0 has read the round before the next one is staged
  }
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) write_result(r, args.out, 0, r.partial(acc));
    else args.partials[blockIdx.x] = r.partial(acc);
  }
}

// One block: *out = project(partials[0] merge partials[1] merge ... merge partials[count - 1]).
// Thread t merges a contiguous run of the partials in order, then the threads meet in order.
template <class R>
__global__ void __launch_bounds__(kOrderedThreads) ordered_partials_kernel(const typename R::Partial* partials,
                                                                           unsigned count, typename R::Out* out, R r) {
  using P = typename R::Partial;
  __shared__ RoundTotals<P> totals;
  primitives::wait_for_prior_grid();
  const unsigned run = (count + kOrderedThreads - 1) / kOrderedThreads;
  const unsigned begin = threadIdx.x * run < count ? threadIdx.x * run : count;
  const unsigned end = begin + run < count ? begin + run : count;
  P acc = r.partial_identity();
  for (unsigned i = begin; i < end; ++i) acc = r.merge(acc, primitives::load_from_l2(partials + i));
  acc = block_ordered<kOrderedThreads>(acc, MergeWith<R>{r}, totals);
  if (threadIdx.x == 0) write_result(r, out, 0, acc);
}

// Output o's elements: in[base + k * step] for k < length.
struct OrderedAxis {
  std::size_t length, inner;
  std::int64_t outer_stride, length_stride, inner_stride;
  __device__ __forceinline__ void at(std::size_t o, std::int64_t& base, std::size_t& len, std::int64_t& step) const {
    const std::size_t oo = o / inner, ii = o % inner;
    base = static_cast<std::int64_t>(oo) * outer_stride + static_cast<std::int64_t>(ii) * inner_stride;
    len = length;
    step = length_stride;
  }
};
template <class Offset>
struct OrderedSegments {
  const Offset* begin;
  const Offset* end;
  __device__ __forceinline__ void at(std::size_t o, std::int64_t& base, std::size_t& len, std::int64_t& step) const {
    const Offset b = begin[o], e = end[o];
    base = static_cast<std::int64_t>(b);
    len = e > b ? static_cast<std::size_t>(e - b) : 0;
    step = 1;
  }
};

// Groups of G threads (1, a warp or the block) each reduce one output at a time, thread r of a
// group a contiguous run of its elements, so the op's operands always meet in index order.
template <unsigned G, class R, class Layout>
__global__ void __launch_bounds__(kOrderedThreads) ordered_groups_kernel(const typename R::Input* in, Layout layout,
                                                                         std::size_t outputs, typename R::Out* out,
                                                                         R red) {
  static_assert(G == 1 || G == 32 || G == kOrderedThreads);
  using Acc = typename R::Acc;
  __shared__ RoundTotals<Acc> totals;
  constexpr unsigned kGroups = kOrderedThreads / G;
  const unsigned g = threadIdx.x / G, rank = threadIdx.x % G, lane = threadIdx.x % 32;
  for (std::size_t o = std::size_t(blockIdx.x) * kGroups + g; o < outputs; o += std::size_t(gridDim.x) * kGroups) {
    std::int64_t base = 0, step = 0;
    std::size_t len = 0;
    layout.at(o, base, len, step);
    const typename R::Input* row = in + base;
    const R r = red.at(len > 0 ? row : nullptr);
    typename R::State s = r.start();
    const std::size_t chunk = (len + G - 1) / G;
    const std::size_t k0 = rank * chunk < len ? rank * chunk : len, k1 = k0 + chunk < len ? k0 + chunk : len;
    for (std::size_t k = k0; k < k1; ++k) s = r.fold(s, row[static_cast<std::int64_t>(k) * step], k);
    Acc v = r.value(s);
    const CombineWith<R> c{r};
    if constexpr (G == 32) v = primitives::warp_ordered(v, c, lane);
    if constexpr (G == kOrderedThreads) v = block_ordered<kOrderedThreads>(v, c, totals);
    if (rank == 0) write_result(r, out, o, r.partial(v));
  }
}

}  // namespace fastreduce::engine
