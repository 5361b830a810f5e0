// The half types' norms with their elements widened to double by bits (primitives::HalfBits: a
// shift, a mask and a multiplication by a power of two, no conversion instruction) against the
// conversion they used before (bfloat16 or half to float to double; F2F.F64.F32 issues at a
// quarter of a double multiply's rate on sm_90), along rows and 1-D, beside the engine's Sum of the
// same bytes, same data, same run (CUDA events around batches of back-to-back calls, median of 7
// batches): the L2 norm by conversion, by bits with the vector tested for infinities and NaN after
// its widening, the engine's (tested first, primitives::widen_halves), and its squares summed in
// float (unchecked, torch's way: the bound); the L1 norm by conversion and the engine's; the
// largest magnitude by conversion (the engine's) and by bits; the variance (which keeps the
// conversion) and its moments by bits. Then the bits of the engine's norms against the
// conversion's, on near, far and special values (signed zeros, subnormals, infinities, NaN), with
// an element-at-a-time widening's and the variance by bits reported beside them (a 1-D array's
// grid follows its kernel's registers, so a variant's 1-D sum may meet in another order).
// Built with -DFASTREDUCE_BUILD_PROBES=ON (target wide_halves).
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

// The conversion: bfloat16 or half to float to double.
template <class T>
__device__ __forceinline__ double convert(T x) {
  return static_cast<double>(static_cast<float>(x));
}

// One element by bits, tested and selected.
template <class T>
__device__ __forceinline__ double widen_one(T x) {
  using Bits = fr::primitives::HalfBits<T>;
  unsigned short b;
  __builtin_memcpy(&b, &x, 2);
  if ((b & Bits::kExp) == Bits::kExp) return convert(x);
  return Bits::high(static_cast<unsigned>(b) << 16);
}

// Every element widened by a conversion (Way 0); by bits a vector at a time, the vector widened
// and then tested (1); by bits an element at a time, each tested and selected (2); by bits a
// vector at a time tested first (4: the engine's primitives::widen_halves).
template <int Way, class T, unsigned V>
__device__ __forceinline__ void widen(const fr::primitives::Vec<T, V>& v, double (&w)[V]) {
  using Bits = fr::primitives::HalfBits<T>;
  if constexpr (Way == 4) {
    fr::primitives::widen_halves(v, w);
  } else if constexpr (Way == 1) {
    unsigned x[V / 2];
    __builtin_memcpy(x, &v, sizeof(x));
    unsigned special = 0;
#pragma unroll
    for (unsigned k = 0; k < V / 2; ++k) {
      special |= Bits::special(x[k]);
      w[2 * k] = Bits::high(x[k] << 16);
      w[2 * k + 1] = Bits::high(x[k]);
    }
    if (special != 0) {
#pragma unroll
      for (unsigned k = 0; k < V; ++k) w[k] = convert(v.elem[k]);
    }
  } else {
#pragma unroll
    for (unsigned k = 0; k < V; ++k) w[k] = Way == 2 ? widen_one(v.elem[k]) : convert(v.elem[k]);
  }
}

// A norm (Transformed: a transform of each element, a Sum or a Max) with its vector widened one way.
template <class Base, int Way>
struct Norm : Base {
  using T = typename Base::Input;
  using R = typename Base::State;
  __device__ __forceinline__ Norm at(const T*) const { return *this; }
  template <unsigned V>
  __device__ __forceinline__ R fold_vec(const R& s, const fr::primitives::Vec<T, V>& v, std::size_t) const {
    double w[V];
    widen<Way>(v, w);
    R lanes[V];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) lanes[k] = this->f(w[k]);
    return this->op(s, eng::pairwise_in_order(lanes, this->op));
  }
};
// The variance's moments with their vector widened one way.
template <class Base, int Way>
struct Var : Base {
  using T = typename Base::Input;
  __device__ __forceinline__ Var at(const T* first) const { return Var{Base::at(first)}; }
  template <unsigned V>
  __device__ __forceinline__ eng::MomentSums fold_vec(eng::MomentSums s, const fr::primitives::Vec<T, V>& v,
                                                      std::size_t) const {
    double w[V];
    widen<Way>(v, w);
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
      const double d = w[k] - this->shift;
      s.s1 += d;
      s.s2 = fma(d, d, s.s2);
    }
    s.count += V;
    return s;
  }
};
// The L2 norm's squares in float, summed in float a vector at a time (unchecked: torch's way).
template <class Base>
struct FloatSquares : Base {
  using T = typename Base::Input;
  __device__ __forceinline__ FloatSquares at(const T*) const { return *this; }
  template <unsigned V>
  __device__ __forceinline__ double fold_vec(const double& s, const fr::primitives::Vec<T, V>& v, std::size_t) const {
    float lanes[V];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) {
      const float x = static_cast<float>(v.elem[k]);
      lanes[k] = x * x;
    }
    return s + static_cast<double>(eng::pairwise_in_order(lanes, fr::Sum{}));
  }
};
// The sum of squares (or magnitudes) itself, before the root (the bits the check compares).
template <class Base>
struct Total : Base {
  using Out = double;
  __device__ __forceinline__ Total at(const typename Base::Input* first) const { return Total{Base::at(first)}; }
  __host__ __device__ __forceinline__ double project(const double& p) const { return p; }
};

template <class T>
using L2 = eng::l2_reduction<T>;
template <class T>
using L1 = eng::l1_reduction<T>;
template <class T>
using Inf = eng::inf_reduction<T>;
template <class T, class O>
using Moments = eng::MomentsReduction<T, eng::VarianceOf<O>>;

