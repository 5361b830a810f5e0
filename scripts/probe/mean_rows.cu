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

namespace fr = fastreduce;
namespace eng = fastreduce::engine;

namespace {

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
// The engine's mean without its bound on the block-per-row kernel's blocks an SM (its registers:
// 70 without, 64 under four).
template <class Base, unsigned B>
struct BlockRowsBound : Base {
  static constexpr unsigned kBlockRowsMinBlocks = B;
  __device__ __forceinline__ BlockRowsBound at(const typename Base::Input*) const { return *this; }
};
// The sum as a double result (the bits before the mean's division and rounding).
template <class Base>
struct Wide : Base {
  using Out = double;
  __device__ __forceinline__ Wide at(const typename Base::Input*) const { return *this; }
  __host__ __device__ __forceinline__ double project(const eng::SumCount& p) const { return p.sum; }
};

struct Shape {
  std::size_t rows, length;
  bool hot = false;  // the same input every call (in L2 where it fits), as a program's repeated call
};

template <class R>
struct Runner {
  void* temp = nullptr;
  std::size_t bytes = 0;
  typename R::Out* out = nullptr;
  fr::Axis axis;
  template <class T>
  Runner(const T* d, Shape s) : axis{s.rows, s.length, 1} {
    eng::reduce_axis_async_impl<R>(nullptr, bytes, {d}, nullptr, axis, R{}, 0, fr::Options{});
    cudaMalloc(&temp, std::max<std::size_t>(bytes, 16));
    cudaMalloc(&out, s.rows * sizeof(typename R::Out));
  }
  template <class T>
  void operator()(const T* d) {
    std::size_t b = bytes;
    eng::reduce_axis_async_impl<R>(temp, b, {d}, out, axis, R{}, 0, fr::Options{});
  }
  std::vector<typename R::Out> result() const {
    std::vector<typename R::Out> h(axis.outer);
    cudaMemcpy(h.data(), out, h.size() * sizeof(h[0]), cudaMemcpyDeviceToHost);
    return h;
  }
  ~Runner() {
    cudaFree(temp);
    cudaFree(out);
  }
};

// The engine's own Sum along the same rows (float results).
template <class T>
struct SumRunner {
  void* temp = nullptr;
  std::size_t bytes = 0;
  float* out = nullptr;
  fr::Axis axis;
  SumRunner(const T* d, Shape s) : axis{s.rows, s.length, 1} {
    fr::reduce_axis_async(nullptr, bytes, d, out, axis);
    cudaMalloc(&temp, std::max<std::size_t>(bytes, 16));
    cudaMalloc(&out, s.rows * sizeof(float));
  }
  void operator()(const T* d) {
    std::size_t b = bytes;
    fr::reduce_axis_async(temp, b, d, out, axis);
  }
  ~SumRunner() {
    cudaFree(temp);
    cudaFree(out);
  }
};

__device__ unsigned mix(std::size_t i, unsigned seed) {
  unsigned h = static_cast<unsigned>(i * 2654435761u) ^ (seed * 40503u);
  h ^= h >> 15;
  h *= 2246822519u;
  return h ^ (h >> 13);
}
// 0: values in [0.5, 1.5); 1: exponents over 2^-40 to 2^40 (half 2^-13 to 2^13), random signs;
// 2: the special ones among ordinary values (+-0, subnormals, the largest finite, +-inf, NaN).
template <class T>
__global__ void fill(T* d, std::size_t n, unsigned seed, int kind) {
  constexpr bool kHalf = std::is_same_v<T, __half>;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const unsigned h = mix(i, seed), g = mix(i, seed + 7u);
    const float m = 1.0f + float(h % 1024u) / 1024.0f;
    float x = 0.5f + float(h % 1000003u) / 1000003.0f;
    if (kind >= 1) {
      const int e = static_cast<int>(g % (kHalf ? 27u : 81u)) - (kHalf ? 13 : 40);
      x = ((g >> 16) & 1u ? -m : m) * exp2f(static_cast<float>(e));
    }
    if (kind == 2) {
      switch (g % 4096u) {
        case 0: x = 0.0f; break;
        case 1: x = -0.0f; break;
        case 2: x = kHalf ? 3.0e-6f : 4.0e-39f; break;   // subnormal in T
        case 3: x = kHalf ? -6.0e-8f : -1.0e-39f; break;
        case 4: x = kHalf ? 65504.0f : __uint_as_float(0x7F7F0000u); break;  // the largest finite
        case 5: x = (g >> 20) % 64u == 0 ? INFINITY : 1.0f; break;
        case 7: x = (g >> 20) % 64u == 0 ? -INFINITY : -1.0f; break;
        case 6: x = (g >> 20) % 256u == 0 ? NAN : 2.0f; break;
        default: break;
      }
    }
    d[i] = static_cast<T>(x);
  }
}

