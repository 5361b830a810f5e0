// The moments down short columns (4 and 16 rows; float and bfloat16), under grids capped by
// Options::max_blocks (0: the planner's grid, a block an item; else blocks that loop over items),
// on random data (1000 + U(0, 100)) and on columns whose elements are all equal (a zero variance:
// the finish's dividends are zero), with float mean and var down columns of 64 as controls.
// CUDA events around batches of back-to-back calls, median of 7 batches (probe_timing.hpp), the
// same buffer each call (2^24 and 2^28 elements). Built with -DFASTREDUCE_BUILD_PROBES=ON (target
// column_grid); docs/notes.md, "Pieces of 2^k rows take the moments' offset by a multiplication".
#include <cuda_bf16.h>

#include <cstdio>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "probe_timing.hpp"

namespace fr = fastreduce;

namespace {

// x[i] = 1000 + a hash of i (random) or of i's column (i mod inner: every column's elements equal).
template <class T>
__global__ void fill(T* x, std::size_t n, std::size_t inner, bool equal_columns) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned long long h = ((equal_columns ? i % inner : i) + 1) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    x[i] = T(1000.0f + float(h % 100000) * 1e-3f);
  }
}

template <class T, class Op>
void run(const char* type, const char* op_name, Op op, std::size_t total, std::size_t length, bool equal_columns) {
  const fr::Axis axis{.outer = 1, .length = length, .inner = total / length};
  T* x = nullptr;
  float* out = nullptr;
  void* temp = nullptr;
  std::size_t bytes = std::size_t(1) << 26;
  if (cudaMalloc(&x, total * sizeof(T)) != cudaSuccess || cudaMalloc(&out, axis.inner * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&temp, bytes) != cudaSuccess) {
    std::printf("allocation failed\n");
    return;
  }
  fill<T><<<4096, 256>>>(x, total, axis.inner, equal_columns);
  for (unsigned max_blocks : {0u, 528u, 1056u, 2112u, 4224u, 8448u, 16896u}) {
    fr::Options opt{};
    opt.max_blocks = max_blocks;
    cudaError_t e = cudaSuccess;
    const float us = probe::median_us(
        [&] {
          std::size_t b = bytes;
          const cudaError_t r = fr::reduce_axis_async(temp, b, x, out, axis, op, 0, opt);
          if (r != cudaSuccess) e = r;
        },
        20);
    std::printf("%s %s %s total 2^%d columns of %zu max_blocks %u: %.1f us (%.0f GB/s) %s\n", type, op_name,
                equal_columns ? "equal" : "random", 63 - __builtin_clzll(total), length, max_blocks, us,
                total * sizeof(T) / us / 1e3, cudaGetErrorString(e != cudaSuccess ? e : cudaGetLastError()));
  }
  cudaFree(x);
  cudaFree(out);
  cudaFree(temp);
}

}  // namespace

int main() {
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  std::printf("%s, %d SMs\n", p.name, p.multiProcessorCount);
  for (bool equal_columns : {false, true}) {
    for (std::size_t total : {std::size_t(1) << 24, std::size_t(1) << 28}) {
      run<float>("float", "var", fr::Var{1}, total, 4, equal_columns);
      run<float>("float", "std", fr::Std{1}, total, 4, equal_columns);
      run<float>("float", "mean", fr::Mean{}, total, 4, equal_columns);
      run<__nv_bfloat16>("bfloat16", "var", fr::Var{1}, total, 4, equal_columns);
      run<__nv_bfloat16>("bfloat16", "var", fr::Var{1}, total, 16, equal_columns);
      run<float>("float", "var", fr::Var{1}, total, 64, equal_columns);
    }
  }
}
