// 14 vs 12: the sum goes through the tensor cores. A matrix product against a ones matrix is a
// row sum: with B = all ones, D = A * B + C adds the k elements of each row of A into every
// column of C. Each warp loads rung 12's vectors (two per lane per step), places them in A
// fragments in any order (a sum does not care which element sits where), and accumulates in the
// C fragment across the whole grid-stride loop; at the end, column 0 of C holds the row sums
// and the usual warp/block/last-block finish adds them up.
//   float:  mma.m16n8k8 with tf32 inputs (10 mantissa bits) and float accumulation. One tf32
//           term would lose 13 bits of every input, so each float is split into hi (x rounded
//           to tf32) + lo (the rest, rounded to tf32), two products per fragment: the pair
//           carries 22+ bits, and the result stays within a few float roundings.
//   double: mma.m8n8k4 in fp64 (DMMA): exact products, fp64 accumulation.
// Other types and ops (and builds before sm_80) run rung 12's loop: the rung exists to measure
// whether the tensor cores help a memory-bound reduction on this GPU. Zhang et al. (2025, "Can
// Tensor Cores Benefit Memory-Bound Kernels? (No!)") predict they cannot; the profiler shows
// where the time goes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "fastreduce/ops.cuh"
#include "ladder/12_last_block_finish.cuh"

namespace fastreduce::ladder {

template <class T, class Op>
inline constexpr bool tensor_core_sum_v = std::is_same_v<Op, Sum> && (std::is_same_v<T, float> || std::is_same_v<T, double>);

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// x ~ hi + lo, both tf32 values (bit patterns): hi is x rounded to tf32, lo the exact rest
// rounded to tf32, so hi + lo is within 2^-23 |x| of x, with no bias. From 2^127 up rounding
// could carry into infinity: there both parts are truncated (hi + lo never exceeds |x|).
// Infinity and NaN go whole into hi.
__device__ __forceinline__ std::uint32_t round_tf32(float x) {
  std::uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return bits;
}
__device__ __forceinline__ void split_tf32(float x, std::uint32_t& hi, std::uint32_t& lo) {
  constexpr std::uint32_t kTf32 = 0xffffe000u;  // sign, exponent and the top 10 mantissa bits
  if (!isfinite(x)) {
    hi = __float_as_uint(x);
    lo = 0;
    return;
  }
  const bool huge = fabsf(x) >= 0x1p127f;
  hi = huge ? __float_as_uint(x) & kTf32 : round_tf32(x);
  const float rest = x - __uint_as_float(hi);  // exact
  lo = huge ? __float_as_uint(rest) & kTf32 : round_tf32(rest);
}

// C += A * ones, m16n8k8, tf32 inputs, float accumulators.
__device__ __forceinline__ void mma_ones(float (&c)[4], const std::uint32_t (&a)[4]) {
  constexpr std::uint32_t one = 0x3f800000u;  // 1.0f, exact in tf32
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(one), "r"(one));
}

// C += A * ones, m8n8k4, fp64.
__device__ __forceinline__ void mma_ones(double (&c)[2], double a) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
               : "+d"(c[0]), "+d"(c[1])
               : "d"(a), "d"(1.0));
}

// This thread's part of the sum of the grid's warps' vectors, by tensor cores. The loop is
// warp-uniform (mma.sync needs all 32 lanes): warp w takes 32 * K vectors per step, lanes past
// the end contribute zeros. Returns, in lanes 0, 4, ..., 28, the row sums of column 0 of C.
template <unsigned Block, class T>
__device__ __forceinline__ T tensor_core_vectors(const VectorBody<T>& body) {
  // Vectors per lane per step: 2, not rung 12's 4. With the fragments (and a float's split)
  // 4 would not fit the 32 registers a full SM of threads leaves each one (ptxas spilled).
  constexpr unsigned K = 2;
  const unsigned lane = threadIdx.x % 32;
  const std::size_t warps = std::size_t(gridDim.x) * (Block / 32);
  const std::size_t warp = std::size_t(blockIdx.x) * (Block / 32) + threadIdx.x / 32;
  constexpr unsigned kC = std::is_same_v<T, float> ? 4 : 2;
  T c[kC] = {};
  for (std::size_t base = warp * 32 * K; base < body.count; base += warps * 32 * K) {
    Vec<T> v[K];
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      const std::size_t i = base + k * 32 + lane;
      v[k] = i < body.count ? primitives::load_vec(body.vectors + i) : Vec<T>{};
    }
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      if constexpr (std::is_same_v<T, float>) {
        std::uint32_t hi[4], lo[4];
#pragma unroll
        for (unsigned e = 0; e < 4; ++e) split_tf32(v[k].elem[e], hi[e], lo[e]);
        mma_ones(c, hi);
        mma_ones(c, lo);
      } else {
        mma_ones(c, v[k].elem[0]);
        mma_ones(c, v[k].elem[1]);
      }
    }
  }
  // Column 0 of C sits in lanes whose index in their quad is 0: c[0] (rows 0-7) and, for the
  // 16-row float tile, c[2] (rows 8-15). The other columns hold the same sums again.
  if (lane % 4 != 0) return T(0);
  if constexpr (std::is_same_v<T, float>) return c[0] + c[2];
  else return c[0];
}
#endif

template <unsigned Block, class T, class Op>
__global__ void __launch_bounds__(Block, kFullSmBlocks<Block>)
    tensor_core_sum_kernel(const T* in, T* out, std::size_t n, T* partials, unsigned* arrived, Op op) {
  const VectorBody<T> body = split_vectors(in, n);
  T value = edge_scalars(in, body, op);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (tensor_core_sum_v<T, Op>) value = op(value, tensor_core_vectors<Block>(body));
  else value = op(value, grid_stride_vectors<Block>(body, op));
#else
  value = op(value, grid_stride_vectors<Block>(body, op));
#endif
  finish_in_last_block<Block>(value, partials, arrived, out, op);
}

template <unsigned Block, class T, class Op>
struct TensorCoreSumKernel {
  static constexpr auto kernel = tensor_core_sum_kernel<Block, T, Op>;
};
using TensorCoreSum = OneKernelLaunch<TensorCoreSumKernel>;

}  // namespace fastreduce::ladder
