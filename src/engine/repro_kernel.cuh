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
// Elements enter a lane's sum through TwoSum (exact rounding errors kept: see FloatLane and
// DoubleLane), and partials combine as normalised double-doubles (hi, lo). Only correctly
// rounded additions are used (nothing for the compiler to contract into FMAs), which every
// CUDA GPU implements identically. The plain running sums carry infinities and NaN through, so
// such data gives the IEEE result. (A float lane sum can overflow to infinity where the exact
// sum of its 128 elements would not: inputs near the float limit, 3.4e38, are not supported.)
#pragma once

#include <cooperative_groups.h>

#include <type_traits>

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

// A lane's running sum of 32-bit (or narrower) inputs: a float `sum` with every rounding error
// of it kept exactly (TwoSum in float) and added to a double `error`. sum + error equals the
// exact sum of the lane's elements up to the double additions' rounding (about 2^-53 of the
// errors, themselves 2^-24 of the sum), while most of the work stays in the float pipeline:
// per element six float additions, one conversion and one double addition.
struct FloatLane {
  float sum = 0.0f;
  double error = 0.0;
  __device__ __forceinline__ void add(float x) {
    const float t = __fadd_rn(sum, x);
    const float z = __fsub_rn(t, sum);
    const float e = __fadd_rn(__fsub_rn(sum, __fsub_rn(t, z)), __fsub_rn(x, z));
    error = __dadd_rn(error, static_cast<double>(e));
    sum = t;
  }
  __device__ __forceinline__ DoubleDouble total() const {
    if (!isfinite(sum)) return {static_cast<double>(sum), 0.0};
    return dd_add({static_cast<double>(sum), 0.0}, {error, 0.0});
  }
};

// A lane's running sum of doubles: TwoSum in double, errors in lo.
struct DoubleLane {
  DoubleDouble acc{0.0, 0.0};
  __device__ __forceinline__ void add(double x) { acc = two_sum_add(acc, x); }
  __device__ __forceinline__ DoubleDouble total() const { return acc; }
};

template <class T>
using Lane = std::conditional_t<std::is_same_v<T, double>, DoubleLane, FloatLane>;

// Adds one vector to the lane's two accumulators (even and odd elements: two dependency chains).
template <class T>
__device__ __forceinline__ void add_vector(Lane<T> (&lanes)[2], const Vec<T>& v) {
#pragma unroll
  for (unsigned c = 0; c < kVecElems<T>; ++c) {
    if constexpr (std::is_same_v<T, double>) lanes[c % 2].add(v.elem[c]);
    else lanes[c % 2].add(to_acc<float>(v.elem[c]));
  }
}

// One tile, summed by one warp in the fixed order: lane l owns the tile's vectors l, l + 32, ...,
// added in increasing order. A batch of kReproLoadBatch vectors per lane is loaded before any is
// added, so a tile costs one or two trips to memory.
template <class T>
__device__ __forceinline__ DoubleDouble sum_tile(const T* in, std::size_t n, std::size_t tile,
                                                 bool aligned, unsigned lane) {
  constexpr unsigned V = kVecElems<T>;
  constexpr unsigned vectors_per_lane = kReproTile / V / 32;
  constexpr unsigned batch = vectors_per_lane < kReproLoadBatch ? vectors_per_lane : kReproLoadBatch;
  static_assert(vectors_per_lane % batch == 0);
  const std::size_t base = tile * kReproTile;
  Lane<T> lanes[2];
  const bool whole = aligned && base + kReproTile <= n;
  const Vec<T>* v = reinterpret_cast<const Vec<T>*>(in + base) + lane;
#pragma unroll 1
  for (unsigned b = 0; b < vectors_per_lane; b += batch) {
    Vec<T> loaded[batch];
    if (whole) {
#pragma unroll
      for (unsigned j = 0; j < batch; ++j) loaded[j] = load_vec(v + (b + j) * 32);
    } else {
      // Same order, element loads: a misaligned pointer or the last, partial tile. Elements
      // past n count as +0.0, which leaves every partial unchanged.
#pragma unroll
      for (unsigned j = 0; j < batch; ++j) {
        const std::size_t first = base + (std::size_t(b + j) * 32 + lane) * V;
#pragma unroll
        for (unsigned c = 0; c < V; ++c) loaded[j].elem[c] = first + c < n ? in[first + c] : T(0.0f);
      }
    }
#pragma unroll
    for (unsigned j = 0; j < batch; ++j) add_vector<T>(lanes, loaded[j]);
  }
  return warp_dd_reduce(dd_add(lanes[0].total(), lanes[1].total()));
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
