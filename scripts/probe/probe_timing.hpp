// The probes' timing: CUDA events around batches of `reps` back-to-back calls of f(), after three
// warm-up calls; the median of seven batches, in µs per call.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace probe {

template <class F>
float median_us(F f, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> t;
  for (int r = 0; r < 7; ++r) {
    cudaEventRecord(a);
    for (int i = 0; i < reps; ++i) f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(1000 * ms / reps);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[3];
}

}  // namespace probe
