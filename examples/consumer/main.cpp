// Sums a million ones on the GPU with fastreduce (plain C++: no CUDA compiler needed here).
#include <cuda_runtime.h>
#include <fastreduce/fastreduce.cuh>

#include <cstdio>
#include <vector>

int main() try {
  const std::vector<long long> ones(1'000'000, 1);
  long long* d = nullptr;
  fastreduce::check(cudaMalloc(&d, ones.size() * sizeof(long long)), "cudaMalloc");
  fastreduce::check(cudaMemcpy(d, ones.data(), ones.size() * sizeof(long long), cudaMemcpyHostToDevice), "cudaMemcpy");
  const long long sum = fastreduce::reduce(d, ones.size());  // blocking; throws fastreduce::Error
  cudaFree(d);
  std::printf("sum = %lld\n", sum);
  return sum == 1'000'000 ? 0 : 1;
} catch (const fastreduce::Error& e) {
  std::printf("fastreduce: %s\n", e.what());
  return 1;
}
