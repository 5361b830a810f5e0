// Host time per call of the pieces of a small reduction's enqueue path: CUDA runtime calls, an
// empty kernel launch, and the engine's entry points at sizes whose GPU time is below the host's.
// Build (from the repository root), linking the float engine and its host planning:
//   nvcc -Iinclude -Isrc -O3 -DNDEBUG -arch=sm_90 -std=c++20 scripts/probe/host_path.cu \
//     src/engine/engine_float.cu src/engine/segments_scan.cu src/engine/plan.cpp \
//     src/engine/axis_plan.cpp src/engine/temp_cache.cpp -lcuda -o host_path
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/detail/device_pointer.hpp"
namespace fr = fastreduce;
__global__ void empty_kernel(const float*, float*, unsigned long) {}
template <class F>
double per_call(const char* what, F f, int iters = 200000) {
  for (int i = 0; i < 1000; ++i) f();
  cudaDeviceSynchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  cudaDeviceSynchronize();
  double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
  std::printf("%-58s %7.3f us\n", what, us);
  return us;
}
int main() {
  float *in, *out; void* temp;
  cudaMalloc(&in, (1 << 20) * sizeof(float)); cudaMalloc(&out, 1024 * sizeof(float)); cudaMalloc(&temp, 1 << 20);
  cudaMemset(in, 0, (1 << 20) * sizeof(float));
  cudaStream_t s = 0;
  int dev = 0;
  cudaStreamCaptureStatus cap;
  cudaPointerAttributes attr;
  for (int rep = 0; rep < 2; ++rep) {
    std::printf("-- round %d\n", rep);
    per_call("cudaGetDevice", [&] { cudaGetDevice(&dev); });
    per_call("cudaStreamIsCapturing", [&] { cudaStreamIsCapturing(s, &cap); });
    per_call("cudaPointerGetAttributes", [&] { cudaPointerGetAttributes(&attr, in); });
    per_call("check_device_pointer (remembered)", [&] { fr::primitives::check_device_pointer(in); });
    per_call("empty<<<1,256>>>", [&] { empty_kernel<<<1, 256, 0, s>>>(in, out, 1); });
    per_call("cudaLaunchKernelEx empty, PDL attribute", [&] {
      cudaLaunchConfig_t cfg{}; cfg.gridDim = 1; cfg.blockDim = 256; cfg.stream = s;
      cudaLaunchAttribute a[1]; a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      a[0].val.programmaticStreamSerializationAllowed = 1; cfg.attrs = a; cfg.numAttrs = 1;
      cudaLaunchKernelEx(&cfg, empty_kernel, (const float*)in, out, 1ul); });
    for (std::size_t n : {std::size_t(1024), std::size_t(1) << 16}) {
      std::size_t bytes = 1 << 20;
      char name[96];
      std::snprintf(name, sizeof name, "reduce_async n=%zu", n);
      per_call(name, [&] { fr::reduce_async(temp, bytes, in, out, n, fr::Sum{}, s); });
      std::snprintf(name, sizeof name, "reduce_async size query n=%zu", n);
      per_call(name, [&] { std::size_t b = 0; fr::reduce_async(nullptr, b, in, out, n, fr::Sum{}, s); });
      std::snprintf(name, sizeof name, "reduce_axis_async Axis{1,n,1} n=%zu", n);
      per_call(name, [&] { fr::reduce_axis_async(temp, bytes, in, out, fr::Axis{1, n, 1}, fr::Sum{}, s); });
      std::snprintf(name, sizeof name, "reduce_axis_async rows 64 x n/64 n=%zu", n);
      per_call(name, [&] { fr::reduce_axis_async(temp, bytes, in, out, fr::Axis{64, n / 64, 1}, fr::Sum{}, s); });
    }
  }
}
