// The fast mean of bfloat16 and half inputs, 1-D, in variants of its reduction against the
// engine's Sum, variance and L2 norm of the same bytes, same data, same run: CUDA events around
// batches of back-to-back calls, median of 7 batches, inputs rotated among slices of 2 GiB.
// Built with -DFASTREDUCE_BUILD_PROBES=ON (target mean_variants).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "mean_folds.hpp"
#include "probe_timing.hpp"
#include "rows_common.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;

namespace {

using probe::Runner;
using probe::Shape;
using probe::SumRunner;

// probe::DoubleLanes (the mean's fold before the checked pairs), FloatLanes (unchecked: the pairwise
// float sum rounds only where the lanes' exponents lie more than 13 (bfloat16) or 10 (half)
// binades apart) and TwoFolds: mean_folds.hpp.
// Pairs in float, the pairs' sums in double.
template <class T>
struct FloatPairs : eng::SumMeanReduction<T> {
  __device__ __forceinline__ FloatPairs at(const T*) const { return *this; }
  template <unsigned V>
  __device__ __forceinline__ eng::SumCount fold_vec(const eng::SumCount& s, const fr::primitives::Vec<T, V>& v,
                                                    std::size_t) const {
    double lanes[V / 2];
#pragma unroll
    for (unsigned k = 0; k < V / 2; ++k)
      lanes[k] = static_cast<double>(static_cast<float>(v.elem[2 * k]) + static_cast<float>(v.elem[2 * k + 1]));
    const double sum = eng::pairwise_in_order(lanes, fr::Sum{});
    return {s.sum + sum, s.count + static_cast<std::int64_t>(V)};
  }
};
// The heavy reductions' shapes (kHeavySmall, kHeavyLarge: 256-thread blocks with shares in bytes
// when this probe ran; since 2026-11-28 512-thread blocks, with shares in elements: a bfloat16 or
// half input now gets half the vectors a block it got then).
template <class Base>
struct Heavy : Base {
  static constexpr bool kHeavyState = true;
  __device__ __forceinline__ Heavy at(const typename Base::Input*) const { return *this; }
};

// f(s) on the next of `slices` inputs each call.
template <class F>
float time_us(F f, int reps, int& slice, int slices) {
  return probe::median_us([&] { f(slice = (slice + 1) % slices); }, reps);
}

template <class T>
__global__ void fill(T* d, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const unsigned h = static_cast<unsigned>(i * 2654435761u) ^ (seed * 40503u);
    d[i] = static_cast<T>(0.5f + float(h % 1000003u) / 1000003.0f);
  }
}

// The mean as a double (the variants' bits before the final rounding to float).
template <class Base>
struct Wide : Base {
  using Out = double;
  __device__ __forceinline__ Wide at(const typename Base::Input*) const { return *this; }
  __host__ __device__ __forceinline__ double project(const eng::SumCount& p) const {
    return p.count == 0 ? NAN : p.sum / static_cast<double>(p.count);
  }
};

// Values whose exponents span 2^-40 to 2^40 with random signs: pairs far apart in float.
template <class T>
__global__ void fill_wide(T* d, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const unsigned h = static_cast<unsigned>(i * 2654435761u) ^ (seed * 40503u);
    const unsigned g = h * 2246822519u + 374761393u;
    const int e = static_cast<int>(g % 81u) - 40;
    const float m = 1.0f + float(h % 1024u) / 1024.0f;
    d[i] = static_cast<T>(((g >> 16) & 1u ? -m : m) * exp2f(static_cast<float>(sizeof(T) == 2 && !std::is_same_v<T, __nv_bfloat16> ? e % 14 : e)));
  }
}

