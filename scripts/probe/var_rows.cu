// The variance's moments with each element widened to double by its bits and its shift taken in
// the same fused multiply-add, against the engine's (a conversion, then a subtraction), along
// rows and 1-D, beside the engine's Sum of the same bytes, same data, same run (CUDA events around
// batches of back-to-back calls, median of 7 batches). A float's sign, exponent and significand
// placed in a double by an arithmetic shift and a mask (high word) and a shift (low word) read as
// the value times 2^-896, subnormals included; fma(w, 2^896, -shift) is then the value minus the
// shift rounded once, as the conversion and the subtraction give it (in a build without -ftz:
// under -ftz=true the conversion flushes a subnormal float, the bits keep it), with one double
// instruction where they took a conversion (F2F.F64.F32: a quarter of a double multiply's rate on
// sm_90) and an add. The half types take primitives::HalfBits alike. A vector holding an infinity
// or NaN is converted. Columns: the engine's Sum; the engine's variance; by bits, multiplied then
// shifted (two double instructions, __dmul_rn so that they are not contracted into one: the half
// types' variant measured slower before); by bits, fused; for
// the half types also the L2 norm by conversion and the engine's (by bits), for rows of 256.
// Then the bits of the fused variance against the engine's, on near, far and special values.
// Built with -DFASTREDUCE_BUILD_PROBES=ON (target var_rows).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "probe_timing.hpp"
#include "rows_common.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;
using probe::differ;
using probe::fill;
using probe::run;
using probe::Runner;
using probe::Shape;
using probe::SumRunner;

namespace {

// A vector's elements by their bits, unscaled (the values times 2^-896, or 2^-1008 for half: kScale);
// false where one is infinite or NaN.
template <class T, unsigned V>
__device__ __forceinline__ bool raw_bits(const fr::primitives::Vec<T, V>& v, double (&raw)[V]) {
  if constexpr (std::is_same_v<T, float>) {
    unsigned w[V];
    __builtin_memcpy(w, &v, sizeof(w));
    unsigned special = 0;
#pragma unroll
    for (unsigned k = 0; k < V; ++k) special |= ((w[k] & 0x7F800000u) + 0x00800000u) & 0x80000000u;
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
      const unsigned hi = static_cast<unsigned>(static_cast<int>(w[k]) >> 3) & 0x8FFFFFFFu;
      raw[k] = __hiloint2double(static_cast<int>(hi), static_cast<int>(w[k] << 29));
    }
    return special == 0;
  } else {
    static_assert(V % 2 == 0, "half and bfloat16 vectors of whole words");
    using Bits = fr::primitives::HalfBits<T>;
    unsigned w[V / 2];
    __builtin_memcpy(w, &v, sizeof(w));
    unsigned special = 0;
#pragma unroll
    for (unsigned k = 0; k < V / 2; ++k) special |= Bits::special(w[k]);
#pragma unroll
    for (unsigned k = 0; k < V / 2; ++k) {
      raw[2 * k] = Bits::unscaled(w[k] << 16);
      raw[2 * k + 1] = Bits::unscaled(w[k]);
    }
    return special == 0;
  }
}
template <class T>
constexpr double kScale = std::is_same_v<T, __half> ? 0x1p1008 : 0x1p896;

// The variance's moments with their vector widened by bits: Fused, the shift in the same fma;
// else multiplied, then shifted.
template <class Base, bool Fused>
struct VarBits : Base {
  using T = typename Base::Input;
  __device__ __forceinline__ VarBits at(const T* first) const { return VarBits{Base::at(first)}; }
  template <unsigned V>
  __device__ __forceinline__ eng::MomentSums fold_vec(eng::MomentSums s, const fr::primitives::Vec<T, V>& v,
                                                      std::size_t) const {
    double raw[V], d[V];
    if (raw_bits(v, raw)) {
#pragma unroll
      for (unsigned k = 0; k < V; ++k)
        d[k] = Fused ? fma(raw[k], kScale<T>, -this->shift) : __dmul_rn(raw[k], kScale<T>) - this->shift;
    } else {
#pragma unroll
      for (unsigned k = 0; k < V; ++k) d[k] = fr::stats::widen(v.elem[k]) - this->shift;
    }
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
      s.s1 += d[k];
      s.s2 = fma(d[k], d[k], s.s2);
    }
    s.count += V;
    return s;
  }
};

// The L2 norm by conversion (a transform that does not say widens_to_double).
template <class T>
struct SquareConv {
  __host__ __device__ double operator()(const T& x) const {
    const double d = fr::stats::widen(x);
    return d * d;
  }
};
template <class T>
using L2Conv = eng::Transformed<T, eng::NoInput, SquareConv<T>, fr::Sum, double, eng::Root<float>>;

template <class T, class O>
using Moments = eng::MomentsReduction<T, eng::VarianceOf<O>>;