template <class T>
void time_type(const char* name, T* pool, std::size_t pool_elems) {
  const Shape shapes[] = {{1, std::size_t(1) << 28}, {4096, 65536},        {65536, 4096},
                          {std::size_t(1) << 18, 1024}, {1, std::size_t(1) << 24}, {4096, 4096},
                          {16384, 1024},         {65536, 256},         {4096, 256},
                          {1, std::size_t(1) << 24, true}, {4096, 4096, true}, {4096, 256, true}};
  fill<<<4096, 256>>>(pool, pool_elems, 7u, 0);
  for (const Shape s : shapes) {
    const std::size_t n = s.rows * s.length;
    const int slices = s.hot ? 1 : static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(8, pool_elems / n)));
    const int reps = n >= (std::size_t(1) << 28) ? 10 : 100;
    int slice = 0;
    auto at = [&] { slice = (slice + 1) % slices; return pool + std::size_t(slice) * n; };
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
  const Shape shapes[] = {{1, 1}, {1, 31}, {1, 1000003}, {1, (std::size_t(1) << 20) + 3}, {1, std::size_t(1) << 26},
                          {4096, 4096}, {1000, 1000}, {64, 65536 + 8}, {33, 4099}, {8192, 16}};
  int bad = 0;
  for (int kind = 0; kind < 3; ++kind) {
    for (const Shape s : shapes) {
      fill<<<4096, 256>>>(pool, s.rows * s.length + 8, 5u + unsigned(s.length) + 97u * unsigned(kind), kind);
      for (std::size_t offset : {std::size_t(0), std::size_t(3)}) {
        Runner<Wide<eng::SumMeanReduction<T>>> mean(pool + offset, s);
        Runner<Wide<CheckedPairs<T>>> pairs(pool + offset, s);
        Runner<Wide<probe::DoubleLanes<T>>> dlanes(pool + offset, s);
        mean(pool + offset);
        pairs(pool + offset);
        dlanes(pool + offset);
        if (cudaDeviceSynchronize() != cudaSuccess) return 1 + bad;
        const auto m = mean.result(), p = pairs.result(), x = dlanes.result();
        std::size_t differ_x = 0, differ_p = 0, nonfinite = 0;
        for (std::size_t q = 0; q < m.size(); ++q) {
          differ_x += std::memcmp(&m[q], &x[q], sizeof(double)) != 0;
          differ_p += std::memcmp(&p[q], &x[q], sizeof(double)) != 0;
          nonfinite += !std::isfinite(m[q]);
        }
        bad += differ_x != 0 || differ_p != 0;
        std::printf("%-8s %-7s %5zu x %-8zu +%zu  outputs %5zu (%zu not finite)  mean vs double lanes: %s, pairs: %s  (row 0 %+.17e)\n",
                    name, kind == 0 ? "near" : kind == 1 ? "far" : "special", s.rows, s.length, offset, m.size(),
                    nonfinite, differ_x ? "DIFFERENT" : "same bits", differ_p ? "DIFFERENT" : "same bits", m[0]);
      }
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# %s; us per call, back to back, median of 7 batches (inputs rotated over up to 8 slices, or \"hot\": "
              "the same each call). Columns: the engine's Sum along the rows, its mean (rounding chains), the checked "
              "pairs, double lanes, float lanes (unchecked), variance, L2 norm, the mean with two states, the mean "
              "without its bound of 4 blocks an SM on a block per row\n",
              prop.name);
  std::printf("%-8s %-24s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "type", "rows x length", "sum", "mean", "pairs",
              "dlanes", "flanes", "var", "l2", "2 folds", "unbound");
  const std::size_t elems = std::size_t(1) << 30;
  __nv_bfloat16* b = nullptr;
  if (cudaMalloc(&b, elems * 2) != cudaSuccess) return 1;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  if (!quick) time_type("bfloat16", b, elems);
  __half* h = reinterpret_cast<__half*>(b);
  if (!quick) time_type("half", h, elems);
  int bad = check_type("bfloat16", b);
  bad += check_type("half", h);
  std::printf("%d shapes with different bits\n", bad);
  cudaFree(b);
  return bad == 0 && cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