template <class T>
void run_type(const char* name, T* pool, std::size_t pool_elems) {
  using Mean = eng::SumMeanReduction<T>;
  for (int k = 24; k <= 30; k += 2) {
    const std::size_t n = std::size_t(1) << k;
    const int slices = static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(8, pool_elems / n)));
    const int reps = k >= 28 ? 10 : 100;
    int slice = 0;
    auto at = [&](int s) { return pool + std::size_t(s) * n; };
    SumRunner<T> sum(pool, Shape{1, n});
    Runner<Mean> mean(pool, Shape{1, n});
    Runner<Heavy<Mean>> heavy(pool, Shape{1, n});
    Runner<probe::DoubleLanes<T>> dlanes(pool, Shape{1, n});
    Runner<Heavy<probe::DoubleLanes<T>>> heavy_dlanes(pool, Shape{1, n});
    Runner<Heavy<probe::TwoFolds<probe::DoubleLanes<T>>>> heavy_two(pool, Shape{1, n});
    Runner<probe::FloatLanes<T>> lanes(pool, Shape{1, n});
    Runner<FloatPairs<T>> pairs(pool, Shape{1, n});
    Runner<eng::MomentsReduction<T, eng::VarianceOf<float>>> var(pool, Shape{1, n});
    Runner<eng::l2_reduction<T>> l2(pool, Shape{1, n});
    float t[10];
    for (int round = 0; round < 2; ++round) {  // the second round's times are kept (the first warms)
      t[0] = time_us([&](int s) { sum(at(s)); }, reps, slice, slices);
      t[1] = time_us([&](int s) { mean(at(s)); }, reps, slice, slices);
      t[2] = time_us([&](int s) { heavy(at(s)); }, reps, slice, slices);
      t[3] = time_us([&](int s) { dlanes(at(s)); }, reps, slice, slices);
      t[4] = time_us([&](int s) { heavy_dlanes(at(s)); }, reps, slice, slices);
      t[5] = time_us([&](int s) { heavy_two(at(s)); }, reps, slice, slices);
      t[6] = time_us([&](int s) { lanes(at(s)); }, reps, slice, slices);
      t[7] = time_us([&](int s) { pairs(at(s)); }, reps, slice, slices);
      t[8] = time_us([&](int s) { var(at(s)); }, reps, slice, slices);
      t[9] = time_us([&](int s) { l2(at(s)); }, reps, slice, slices);
    }
    std::printf("%-8s 2^%-3d %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", name, k, t[0], t[1], t[2],
                t[3], t[4], t[5], t[6], t[7], t[8], t[9]);
  }
}

// The engine's mean (rounding chains since 2026-11-29; checked pairs when this probe's results were
// taken) against double lanes' and float lanes', as doubles, on values of
// near exponents and of far ones, at sizes with and without a head and a tail.
template <class T>
void check_type(const char* name, T* pool) {
  const std::size_t sizes[] = {1, 31, 1000003, (std::size_t(1) << 20) + 3, std::size_t(1) << 26};
  for (int data = 0; data < 2; ++data) {
    for (std::size_t n : sizes) {
      if (data == 0) fill<<<4096, 256>>>(pool, n + 8, 5u + unsigned(n));
      else fill_wide<<<4096, 256>>>(pool, n + 8, 9u + unsigned(n));
      for (std::size_t offset : {std::size_t(0), std::size_t(3)}) {
        Runner<Wide<eng::SumMeanReduction<T>>> mean(pool + offset, Shape{1, n});
        Runner<Wide<probe::FloatLanes<T>>> lanes(pool + offset, Shape{1, n});
        Runner<Wide<probe::DoubleLanes<T>>> dlanes(pool + offset, Shape{1, n});
        mean(pool + offset);
        lanes(pool + offset);
        dlanes(pool + offset);
        cudaDeviceSynchronize();
        const double m = mean.result()[0], l = lanes.result()[0], x = dlanes.result()[0];
        std::printf("%-8s %-5s n=%-9zu +%zu  mean %+.17e  float lanes rel %.2e  double lanes %s\n", name,
                    data == 0 ? "near" : "far", n, offset, m, std::fabs(l - m) / std::fabs(m),
                    x == m ? "same bits" : "DIFFERENT");
      }
    }
  }
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# %s; us per call, back to back, median of 7 batches; columns: the engine's Sum, its mean (rounding chains), variants (see the source), variance, L2 norm\n", prop.name);
  std::printf("%-8s %-5s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "type", "n", "sum", "mean", "heavy", "dlanes",
              "heavy+dl", "h+2f+dl", "flanes", "fpairs", "var", "l2");
  const std::size_t elems = std::size_t(1) << 30;
  __nv_bfloat16* b = nullptr;
  if (cudaMalloc(&b, elems * 2) != cudaSuccess) return 1;
  fill<<<4096, 256>>>(b, elems, 7u);
  run_type("bfloat16", b, elems);
  __half* h = reinterpret_cast<__half*>(b);
  fill<<<4096, 256>>>(h, elems, 11u);
  run_type("half", h, elems);
  check_type("bfloat16", b);
  check_type("half", h);
  cudaFree(b);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
