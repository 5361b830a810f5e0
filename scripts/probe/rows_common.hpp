// What the probes along rows share (mean_rows.cu, wide_halves.cu, mean_variants.cu,
// var_rows.cu): a shape, a runner of a reduction along the rows (the header-only engine
// instantiated for the probe's own reductions), the engine's own Sum along the same rows, and a
// fill of near, far or special values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"

namespace probe {

namespace fr = fastreduce;
namespace eng = fastreduce::engine;

// A reduction with another bound on the block-per-row kernel's blocks an SM (the mean's registers:
// 70 without, 64 under four).
template <class Base, unsigned B>
struct BlockRowsBound : Base {
  static constexpr unsigned kBlockRowsMinBlocks = B;
  __device__ __forceinline__ BlockRowsBound at(const typename Base::Input* first) const {
    return BlockRowsBound{Base::at(first)};
  }
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
    const cudaError_t e = eng::reduce_axis_async_impl<R>(nullptr, bytes, {d}, nullptr, axis, R{}, 0, fr::Options{});
    if (e != cudaSuccess || cudaMalloc(&temp, std::max<std::size_t>(bytes, 16)) != cudaSuccess ||
        cudaMalloc(&out, s.rows * sizeof(typename R::Out)) != cudaSuccess) {
      std::fprintf(stderr, "%zu x %zu: %s\n", s.rows, s.length, cudaGetErrorString(e));
      std::exit(2);
    }
  }
  template <class T>
  cudaError_t operator()(const T* d) {
    std::size_t b = bytes;
    return eng::reduce_axis_async_impl<R>(temp, b, {d}, out, axis, R{}, 0, fr::Options{});
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

// One call of R along the shape's rows: its results.
// (The output is poisoned first; a call that fails ends the probe, so no result is a stale one.)
template <class R>
std::vector<typename R::Out> run(const typename R::Input* d, Shape s) {
  Runner<R> r(d, s);
  cudaMemset(r.out, 0xFF, s.rows * sizeof(typename R::Out));
  const cudaError_t e = r(d);
  if (e != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "%zu x %zu: %s\n", s.rows, s.length,
                 cudaGetErrorString(e != cudaSuccess ? e : cudaGetLastError()));
    std::exit(2);
  }
  return r.result();
}
// How many elements of two results differ in their bits.
template <class X>
std::size_t differ(const std::vector<X>& a, const std::vector<X>& b) {
  std::size_t n = 0;
  for (std::size_t q = 0; q < a.size(); ++q) n += std::memcmp(&a[q], &b[q], sizeof(X)) != 0;
  return n;
}

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

inline __device__ unsigned mix(std::size_t i, unsigned seed) {
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

// A timed shape's inputs: up to eight slices of the pool, the next one each call (one for a hot
// shape); and the calls a batch (10 from 2^28 elements, else 100).
template <class T>
struct Rotation {
  T* pool;
  std::size_t n;
  int slices, reps, slice = 0;
  Rotation(T* p, std::size_t pool_elems, Shape s)
      : pool(p),
        n(s.rows * s.length),
        slices(s.hot ? 1 : static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(8, pool_elems / n)))),
        reps(n >= (std::size_t(1) << 28) ? 10 : 100) {}
  T* next() {
    slice = (slice + 1) % slices;
    return pool + std::size_t(slice) * n;
  }
};

// The bit checks' shapes: 1-D and rows, each at two alignments, on near, far and special values
// (fill's kinds). check(kind, shape, data) returns 1 where that shape's bits differ, 0 where they
// do not, -1 on a CUDA error (which ends the checks); the count of shapes that differ (one more
// than that on an error).
template <class T, class Check>
int over_check_shapes(T* pool, unsigned seed, Check check) {
  const Shape shapes[] = {{1, 1},       {1, 31},       {1, 1000003},      {1, (std::size_t(1) << 20) + 3},
                          {1, std::size_t(1) << 26}, {4096, 4096}, {1000, 1000}, {64, 65536 + 8},
                          {33, 4099},   {8192, 16},    {8192, 2},         {8192, 4},
                          {8192, 8}};
  int bad = 0;
  for (int kind = 0; kind < 3; ++kind) {
    for (const Shape s : shapes) {
      fill<<<4096, 256>>>(pool, s.rows * s.length + 8, seed + unsigned(s.length) + 97u * unsigned(kind), kind);
      for (std::size_t offset : {std::size_t(0), std::size_t(3)}) {
        const int r = check(kind, s, static_cast<const T*>(pool + offset), offset);
        if (r < 0) return bad + 1;
        bad += r;
      }
    }
  }
  return bad;
}
inline const char* kind_name(int kind) { return kind == 0 ? "near" : kind == 1 ? "far" : "special"; }

// The first line of a probe's output: the GPU, how it times, what its columns are.
inline void print_heading(const char* columns) {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# %s; us per call, back to back, median of 7 batches (inputs rotated over up to 8 slices, or \"hot\": "
              "the same each call). %s\n",
              prop.name, columns);
}

// A probe's main over both half types on one pool of 2^30 elements: time(name, pool, elements)
// for bfloat16 then half, unless the first argument is --check, then check(name, pool) for both,
// each returning its count of shapes with different bits; the exit status 0 where none differ.
template <class Time, class Check>
int both_half_types(int argc, char** argv, Time time, Check check) {
  const std::size_t elems = std::size_t(1) << 30;
  __nv_bfloat16* b = nullptr;
  if (cudaMalloc(&b, elems * 2) != cudaSuccess) return 1;
  __half* h = reinterpret_cast<__half*>(b);
  if (!(argc > 1 && std::strcmp(argv[1], "--check") == 0)) {
    time("bfloat16", b, elems);
    time("half", h, elems);
  }
  const int bad = check("bfloat16", b) + check("half", h);
  std::printf("%d shapes with different bits\n", bad);
  cudaFree(b);
  return bad == 0 && cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}

}  // namespace probe
