// The header-only transform_reduce (fastreduce/reduce.cuh) against the engine's Sum, same data,
// same run: float sums at 2^20, 2^24 and 2^28, CUDA events around batches of back-to-back calls,
// median of 7 batches. Built with -DFASTREDUCE_BUILD_PROBES=ON (target transform_reduce_probe).
#include <cstdio>
#include <vector>
#include <algorithm>
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/reduce.cuh"
struct Sq { __host__ __device__ float operator()(float x) const { return x * x; } };
template <class F> float time_us(F f, int reps) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> t;
  for (int r = 0; r < 7; ++r) { cudaEventRecord(a); for (int i = 0; i < reps; ++i) f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(1000 * ms / reps); }
  std::sort(t.begin(), t.end()); return t[3];
}
int main() {
  for (int k : {20, 24, 28}) {
    size_t n = size_t(1) << k; float* d; cudaMalloc(&d, n * 4); cudaMemset(d, 0, n * 4);
    float* out; cudaMalloc(&out, 64);
    size_t eb = 0; fastreduce::reduce_async(nullptr, eb, d, out, n); void* et; cudaMalloc(&et, eb);
    size_t tb = 0; fastreduce::transform_reduce_async(nullptr, tb, d, n, out, fastreduce::Identity{}, fastreduce::Sum{}); void* tt; cudaMalloc(&tt, tb);
    int reps = k == 28 ? 20 : 200;
    float e = time_us([&] { size_t b = eb; fastreduce::reduce_async(et, b, d, out, n); }, reps);
    float i = time_us([&] { size_t b = tb; fastreduce::transform_reduce_async(tt, b, d, n, out, fastreduce::Identity{}, fastreduce::Sum{}); }, reps);
    float s = time_us([&] { size_t b = tb; fastreduce::transform_reduce_async(tt, b, d, n, out, Sq{}, fastreduce::Sum{}); }, reps);
    printf("n=2^%d engine sum %.2f us (%.0f GB/s)  transform_reduce identity %.2f us (%.0f GB/s, %.1f%%)  square %.2f us (%.1f%%)\n", k, e, n*4/e/1e3, i, n*4/i/1e3, 100*e/i, s, 100*e/s);
    cudaFree(d); cudaFree(out); cudaFree(et); cudaFree(tt);
  }
}