template <class T>
void time_type(const char* name, T* pool, std::size_t pool_elems) {
  constexpr bool kHalves = !std::is_same_v<T, float>;
  const std::size_t big = std::size_t(1) << 28, mid = std::size_t(1) << 24;
  std::vector<Shape> shapes = {{1, big}};
  for (std::size_t len : kHalves ? std::vector<std::size_t>{16, 64, 256, 512, 1024}
                                 : std::vector<std::size_t>{8, 16, 32, 64, 128, 256, 1024})
    shapes.push_back({big / len, len});
  for (std::size_t len : kHalves ? std::vector<std::size_t>{16, 256} : std::vector<std::size_t>{8, 64, 256})
    shapes.push_back({mid / len, len});
  shapes.push_back({4096, 4096, true});
  shapes.push_back({4096, 256, true});
  fill<<<4096, 256>>>(pool, pool_elems, 7u, 1);
  for (const Shape s : shapes) {
    probe::Rotation<T> inputs(pool, pool_elems, s);
    const int reps = inputs.reps;
    auto at = [&] { return inputs.next(); };
    SumRunner<T> sum(pool, s);
    Runner<Moments<T, float>> var(pool, s);
    Runner<VarBits<Moments<T, float>, false>> varm(pool, s);
    Runner<VarBits<Moments<T, float>, true>> varf(pool, s);
    const bool norms = kHalves && s.length == 256;
    constexpr int kRuns = 6;
    float t[kRuns] = {};
    for (int round = 0; round < 2; ++round) {  // the second round's times are kept
      t[0] = probe::median_us([&] { sum(at()); }, reps);
      t[1] = probe::median_us([&] { var(at()); }, reps);
      t[2] = probe::median_us([&] { varm(at()); }, reps);
      t[3] = probe::median_us([&] { varf(at()); }, reps);
      if constexpr (kHalves) {
        if (norms) {
          Runner<L2Conv<T>> l2c(pool, s);
          Runner<eng::l2_reduction<T>> l2(pool, s);
          t[4] = probe::median_us([&] { l2c(at()); }, reps);
          t[5] = probe::median_us([&] { l2(at()); }, reps);
        }
      }
    }
    std::printf("%-8s %9zu x %-9zu %-4s", name, s.rows, s.length, s.hot ? "hot" : "");
    for (int c = 0; c < (norms ? 6 : 4); ++c) std::printf(" %8.2f", t[c]);
    if (!norms) std::printf(" %8s %8s", "-", "-");
    std::printf("   var of sum: %.0f%% -> %.0f%% (fused), %.0f%% (multiplied); fused / engine %.3f\n",
                100.0 * t[0] / t[1], 100.0 * t[0] / t[3], 100.0 * t[0] / t[2], t[3] / t[1]);
  }
}

// Variances as doubles (the finish's value before any narrowing): the fused widening against the
// engine's. Along rows the order of the sums is the kernel's, whatever the fold's registers; a 1-D
// array's grid follows its kernel's registers, so there a difference is reported, not counted.
template <class T>
int check_type(const char* name, T* pool) {
  return probe::over_check_shapes(pool, 11u, [&](int kind, Shape s, const T* d, std::size_t offset) {
    const auto var = run<Moments<T, double>>(d, s);
    const std::size_t n = differ(var, run<VarBits<Moments<T, double>, true>>(d, s));
    if (cudaDeviceSynchronize() != cudaSuccess) return -1;
    const bool counted = s.rows > 1 || s.length < 1000;
    std::printf(
        "%-8s %-7s %5zu x %-8zu +%zu  outputs %5zu  fused bits against the engine: %s%s (differ %zu)  row 0: var "
        "%.17g\n",
        name, probe::kind_name(kind), s.rows, s.length, offset, var.size(), n == 0 ? "same bits" : "DIFFERENT",
        counted ? "" : " (1-D grid, not counted)", n, var[0]);
    return counted && n != 0 ? 1 : 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  probe::print_heading(
      "Values with exponents over 2^-40..2^40 (half 2^-13..2^13). Columns: the engine's Sum along the rows; the "
      "engine's variance (a conversion, then the shift subtracted); by bits, multiplied then shifted; by bits, fused "
      "(fma(w, 2^896, -shift)); the half types' L2 norm by conversion and the engine's (by bits), rows of 256");
  std::printf("%-8s %-26s %8s %8s %8s %8s %8s %8s\n", "type", "rows x length", "sum", "var", "var mul", "var fma",
              "l2 conv", "l2");
  const std::size_t elems = std::size_t(1) << 30;
  float* f = nullptr;
  if (cudaMalloc(&f, elems * 4) != cudaSuccess) return 1;
  const bool check_only = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  if (!check_only) time_type("float", f, elems);
  int bad = check_type("float", f);
  cudaFree(f);
  std::printf("float: %d shapes with different bits\n", bad);
  const int halves = probe::both_half_types(
      argc, argv, [](const char* name, auto* pool, std::size_t n) { time_type(name, pool, n); },
      [](const char* name, auto* pool) { return check_type(name, pool); });
  return bad == 0 && halves == 0 ? 0 : 1;
}
