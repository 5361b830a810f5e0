// Probe: does the reproducible sum's grid size matter at sizes where the tiles do not divide
// evenly over the warps? Times fast mode and reproducible mode with max_blocks = 0 (one block
// per SM) and a few caps, interleaved round by round, on inputs rotated beyond L2.
// Build: nvcc -std=c++20 -O3 -arch=sm_90 -Iinclude -Isrc scripts/probe/repro_grid.cu \
//          -Lbuild -lfastreduce -o build/repro_grid
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "fastreduce/fastreduce.cuh"

namespace fr = fastreduce;

int main() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  for (int p : {22, 24, 26}) {
    const std::size_t n = std::size_t(1) << p;
    const int copies = std::max<int>(2, int((256ull << 20) / (n * 4)));
    std::vector<float*> in(copies);
    for (float*& b : in) {
      cudaMalloc(&b, n * 4);
      cudaMemset(b, 0x3c, n * 4);  // every element 0.0117...: finite, non-zero
    }
    float* out;
    cudaMalloc(&out, 4);
    struct Variant {
      const char* name;
      fr::Options opt;
    };
    const std::vector<Variant> variants = {
        {"fast", {}},
        {"repro auto", {.mode = fr::Mode::Reproducible}},
        {"repro 128", {.mode = fr::Mode::Reproducible, .max_blocks = 128}},
        {"repro 124", {.mode = fr::Mode::Reproducible, .max_blocks = 124}},
        {"repro 120", {.mode = fr::Mode::Reproducible, .max_blocks = 120}},
        {"repro 112", {.mode = fr::Mode::Reproducible, .max_blocks = 112}},
    };
    std::size_t bytes = 0;
    for (const Variant& v : variants) {
      std::size_t b = 0;
      fr::reduce_async<float, fr::Sum>(nullptr, b, in[0], out, n, fr::Sum{}, 0, v.opt);
      bytes = std::max(bytes, b);
    }
    void* temp;
    cudaMalloc(&temp, bytes);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<std::vector<float>> times(variants.size());
    const int calls = 40;
    for (int round = 0; round < 15; ++round) {
      for (std::size_t k = 0; k < variants.size(); ++k) {
        const std::size_t i = round % 2 ? variants.size() - 1 - k : k;
        std::size_t b = bytes;
        for (int c = 0; c < 4; ++c) fr::reduce_async<float, fr::Sum>(temp, b, in[c % copies], out, n, fr::Sum{}, 0, variants[i].opt);
        cudaEventRecord(e0);
        for (int c = 0; c < calls; ++c)
          fr::reduce_async<float, fr::Sum>(temp, b, in[c % copies], out, n, fr::Sum{}, 0, variants[i].opt);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        times[i].push_back(ms * 1000 / calls);
      }
    }
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) { std::printf("error %s\n", cudaGetErrorString(e)); return 1; }
    std::printf("n = 2^%d (%zu tiles of 4096)\n", p, n / 4096);
    float fast = 0;
    for (std::size_t i = 0; i < variants.size(); ++i) {
      std::sort(times[i].begin(), times[i].end());
      const float med = times[i][times[i].size() / 2];
      if (i == 0) fast = med;
      std::printf("  %-12s %8.2f us  fast/this %.3f\n", variants[i].name, med, fast / med);
    }
    for (float* b : in) cudaFree(b);
    cudaFree(out);
    cudaFree(temp);
  }
}
