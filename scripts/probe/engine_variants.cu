// Probe: time fast-kernel variants (threads, unroll, load hint, vectors per block) against CUB
// on the same data, back to back, inputs rotated beyond L2. Used to choose kSm90Fast.
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/bulk_kernel.cuh"
#include "engine/dispatch.cuh"

using namespace fastreduce;
using namespace fastreduce::engine;

template <unsigned Threads, unsigned Unroll, LoadHint Hint>
struct Variant {
  static constexpr auto kernel = fast_reduce_kernel<Threads, Unroll, Hint, float, Sum>;
};

static float time_calls(cudaStream_t s, int calls, int reps, auto&& f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f(i);
  std::vector<float> t;
  int k = 0;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a, s);
    for (int i = 0; i < calls; ++i) f(k++);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1000 / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const std::size_t arena = std::size_t(1) << 28;  // 1 GiB of floats
  float* in;
  cudaMalloc(&in, arena * 4 + 4096);
  std::vector<float> h(arena);
  for (std::size_t i = 0; i < arena; ++i) h[i] = 0.5f + float((i * 2654435761u) % 1000) / 1000.0f;
  cudaMemcpy(in, h.data(), arena * 4, cudaMemcpyHostToDevice);
  float* out;
  cudaMalloc(&out, 64);
  void* temp;
  cudaMalloc(&temp, 64 << 20);
  cudaStream_t s = 0;

  for (int p : {14, 16, 18, 19, 20, 21, 22, 24, 26, 28}) {
    const std::size_t n = std::size_t(1) << p;
    const std::size_t slices = std::max<std::size_t>(1, std::min<std::size_t>(arena / n, 4096));
    const int calls = std::clamp<int>(int((std::size_t(1) << 26) / n), 1, 200);
    auto slice = [&](int i) { return in + (std::size_t(i) % slices) * n; };
    std::size_t cub_bytes = 64 << 20;
    const float cub = time_calls(s, calls, 15, [&](int i) {
      std::size_t b = cub_bytes;
      cub::DeviceReduce::Sum(temp, b, slice(i), out, (long long)n, s);
    });
    std::printf("n=2^%d  CUB %.2f us", p, cub);
    auto run = [&]<unsigned Threads, unsigned Unroll, LoadHint Hint>(unsigned vpb, const char* name) {
      constexpr auto kernel = Variant<Threads, Unroll, Hint>::kernel;
      int per_sm = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Threads, 0);
      const FastPolicy policy{.threads = Threads, .unroll = Unroll, .vectors_per_block = vpb};
      const float t = time_calls(s, calls, 15, [&](int i) {
        const float* src = slice(i);
        const FastPlan plan = plan_fast(n, 4, reinterpret_cast<std::uintptr_t>(src), 4, policy, sms, per_sm, 0);
        FastArgs<float, float> args{src, n, plan.head, plan.vectors, plan.share, static_cast<float*>(temp), out};
        launch(kernel, plan.grid, Threads, 0, s, args, Sum{});
      });
      std::printf("  %s %.2f (%.2fx)", name, t, cub / t);
    };
    run.template operator()<256, 4, LoadHint::ReadOnly>(1024, "256x4/1024");
    run.template operator()<1024, 4, LoadHint::ReadOnly>(1024, "1024x4/1024");
    auto bulk_run = [&]<unsigned Threads, unsigned Stages, unsigned StageBytes>(const char* name) {
      constexpr auto kernel = bulk_reduce_kernel<Threads, Stages, StageBytes, float, Sum>;
      constexpr std::size_t smem = bulk_shared_bytes<Threads, Stages, StageBytes>();
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
      int per_sm = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Threads, smem);
      float result = 0;
      const float t = time_calls(s, calls, 15, [&](int i) {
        const float* src = slice(i);
        const BulkPlan plan = plan_bulk(n, 4, reinterpret_cast<std::uintptr_t>(src), 4, StageBytes, sms, per_sm, 0);
        BulkArgs<float, float> args{src, n, plan.head, plan.stages, plan.stages_per_block, plan.tail_begin,
                                    static_cast<float*>(temp), out};
        launch(kernel, plan.grid, Threads, smem, s, args, Sum{});
      });
      // correctness against CUB on slice 1 (misaligned by one element too)
      float ref = 0, got = 0;
      for (int shift : {0, 1}) {
        std::size_t b = cub_bytes;
        cub::DeviceReduce::Sum(temp, b, slice(1) + shift, out + 1, (long long)(n - shift), s);
        cudaMemcpy(&ref, out + 1, 4, cudaMemcpyDeviceToHost);
        const BulkPlan plan = plan_bulk(n - shift, 4, reinterpret_cast<std::uintptr_t>(slice(1) + shift), 4, StageBytes, sms, per_sm, 0);
        BulkArgs<float, float> args{slice(1) + shift, n - shift, plan.head, plan.stages, plan.stages_per_block, plan.tail_begin,
                                    static_cast<float*>(temp) + 1024, out};
        launch(kernel, plan.grid, Threads, smem, s, args, Sum{});
        cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost);
        result = std::max(result, std::fabs(got - ref) / ref);
      }
      std::printf("  %s %.2f (%.2fx, err %.1e, %d/SM)", name, t, cub / t, result, per_sm);
    };
    if (p >= 24) bulk_run.template operator()<512, 4, 32768>("bulk512x4x32K");
    {
      std::size_t bytes = 0;
      const Options opt{.mode = Mode::Reproducible};
      reduce_async_impl<float, Sum>(nullptr, bytes, in, out, n, Sum{}, s, opt);
      const float t = time_calls(s, calls, 15, [&](int i) {
        std::size_t b = bytes;
        reduce_async_impl<float, Sum>(temp, b, slice(i), out, n, Sum{}, s, opt);
      });
      std::printf("  repro %.2f (%.2fx)", t, cub / t);
    }
    std::printf("  [%s]\n", cudaGetErrorString(cudaDeviceSynchronize()));
  }
}
