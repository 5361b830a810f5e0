// Probe: what does an extra stream operation cost next to a single-pass reduction launch?
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cooperative_groups.h>
#include <chrono>
namespace cg = cooperative_groups;

__global__ void kred(const float4* in, size_t nv, float* part, unsigned* ctr, float* out) {
  float v = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nv; i += (size_t)gridDim.x * blockDim.x) {
    float4 x = in[i]; v += x.x + x.y + x.z + x.w;
  }
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
  __shared__ float s[32]; __shared__ bool last;
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0; for (int w = 0; w < blockDim.x / 32; ++w) t += s[w];
    part[blockIdx.x] = t; __threadfence();
    last = atomicAdd(ctr, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) { float t = 0; for (unsigned b = 0; b < gridDim.x; ++b) t += __ldcg(part + b); *out = t; *ctr = 0; }
}
__global__ void kcoop(const float4* in, size_t nv, float* part, float* out) {
  float v = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nv; i += (size_t)gridDim.x * blockDim.x) {
    float4 x = in[i]; v += x.x + x.y + x.z + x.w;
  }
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
  __shared__ float s[32];
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) { float t = 0; for (int w = 0; w < blockDim.x / 32; ++w) t += s[w]; part[blockIdx.x] = t; }
  cg::this_grid().sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) { float t = 0; for (unsigned b = 0; b < gridDim.x; ++b) t += __ldcg(part + b); *out = t; }
}
__global__ void kinit(unsigned* c) { *c = 0; }

int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp p; cudaGetDeviceProperties(&p, 0); printf("%s\n", p.name);
  const int R = 2000;
  size_t maxn = 1 << 24;
  float* in; cudaMalloc(&in, maxn * 4);
  std::vector<float> h(maxn, 1.0f); cudaMemcpy(in, h.data(), maxn * 4, cudaMemcpyHostToDevice);
  float *part, *out; unsigned* ctr; cudaMalloc(&part, 1 << 20); cudaMalloc(&out, 16); cudaMalloc(&ctr, 16); cudaMemset(ctr, 0, 16);
  cudaStream_t st; cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  CUdeviceptr dctr = (CUdeviceptr)ctr;
  for (size_t n : {size_t(1) << 10, size_t(1) << 16, size_t(1) << 20, size_t(1) << 24}) {
    size_t nv = n / 4;
    unsigned grid = std::min<size_t>(sms * 4, std::max<size_t>(1, (nv + 255) / 256));
    auto timeit = [&](auto&& f) {
      for (int i = 0; i < 50; ++i) f();
      cudaEventRecord(a, st); for (int i = 0; i < R; ++i) f(); cudaEventRecord(b, st); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b); return ms * 1000 / R;
    };
    float t0 = timeit([&] { kred<<<grid, 256, 0, st>>>((const float4*)in, nv, part, ctr, out); });
    float t1 = timeit([&] { cudaMemsetAsync(ctr, 0, 4, st); kred<<<grid, 256, 0, st>>>((const float4*)in, nv, part, ctr, out); });
    float t2 = timeit([&] { cuStreamWriteValue32(st, dctr, 0, 0); kred<<<grid, 256, 0, st>>>((const float4*)in, nv, part, ctr, out); });
    float t3 = timeit([&] { kinit<<<1, 1, 0, st>>>(ctr); kred<<<grid, 256, 0, st>>>((const float4*)in, nv, part, ctr, out); });
    const float4* pin = (const float4*)in; void* args[] = {(void*)&pin, &nv, &part, &out};
    float t4 = timeit([&] { cudaLaunchCooperativeKernel((void*)kcoop, grid, 256, args, 0, st); });
    cudaError_t e = cudaDeviceSynchronize(); float r; cudaMemcpy(&r, out, 4, cudaMemcpyDeviceToHost);
    // host-side cost of a launch alone
    auto h0 = std::chrono::steady_clock::now();
    printf("n=2^%d grid=%u  kernel %.2f  +memset %.2f  +writeValue %.2f  +initkernel %.2f  coop %.2f us/call  (%s, result %.0f)\n",
           __builtin_ctzll(n), grid, t0, t1, t2, t3, t4, cudaGetErrorString(e), r);
  }
  // pure host cost of cudaLaunchKernel and cudaPointerGetAttributes
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t = now(); for (int i = 0; i < 10000; ++i) { cudaPointerAttributes at; cudaPointerGetAttributes(&at, in); }
  printf("cudaPointerGetAttributes: %.3f us\n", std::chrono::duration<double, std::micro>(now() - t).count() / 10000);
  int dev; t = now(); for (int i = 0; i < 10000; ++i) { cudaGetDevice(&dev); }
  printf("cudaGetDevice: %.3f us\n", std::chrono::duration<double, std::micro>(now() - t).count() / 10000);
  cudaDeviceSynchronize();
  t = now(); for (int i = 0; i < 2000; ++i) kinit<<<1, 1, 0, st>>>(ctr);
  printf("host launch: %.3f us\n", std::chrono::duration<double, std::micro>(now() - t).count() / 2000);
  cudaDeviceSynchronize();
}
