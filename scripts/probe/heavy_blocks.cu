// The 1-D load pass of the reductions with a large thread state (ArgMax, the variance) in other
// block shapes: threads x loads in flight, and vectors of input per block (planned by the
// engine's plan_fast), launched directly (the pass, then the combine kernel without programmatic
// dependent launch) beside the library's own calls and CUB's ArgMax, same data, same run: CUDA
// events around batches of back-to-back calls, median of 7 batches, inputs rotated among slices
// of 384 MB (beyond the L2; every slice 16-byte aligned, as the plan assumes). Built with
// -DFASTREDUCE_BUILD_PROBES=ON (target heavy_blocks). Output of 2026-11-28 (H100):
// docs/results/heavy_blocks_H100_2026-11-28.txt.
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "probe_timing.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;

namespace {

#define PROBE_OK(x)                                                                             \
  do {                                                                                          \
    const cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));          \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

using ArgMaxR = eng::ArgReduction<float, fr::ArgMax>;
using VarR = decltype(fr::reduction_of(std::type_identity<float>{}, fr::Var{}));

// One shape of the pass: Threads x Unroll, a block per `per_block` vectors up to the resident
// blocks, planned by the engine's own plan_fast.
template <class R, unsigned Threads, unsigned Unroll>
struct Shape {
  static constexpr auto kernel = eng::fast_reduce_kernel<Threads, Unroll, eng::kLoadHint, 4, R>;
  eng::FastPlan plan{};
  Shape(const float* x, std::size_t n, int sms, unsigned per_block) {
    int blocks_per_sm = 0;
    PROBE_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, Threads, 0));
    plan = eng::plan_fast(n, sizeof(float), reinterpret_cast<std::uintptr_t>(x), sizeof(typename R::Partial),
                          eng::FastPolicy{.threads = Threads, .unroll = Unroll, .vectors_per_block = per_block}, sms,
                          blocks_per_sm, 0, 4);
  }
  void operator()(const float* x, std::size_t n, typename R::Partial* partials, typename R::Out* out) const {
    kernel<<<plan.grid, Threads>>>(eng::FastArgs<R>{{x}, n, plan.head, plan.vectors, plan.share, partials, out, nullptr}, R{});
    fr::primitives::combine_partials_kernel<Threads, R><<<1, Threads>>>(partials, plan.grid, out, R{});
  }
};

}  // namespace

int main() {
  int device = 0, sms = 0;
  PROBE_OK(cudaGetDevice(&device));
  PROBE_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cudaDeviceProp prop{};
  PROBE_OK(cudaGetDeviceProperties(&prop, device));
  std::printf("# %s; us per call (median of 7 batches), GB/s of the input\n", prop.name);

  const std::size_t total = std::size_t(3) << 25;  // 384 MB of floats, rotated
  float* x = nullptr;
  PROBE_OK(cudaMalloc(&x, total * sizeof(float)));
  {
    std::vector<float> host(total);
    std::mt19937_64 gen(std::random_device{}());
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& v : host) v = dist(gen);
    PROBE_OK(cudaMemcpy(x, host.data(), total * sizeof(float), cudaMemcpyHostToDevice));
  }
  const std::size_t temp_size = std::size_t(64) << 20;
  void* temp = nullptr;
  void* partials = nullptr;
  fr::Indexed<float>* index_out = nullptr;
  float* value_out = nullptr;
  long long* cub_index = nullptr;
  PROBE_OK(cudaMalloc(&temp, temp_size));
  PROBE_OK(cudaMalloc(&partials, std::size_t(1) << 20));
  PROBE_OK(cudaMalloc(&index_out, sizeof(fr::Indexed<float>)));
  PROBE_OK(cudaMalloc(&value_out, 2 * sizeof(float)));
  PROBE_OK(cudaMalloc(&cub_index, sizeof(long long)));

  for (int lg = 18; lg <= 25; ++lg) {
    const std::size_t n = std::size_t(1) << lg;
    const std::size_t slices = total / n;
    int turn = 0;
    auto next = [&] { return x + (turn++ % slices) * n; };
    std::vector<std::pair<std::string, std::function<void()>>> runs;
    runs.push_back({"library sum", [&] { std::size_t b = temp_size; PROBE_OK(fr::reduce_async(temp, b, next(), value_out, n, fr::Sum{})); }});
    runs.push_back({"library argmax", [&] { std::size_t b = temp_size; PROBE_OK(fr::reduce_async(temp, b, next(), index_out, n, fr::ArgMax{})); }});
    runs.push_back({"CUB ArgMax", [&] {
                      std::size_t b = temp_size;
                      PROBE_OK(cub::DeviceReduce::ArgMax(temp, b, next(), value_out, cub_index, static_cast<long long>(n)));
                    }});
    runs.push_back({"library var", [&] { std::size_t b = temp_size; PROBE_OK(fr::var_async(temp, b, next(), n, value_out)); }});
    // The shapes (argmax, then the variance); a block per 2048 or 4096 vectors, or 1024.
#define PROBE_SHAPE(R, T, U, P, name)                                                                    \
  {                                                                                                      \
    const Shape<R, T, U> shape(x, n, sms, P);                                                               \
    runs.push_back({std::string(name) + " " #T "x" #U "/" #P, [&, shape] {                               \
                      shape(next(), n, static_cast<R::Partial*>(partials), reinterpret_cast<R::Out*>(temp)); \
                    }});                                                                                 \
  }
    PROBE_SHAPE(ArgMaxR, 256, 4, 2048, "argmax")
    PROBE_SHAPE(ArgMaxR, 256, 4, 1024, "argmax")
    PROBE_SHAPE(ArgMaxR, 512, 4, 2048, "argmax")
    PROBE_SHAPE(ArgMaxR, 512, 4, 4096, "argmax")
    PROBE_SHAPE(ArgMaxR, 1024, 2, 2048, "argmax")
    PROBE_SHAPE(ArgMaxR, 512, 2, 2048, "argmax")
    PROBE_SHAPE(VarR, 256, 4, 2048, "var")
    PROBE_SHAPE(VarR, 256, 4, 1024, "var")
    PROBE_SHAPE(VarR, 512, 4, 2048, "var")
    PROBE_SHAPE(VarR, 512, 4, 4096, "var")
    PROBE_SHAPE(VarR, 1024, 2, 2048, "var")
#undef PROBE_SHAPE
    for (auto& [name, f] : runs) {
      const float us = probe::median_us(f, 20);
      PROBE_OK(cudaGetLastError());  // a launch that failed is no fast shape
      std::printf("n=2^%d %-24s %8.2f us %7.1f GB/s\n", lg, name.c_str(), us, double(n) * sizeof(float) / us / 1e3);
    }
    PROBE_OK(cudaDeviceSynchronize());
  }
  return 0;
}
