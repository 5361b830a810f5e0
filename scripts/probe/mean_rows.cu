// The fast mean of bfloat16 and half inputs, 1-D and along rows, in variants of its vector fold,
// against the engine's Sum, variance and L2 norm of the same bytes, same data, same run: CUDA
// events around batches of back-to-back calls, median of 7 batches, inputs rotated among slices.
// The times are on values in [0.5, 1.5), whose vectors the rounding chains always take. Then the
// bits of the engine's mean against the variants that must equal them, on values of near
// exponents, of far ones, and of the special ones (signed zeros, subnormals, infinities, NaN).
// Built with -DFASTREDUCE_BUILD_PROBES=ON (target mean_rows).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "fastreduce/detail/exact_arith.hpp"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "mean_folds.hpp"
#include "probe_timing.hpp"
#include "rows_common.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;

namespace {

using probe::BlockRowsBound;
using probe::Runner;
using probe::Shape;
using probe::SumRunner;
using probe::fill;

// The fold before the rounding chains: each pair added in float and checked exact by TwoSum (and
// 0 or normal), the four pair sums in double.
template <class T>
struct CheckedPairs : eng::SumMeanReduction<T> {
  __device__ __forceinline__ CheckedPairs at(const T*) const { return *this; }
  template <unsigned V>
  __device__ __forceinline__ eng::SumCount fold_vec(const eng::SumCount& s, const fr::primitives::Vec<T, V>& v,
                                                    std::size_t) const {
    double pairs[V / 2];
    bool exact = true;
#pragma unroll
    for (unsigned k = 0; k < V / 2; ++k) {
      const float a = static_cast<float>(v.elem[2 * k]), b = static_cast<float>(v.elem[2 * k + 1]);
      const fr::primitives::TwoSumFloat t = fr::primitives::two_sum_float(a, b);
      exact = exact && t.error == 0.0f && (fabsf(t.sum) >= FLT_MIN || a == -b);
      pairs[k] = static_cast<double>(t.sum);
    }
    if (exact) return {s.sum + eng::pairwise_in_order(pairs, fr::Sum{}), s.count + static_cast<std::int64_t>(V)};
    double lanes[V];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) lanes[k] = fr::stats::widen(v.elem[k]);
    return {s.sum + eng::pairwise_in_order(lanes, fr::Sum{}), s.count + static_cast<std::int64_t>(V)};
  }
};
// The sum as a double result (the bits before the mean's division and rounding).
template <class Base>
struct Wide : Base {
  using Out = double;
  __device__ __forceinline__ Wide at(const typename Base::Input*) const { return *this; }
  __host__ __device__ __forceinline__ double project(const eng::SumCount& p) const { return p.sum; }
};

template <class T>
void time_type(const char* name, T* pool, std::size_t pool_elems) {
  const Shape shapes[] = {{1, std::size_t(1) << 28}, {4096, 65536},        {65536, 4096},
                          {std::size_t(1) << 18, 1024}, {1, std::size_t(1) << 24}, {4096, 4096},
                          {16384, 1024},         {65536, 256},         {4096, 256},
                          {1, std::size_t(1) << 24, true}, {4096, 4096, true}, {4096, 256, true}};
  fill<<<4096, 256>>>(pool, pool_elems, 7u, 0);
  for (const Shape s : shapes) {
    probe::Rotation<T> inputs(pool, pool_elems, s);
    const int reps = inputs.reps;
    auto at = [&] { return inputs.next(); };
    SumRunner<T> sum(pool, s);
    Runner<eng::SumMeanReduction<T>> mean(pool, s);
    Runner<CheckedPairs<T>> pairs(pool, s);
    Runner<probe::DoubleLanes<T>> dlanes(pool, s);
    Runner<probe::FloatLanes<T>> flanes(pool, s);
    Runner<eng::MomentsReduction<T, eng::VarianceOf<float>>> var(pool, s);
    Runner<eng::l2_reduction<T>> l2(pool, s);
    Runner<probe::TwoFolds<eng::SumMeanReduction<T>>> two(pool, s);
    Runner<BlockRowsBound<eng::SumMeanReduction<T>, 1>> unbounded(pool, s);
    float t[9];
    for (int round = 0; round < 2; ++round) {  // the second round's times are kept
      t[0] = probe::median_us([&] { sum(at()); }, reps);
      t[1] = probe::median_us([&] { mean(at()); }, reps);
      t[2] = probe::median_us([&] { pairs(at()); }, reps);
      t[3] = probe::median_us([&] { dlanes(at()); }, reps);
      t[4] = probe::median_us([&] { flanes(at()); }, reps);
      t[5] = probe::median_us([&] { var(at()); }, reps);
      t[6] = probe::median_us([&] { l2(at()); }, reps);
      t[7] = probe::median_us([&] { two(at()); }, reps);
      t[8] = probe::median_us([&] { unbounded(at()); }, reps);
    }
    std::printf("%-8s %7zu x %-9zu %-4s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f   mean %.1f%% of sum (pairs %.1f%%)\n",
                name, s.rows, s.length, s.hot ? "hot" : "", t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8],
                100.0 * t[0] / t[1], 100.0 * t[0] / t[2]);
  }
}

template <class T>
int check_type(const char* name, T* pool) {
  return probe::over_check_shapes(pool, 5u, [&](int kind, Shape s, const T* d, std::size_t offset) {
    Runner<Wide<eng::SumMeanReduction<T>>> mean(d, s);
    Runner<Wide<CheckedPairs<T>>> pairs(d, s);
    Runner<Wide<probe::DoubleLanes<T>>> dlanes(d, s);
    mean(d);
    pairs(d);
    dlanes(d);
    if (cudaDeviceSynchronize() != cudaSuccess) return -1;
    const auto m = mean.result(), p = pairs.result(), x = dlanes.result();
    std::size_t differ_x = 0, differ_p = 0, nonfinite = 0;
    for (std::size_t q = 0; q < m.size(); ++q) {
      differ_x += std::memcmp(&m[q], &x[q], sizeof(double)) != 0;
      differ_p += std::memcmp(&p[q], &x[q], sizeof(double)) != 0;
      nonfinite += !std::isfinite(m[q]);
    }
    std::printf("%-8s %-7s %5zu x %-8zu +%zu  outputs %5zu (%zu not finite)  mean vs double lanes: %s, pairs: %s  (row 0 %+.17e)\n",
                name, probe::kind_name(kind), s.rows, s.length, offset, m.size(), nonfinite,
                differ_x ? "DIFFERENT" : "same bits", differ_p ? "DIFFERENT" : "same bits", m[0]);
    return differ_x != 0 || differ_p != 0 ? 1 : 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  probe::print_heading(
      "Columns: the engine's Sum along the rows, its mean (rounding chains), the checked pairs, double lanes, float "
      "lanes (unchecked), variance, L2 norm, the mean with two states, the mean without its bound of 4 blocks an SM "
      "on a block per row");
  std::printf("%-8s %-24s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "type", "rows x length", "sum", "mean", "pairs",
              "dlanes", "flanes", "var", "l2", "2 folds", "unbound");
  return probe::both_half_types(
      argc, argv, [](const char* name, auto* pool, std::size_t elems) { time_type(name, pool, elems); },
      [](const char* name, auto* pool) { return check_type(name, pool); });
}
