// ArgMax and ArgMin as reductions (detail/reduction.cuh).
//
// A thread keeps the best element it has seen and, apart, the best 16-byte vector: whole vectors
// take a cheap way with no index work and no branch (the vector's extreme decides, the vector is
// kept whole with the index of its first element, and which of its elements is the extreme is
// looked up once, at the end). A thread's vectors come in increasing index order, so a later
// vector replaces the best only when strictly better; single elements (a row's head and tail, a
// column's elements) may come in any order and compare indices on ties.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/ops.cuh"

namespace fastreduce::engine {

// The extreme of a and b, NaN if either is (a single instruction for float on sm_80 and later).
template <class V, bool Greater>
__device__ __forceinline__ V extreme_nan(V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    return Greater ? (b > a ? b : a) : (b < a ? b : a);
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<V, float>) {
      float r;
      if constexpr (Greater) asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      else asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      return r;
    }
#endif
    return (a != a || (Greater ? a > b : a < b)) ? a : b;
  }
}

template <class V, class Op>
struct ArgReduction {
  static constexpr bool kGreater = std::is_same_v<Op, ArgMax>;
  static constexpr unsigned K = primitives::kVecElems<V>;
  static constexpr unsigned kWords = (sizeof(V) * K + 3) / 4;
  using Input = V;
  using Input2 = NoInput;
  using Acc = Indexed<V>;
  using Partial = Indexed<V>;
  using Out = Indexed<V>;
  struct State {
    V best;
    std::int64_t index;   // -1: no single element yet
    V vbest;              // the best vector's extreme
    unsigned vkept[kWords];  // the best vector's bytes
    std::int64_t vfirst;  // its first element's index; -1: no vector yet
  };
  static constexpr bool commutative = true;
  static constexpr unsigned folds = 2;
  static constexpr bool order_independent = true;
  // Axes of length 1 stay on the tile path: the map kernel, which writes each 16-byte Indexed
  // from its own thread, measured slower (2^24 rows of 1 float on an H100: 270 against 207 us).
  static constexpr bool kMapPath = false;
  // One block up to half the built-ins' bytes on sm_90: its thread state and index work made one
  // block's pass over 2^16 floats in HBM take 10.5 us against 8.2-8.6 us for a small grid (then of
  // 256-thread blocks) and its combine (H100, bench --ops, 2026-11-27; docs/notes.md). At 2^14 and
  // 2^15 it keeps one block.
  static constexpr std::size_t kOneBlockDivisor = 2;
  // The columns kernel combines a column's lanes in groups of threads (axis_fast.cuh): over
  // columns of 256 rows the walk of one thread a column held 41% of the stall cycles at the block's
  // barrier (Nsight Compute, H100, 2026-11-28).
  static constexpr bool kColumnGroups = true;
  // Float rows of 16 to 256 elements on the rows-lanes kernel loop over a few waves
  // (axis_dispatch.cuh, lanes_loop; at 2^28 on an H200 1.03-1.11x, rows of 8 0.98x, of 512 0.99x).
  // Measured for float inputs alone: the others keep a block per kAxisWarps runs.
  static constexpr bool lanes_loop(std::size_t length) {
    return std::is_same_v<V, float> && length >= 16 && length <= 256;
  }
  Op op;

  // Strictly better than `than`, or NaN where `than` is not.
  __device__ __forceinline__ static bool beats(const V& x, const V& than) {
    return (kGreater ? !(x <= than) : !(x >= than)) && !detail::nan_value(than);
  }
  __device__ __forceinline__ ArgReduction at(const V*) const { return *this; }
  __host__ __device__ __forceinline__ Acc identity() const { return Op::template identity<Acc>(); }
  __device__ __forceinline__ State start() const {
    State s{};
    s.index = -1;
    s.vfirst = -1;
    return s;
  }
  __device__ __forceinline__ State fold(State s, const V& x, std::size_t i) const {
    const Acc e{x, static_cast<std::int64_t>(i)};
    if (s.index < 0 || detail::wins<V, kGreater>(e, Acc{s.best, s.index})) {
      s.best = x;
      s.index = e.index;
    }
    return s;
  }
  __device__ __forceinline__ State fold_vec(State s, const primitives::Vec<V, K>& v, std::size_t first) const {
    V m = v.elem[0];
#pragma unroll
    for (unsigned k = 1; k < K; ++k) m = extreme_nan<V, kGreater>(m, v.elem[k]);
    const bool better = s.vfirst < 0 || beats(m, s.vbest);
    s.vbest = better ? m : s.vbest;
    unsigned words[kWords];
    __builtin_memcpy(words, v.elem, sizeof(V) * K);
#pragma unroll
    for (unsigned w = 0; w < kWords; ++w) s.vkept[w] = better ? words[w] : s.vkept[w];
    s.vfirst = better ? static_cast<std::int64_t>(first) : s.vfirst;
    return s;
  }
  __device__ __forceinline__ Acc value(const State& s) const {
    Acc r = s.index < 0 ? identity() : Acc{s.best, s.index};
    if (s.vfirst >= 0) {  // the first element of the best vector that is its extreme (or NaN)
      V x[K];
      __builtin_memcpy(x, s.vkept, sizeof(V) * K);
      unsigned at = K - 1;
#pragma unroll
      for (int k = int(K) - 1; k >= 0; --k) {
        if (detail::nan_value(s.vbest) ? detail::nan_value(x[k]) : x[k] == s.vbest) at = unsigned(k);
      }
      const Acc e{x[at], s.vfirst + std::int64_t(at)};
      // (Every element beats the identity: no single element, no comparison. A lane of the
      // lanes kernel folds one vector from the empty state.)
      r = s.index < 0 ? e : op(r, e);
    }
    return r;
  }
  __device__ __forceinline__ Acc combine(const Acc& a, const Acc& b) const { return op(a, b); }
  // Where a row's lanes meet, a 32-bit index: a row of whole vectors there has at most 2048
  // elements (the identity's index past any becomes INT32_MAX, past those as well).
  struct LaneAcc {
    V value;
    std::int32_t index;
  };
  __device__ __forceinline__ LaneAcc to_lane(const Acc& a) const {
    return {a.value, a.index > INT32_MAX ? INT32_MAX : static_cast<std::int32_t>(a.index)};
  }
  __device__ __forceinline__ LaneAcc lane_combine(const LaneAcc& a, const LaneAcc& b) const {
    return detail::wins<V, kGreater>(b, a) ? b : a;
  }
  __device__ __forceinline__ Acc from_lane(const LaneAcc& l, std::size_t) const {
    return {l.value, l.index == INT32_MAX ? INT64_MAX : std::int64_t(l.index)};
  }
  __host__ __device__ __forceinline__ Partial partial(const Acc& a) const { return a; }
  __device__ __forceinline__ Partial merge(const Partial& a, const Partial& b) const { return op(a, b); }
  __host__ __device__ __forceinline__ Partial partial_identity() const { return identity(); }
  __host__ __device__ __forceinline__ Out project(const Partial& p) const { return p; }
};
// Short columns finish in the lane, their results as whole 16-byte words (on an H200 at 2^28,
// float argmax down columns of 16 1.16-1.17x faster, the others the same or faster).
template <class V, class Op>
inline constexpr ColumnFinish kColumnFinish<ArgReduction<V, Op>> = ColumnFinish::LaneWords;

}  // namespace fastreduce::engine
