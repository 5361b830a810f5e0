// Reproducible, compensated floating-point sum.
//
// The summation order depends on the data's length alone, never on the launch:
//   1. the input is cut into tiles of kReproTile elements; one warp sums a tile, lane l taking
//      the 16-byte vectors l, l + 32, l + 64, ... of the tile, element by element, in order;
//   2. the 32 lane partials combine in a fixed xor-butterfly;
//   3. the tile partials are stored by tile index, and after a grid-wide barrier block 0
//      combines them: thread t takes tiles t, t + 256, ..., then a fixed block tree.
// Which block or warp sums a tile changes with the GPU and max_blocks; the arithmetic does not.
//
// Every partial is a double-double (hi, lo): elements enter through TwoSum, so each lane's
// rounding errors are kept in lo, and partials combine with a normalised double-double add.
// Only additions are used (nothing for the compiler to contract into FMAs), in IEEE double,
// which every CUDA GPU implements identically. hi is always the plain running sum, so an
// infinity or NaN in the data gives the IEEE result.
#pragma once

#include <cooperative_groups.h>

#include "engine/policy.hpp"
#include "engine/vector_load.cuh"
#include "fastreduce/fastreduce.cuh"
#include "primitives/warp_reduce.cuh"

namespace fastreduce::engine {

struct alignas(16) DoubleDouble {
  double hi;
  double lo;
};

// Adds x to a lane accumulator with TwoSum (exact error term, no ordering assumption).
__device__ __forceinline__ DoubleDouble two_sum_add(DoubleDouble a, double x) {
  const double s = __dadd_rn(a.hi, x);
  const double z = __dsub_rn(s, a.hi);
  const double e = __dadd_rn(__dsub_rn(a.hi, __dsub_rn(s, z)), __dsub_rn(x, z));
  return {s, __dadd_rn(a.lo, e)};
}

// Normalised double-double addition; non-finite sums pass through as IEEE would give them.
__device__ __forceinline__ DoubleDouble dd_add(DoubleDouble a, DoubleDouble b) {
  const double s = __dadd_rn(a.hi, b.hi);
  if (!isfinite(s)) return {s, 0.0};
  const double z = __dsub_rn(s, a.hi);
  const double e = __dadd_rn(__dsub_rn(a.hi, __dsub_rn(s, z)), __dsub_rn(b.hi, z));
  const double lo = __dadd_rn(__dadd_rn(a.lo, b.lo), e);
  const double hi = __dadd_rn(s, lo);  // FastTwoSum: |s| >= |lo| here
  return {hi, __dsub_rn(lo, __dsub_rn(hi, s))};
}

__device__ __forceinline__ DoubleDouble warp_dd_reduce(DoubleDouble v) {
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    DoubleDouble other;
    other.hi = __shfl_xor_sync(primitives::kFullMask, v.hi, offset);  // partner lane's partial
    other.lo = __shfl_xor_sync(primitives::kFullMask, v.lo, offset);
    // Both lanes must compute the same value: order the operands by lane, not by caller.
    v = (threadIdx.x & offset) ? dd_add(other, v) : dd_add(v, other);
  }
  return v;
}

template <class T, class A>
struct ReproArgs {
  const T* in;
  std::size_t n;
  std::size_t tiles;
  bool aligned;                // in is 16-byte aligned: vector loads
  DoubleDouble* partials;      // one per tile
  A* out;
};

// Adds one loaded vector to the lane's two accumulators (even and odd elements: two
// independent dependency chains).
template <class T>
__device__ __forceinline__ void add_vector(DoubleDouble (&acc)[2], const Vec<T>& v) {
#pragma unroll
  for (unsigned c = 0; c < kVecElems<T>; ++c) acc[c % 2] = two_sum_add(acc[c % 2], to_acc<double>(v.elem[c]));
}

