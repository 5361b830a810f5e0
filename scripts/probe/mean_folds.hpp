// The half types' mean in variants of its vector fold, shared by the probes mean_variants.cu and
// mean_rows.cu: every lane widened to double (the bits the engine's fold must give), all lanes in
// float unchecked (rounds where exponents lie far apart: the speed's bound), two states a thread.
#pragma once

#include "fastreduce/stats.cuh"

namespace probe {

namespace fr = fastreduce;
namespace eng = fastreduce::engine;

template <class T>
struct DoubleLanes : eng::SumMeanReduction<T> {
  __device__ __forceinline__ DoubleLanes at(const T*) const { return *this; }
  template <unsigned V>
  __device__ __forceinline__ eng::SumCount fold_vec(const eng::SumCount& s, const fr::primitives::Vec<T, V>& v,
                                                    std::size_t) const {
    double lanes[V];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) lanes[k] = fr::stats::widen(v.elem[k]);
    return {s.sum + eng::pairwise_in_order(lanes, fr::Sum{}), s.count + static_cast<std::int64_t>(V)};
  }
};

template <class T>
struct FloatLanes : eng::SumMeanReduction<T> {
  __device__ __forceinline__ FloatLanes at(const T*) const { return *this; }
  template <unsigned V>
  __device__ __forceinline__ eng::SumCount fold_vec(const eng::SumCount& s, const fr::primitives::Vec<T, V>& v,
                                                    std::size_t) const {
    float lanes[V];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) lanes[k] = static_cast<float>(v.elem[k]);
    const float sum = eng::pairwise_in_order(lanes, fr::Sum{});
    return {s.sum + static_cast<double>(sum), s.count + static_cast<std::int64_t>(V)};
  }
};

template <class Base>
struct TwoFolds : Base {
  static constexpr unsigned folds = 2;
  __device__ __forceinline__ TwoFolds at(const typename Base::Input*) const { return *this; }
};

}  // namespace probe
