// The header-only reductions (fastreduce/reduce.cuh) against the engine's Sum and CUB's ArgMax,
// same data, same run: float inputs at 2^14 to 2^28 elements, CUDA events around batches of
// back-to-back calls, median of 7 batches. Built with -DFASTREDUCE_BUILD_PROBES=ON (target
// transform_reduce_probe).
#include <cub/device/device_reduce.cuh>

#include <cstdio>
#include <cstdint>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/reduce.cuh"
#include "probe_timing.hpp"

namespace {

struct Square {
  __host__ __device__ float operator()(float x) const { return x * x; }
};

__global__ void fill(float* d, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    d[i] = float((i * 2654435761u) % 1000003u);
  }
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# %s; GB/s = bytes read / time; ratios: the peer's time / ours\n", prop.name);
  std::printf("%-6s %10s %10s %8s %12s %8s %10s %10s %8s %9s %8s\n", "n", "sum us", "tr us", "tr/sum", "square us",
              "sq/sum", "argmax us", "GB/s", "CUB us", "CUB/ours", "same");
  for (int k = 14; k <= 28; k += 2) {
    const std::size_t n = std::size_t(1) << k;
    float* d = nullptr;
    float* out = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&out, 64);
    fill<<<1024, 256>>>(d, n);
    fastreduce::Indexed<float>* ours = nullptr;
    float* cub_max = nullptr;
    std::int64_t* cub_index = nullptr;
    cudaMalloc(&ours, sizeof(*ours));
    cudaMalloc(&cub_max, sizeof(float));
    cudaMalloc(&cub_index, sizeof(std::int64_t));
    std::size_t engine_bytes = 0, tr_bytes = 0, arg_bytes = 0, cub_bytes = 0;
    fastreduce::reduce_async(nullptr, engine_bytes, d, out, n);
    fastreduce::transform_reduce_async(nullptr, tr_bytes, d, n, out, fastreduce::Identity{}, fastreduce::Sum{});
    fastreduce::argmax_async(nullptr, arg_bytes, d, n, ours);
    cub::DeviceReduce::ArgMax(nullptr, cub_bytes, d, cub_max, cub_index, static_cast<std::int64_t>(n));
    void *engine_temp, *tr_temp, *arg_temp, *cub_temp;
    cudaMalloc(&engine_temp, engine_bytes);
    cudaMalloc(&tr_temp, tr_bytes);
    cudaMalloc(&arg_temp, arg_bytes);
    cudaMalloc(&cub_temp, cub_bytes);
    const int reps = k >= 26 ? 20 : 200;
    const float sum = probe::median_us([&] { std::size_t b = engine_bytes; fastreduce::reduce_async(engine_temp, b, d, out, n); }, reps);
    const float tr = probe::median_us([&] {
      std::size_t b = tr_bytes;
      fastreduce::transform_reduce_async(tr_temp, b, d, n, out, fastreduce::Identity{}, fastreduce::Sum{});
    }, reps);
    const float sq = probe::median_us([&] {
      std::size_t b = tr_bytes;
      fastreduce::transform_reduce_async(tr_temp, b, d, n, out, Square{}, fastreduce::Sum{});
    }, reps);
    const float arg = probe::median_us([&] { std::size_t b = arg_bytes; fastreduce::argmax_async(arg_temp, b, d, n, ours); }, reps);
    const float cub = probe::median_us([&] {
      std::size_t b = cub_bytes;
      cub::DeviceReduce::ArgMax(cub_temp, b, d, cub_max, cub_index, static_cast<std::int64_t>(n));
    }, reps);
    fastreduce::Indexed<float> h{};
    std::int64_t ci = -1;
    cudaMemcpy(&h, ours, sizeof(h), cudaMemcpyDeviceToHost);
    cudaMemcpy(&ci, cub_index, sizeof(ci), cudaMemcpyDeviceToHost);
    std::printf("2^%-4d %10.2f %10.2f %7.1f%% %12.2f %7.1f%% %10.2f %10.0f %8.2f %8.2fx %8s\n", k, sum, tr, 100 * sum / tr,
                sq, 100 * sum / sq, arg, n * 4.0 / arg / 1e3, cub, cub / arg, h.index == ci ? "yes" : "NO");
    for (void* p : {static_cast<void*>(d), static_cast<void*>(out), static_cast<void*>(ours), static_cast<void*>(cub_max),
                    static_cast<void*>(cub_index), engine_temp, tr_temp, arg_temp, cub_temp}) {
      cudaFree(p);
    }
  }
  return 0;
}