// One tile, summed by one warp in the fixed order. Lane l owns the tile's vectors l, l + 32, ...
template <class T>
__device__ __forceinline__ DoubleDouble sum_tile(const T* in, std::size_t n, std::size_t tile,
                                                 bool aligned, unsigned lane) {
  constexpr unsigned V = kVecElems<T>;
  constexpr unsigned batches = kReproTile / V / 32 / kReproLoadBatch;
  static_assert(batches * kReproLoadBatch * 32 * V == kReproTile);
  const std::size_t base = tile * kReproTile;
  DoubleDouble acc[2] = {{0.0, 0.0}, {0.0, 0.0}};
  if (aligned && base + kReproTile <= n) {
    // Whole, aligned tile: 16-byte loads, the next batch in flight while this one is added.
    const Vec<T>* v = reinterpret_cast<const Vec<T>*>(in + base) + lane;
    Vec<T> current[kReproLoadBatch];
#pragma unroll
    for (unsigned j = 0; j < kReproLoadBatch; ++j) current[j] = load_vec(v + j * 32);
#pragma unroll
    for (unsigned b = 0; b < batches; ++b) {
      Vec<T> next[kReproLoadBatch];
      if (b + 1 < batches) {
#pragma unroll
        for (unsigned j = 0; j < kReproLoadBatch; ++j) next[j] = load_vec(v + ((b + 1) * kReproLoadBatch + j) * 32);
      }
#pragma unroll
      for (unsigned j = 0; j < kReproLoadBatch; ++j) add_vector(acc, current[j]);
      if (b + 1 < batches) {
#pragma unroll
        for (unsigned j = 0; j < kReproLoadBatch; ++j) current[j] = next[j];
      }
    }
  } else {
    // Same order with element loads: a misaligned pointer or the last, partial tile. Missing
    // elements count as +0.0, which leaves every partial unchanged.
#pragma unroll 1
    for (unsigned b = 0; b < batches; ++b) {
      Vec<T> current[kReproLoadBatch];
#pragma unroll
      for (unsigned j = 0; j < kReproLoadBatch; ++j) {
        const std::size_t first = base + (std::size_t(b * kReproLoadBatch + j) * 32 + lane) * V;
#pragma unroll
        for (unsigned c = 0; c < V; ++c) current[j].elem[c] = first + c < n ? in[first + c] : T(0.0f);
      }
#pragma unroll
      for (unsigned j = 0; j < kReproLoadBatch; ++j) add_vector(acc, current[j]);
    }
  }
  return warp_dd_reduce(dd_add(acc[0], acc[1]));
}

template <class T>
__global__ void __launch_bounds__(kReproThreads) repro_sum_kernel(ReproArgs<T, acc_t<T, Sum>> args) {
  constexpr unsigned warps = kReproThreads / 32;
  __shared__ DoubleDouble warp_partials[warps];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const std::size_t total_warps = std::size_t(gridDim.x) * warps;
  for (std::size_t tile = std::size_t(blockIdx.x) * warps + warp; tile < args.tiles; tile += total_warps) {
    const DoubleDouble t = sum_tile(args.in, args.n, tile, args.aligned, lane);
    if (lane == 0) args.partials[tile] = t;
  }
  if (gridDim.x > 1) {
    cooperative_groups::this_grid().sync();  // every tile partial is written and visible
    if (blockIdx.x != 0) return;
  } else {
    __syncthreads();  // this block's tile partials are visible to all its threads
  }
  // Tile partials: the high parts through TwoSum (exact errors kept), the low parts added plainly
  // (they are already rounding-error sized): a short dependency chain per step.
  DoubleDouble acc{0.0, 0.0};
  double low = 0.0;
  for (std::size_t t = threadIdx.x; t < args.tiles; t += kReproThreads) {
    const double2 p = __ldcg(reinterpret_cast<const double2*>(args.partials + t));
    acc = two_sum_add(acc, p.x);
    low = __dadd_rn(low, p.y);
  }
  acc = warp_dd_reduce(dd_add(acc, DoubleDouble{low, 0.0}));
  if (lane == 0) warp_partials[warp] = acc;
  __syncthreads();  // the eight warp partials are in shared memory before warp 0 reads them
  if (threadIdx.x == 0) {
    DoubleDouble total = warp_partials[0];
    for (unsigned w = 1; w < warps; ++w) total = dd_add(total, warp_partials[w]);
    const double result = isfinite(total.hi) ? __dadd_rn(total.hi, total.lo) : total.hi;
    *args.out = static_cast<acc_t<T, Sum>>(result);
  }
}

}  // namespace fastreduce::engine