template <class T>
void time_type(const char* name, T* pool, std::size_t pool_elems) {
  const Shape shapes[] = {{1, std::size_t(1) << 28}, {4096, 65536},     {65536, 4096},      {std::size_t(1) << 18, 1024},
                          {65536, 256},           {1, std::size_t(1) << 24, true}, {4096, 4096, true},
                          {16384, 1024, true},    {4096, 256, true}};
  fill<<<4096, 256>>>(pool, pool_elems, 7u, 1);
  for (const Shape s : shapes) {
    probe::Rotation<T> inputs(pool, pool_elems, s);
    const int reps = inputs.reps;
    auto at = [&] { return inputs.next(); };
    SumRunner<T> sum(pool, s);
    Runner<Norm<L2<T>, 0>> l2(pool, s);
    Runner<Norm<L2<T>, 1>> l2a(pool, s);
    Runner<L2<T>> l2e(pool, s);
    Runner<FloatSquares<L2<T>>> l2f(pool, s);
    Runner<Norm<L1<T>, 0>> l1(pool, s);
    Runner<L1<T>> l1e(pool, s);
    Runner<Norm<Inf<T>, 0>> inf(pool, s);
    Runner<Norm<Inf<T>, 4>> infb(pool, s);
    Runner<Moments<T, float>> var(pool, s);
    Runner<Var<Moments<T, float>, 4>> varb(pool, s);
    constexpr int kRuns = 11;
    float t[kRuns];
    for (int round = 0; round < 2; ++round) {  // the second round's times are kept
      int c = 0;
      t[c++] = probe::median_us([&] { sum(at()); }, reps);
      t[c++] = probe::median_us([&] { l2(at()); }, reps);
      t[c++] = probe::median_us([&] { l2a(at()); }, reps);
      t[c++] = probe::median_us([&] { l2e(at()); }, reps);
      t[c++] = probe::median_us([&] { l2f(at()); }, reps);
      t[c++] = probe::median_us([&] { l1(at()); }, reps);
      t[c++] = probe::median_us([&] { l1e(at()); }, reps);
      t[c++] = probe::median_us([&] { inf(at()); }, reps);
      t[c++] = probe::median_us([&] { infb(at()); }, reps);
      t[c++] = probe::median_us([&] { var(at()); }, reps);
      t[c++] = probe::median_us([&] { varb(at()); }, reps);
    }
    std::printf("%-8s %7zu x %-9zu %-4s", name, s.rows, s.length, s.hot ? "hot" : "");
    for (float x : t) std::printf(" %8.2f", x);
    std::printf("   of sum: l2 %.0f%% -> %.0f%%, l1 %.0f%% -> %.0f%%, inf (bits) %.0f%% -> %.0f%%\n", 100.0 * t[0] / t[1],
                100.0 * t[0] / t[3], 100.0 * t[0] / t[5], 100.0 * t[0] / t[6], 100.0 * t[0] / t[7], 100.0 * t[0] / t[8]);
  }
}

template <class T>
int check_type(const char* name, T* pool) {
  return probe::over_check_shapes(pool, 11u, [&](int kind, Shape s, const T* d, std::size_t offset) {
    const auto l2 = run<Total<Norm<L2<T>, 0>>>(d, s);
    const auto l1 = run<Total<Norm<L1<T>, 0>>>(d, s);
    const auto inf = run<Total<Norm<Inf<T>, 0>>>(d, s);
    const auto var = run<Var<Moments<T, double>, 0>>(d, s);
    const std::size_t n[6] = {differ(l2, run<Total<L2<T>>>(d, s)), differ(l2, run<Total<Norm<L2<T>, 2>>>(d, s)),
                              differ(l1, run<Total<L1<T>>>(d, s)),  differ(inf, run<Total<Inf<T>>>(d, s)),
                              differ(var, run<Moments<T, double>>(d, s)),
                              differ(var, run<Var<Moments<T, double>, 4>>(d, s))};
    if (cudaDeviceSynchronize() != cudaSuccess) return -1;
    std::size_t nonfinite = 0;
    for (double x : l2) nonfinite += !std::isfinite(x);
    const bool same = n[0] + n[2] + n[3] == 0;  // the engine's norms; the rest reported
    std::printf("%-8s %-7s %5zu x %-8zu +%zu  outputs %5zu (l2 %zu not finite)  by bits against the conversion: "
                "%s (differ: l2 %zu %zu, l1 %zu, inf %zu, var %zu %zu)  row 0: l2 %.17g var %.17g\n",
                name, probe::kind_name(kind), s.rows, s.length, offset, l2.size(), nonfinite,
                same ? "same bits" : "DIFFERENT", n[0], n[1], n[2], n[3], n[4], n[5], l2[0], var[0]);
    return same ? 0 : 1;
  });
}

}  // namespace

int main(int argc, char** argv) {
  probe::print_heading(
      "Values with exponents over 2^-40..2^40 (half 2^-13..2^13). Columns: the engine's Sum along the rows; the L2 "
      "norm widened by conversion, by bits tested after, the engine's (by bits tested first), in float (unchecked); "
      "the L1 norm by conversion, the engine's; the largest magnitude by conversion, by bits tested first (the "
      "engine keeps the conversion there); the engine's variance (by conversion), the variance by bits");
  std::printf("%-8s %-24s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "type", "rows x length", "sum", "l2 conv",
              "l2 after", "l2", "l2 float", "l1 conv", "l1", "inf conv", "inf bits", "var", "var bits");
  return probe::both_half_types(
      argc, argv, [](const char* name, auto* pool, std::size_t elems) { time_type(name, pool, elems); },
      [](const char* name, auto* pool) { return check_type(name, pool); });
}
