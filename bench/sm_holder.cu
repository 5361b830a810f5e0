#include "sm_holder.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace fastreduce::bench {

namespace {

// One block per SM it lands on: all of the SM's shared memory, so nothing else fits beside it.
// Sets started[block] once resident, then spins until the host sets *release, or `timeout_ns`
// passes (then sets timed_out[block]: the test does not hang if the reduction never finishes).
// Plain stores to mapped host memory, one word per block (no atomics across PCIe).
__global__ void hold_sm(volatile unsigned* started, const volatile unsigned* release, volatile unsigned* timed_out,
                        unsigned long long timeout_ns) {
  extern __shared__ unsigned char held[];
  if (threadIdx.x == 0) {
    held[0] = 1;
    started[blockIdx.x] = 1;
    __threadfence_system();
    unsigned long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*release == 0) {
      __nanosleep(20000);
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      if (now - start > timeout_ns) {
        timed_out[blockIdx.x] = 1;
        __threadfence_system();
        break;
      }
    }
  }
  __syncthreads();
}

}  // namespace

SmHolder::SmHolder(unsigned sms) : sms_(sms) {
  int device = 0, shared = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  // Words: [0, sms) started, [sms, 2 sms) timed out, 2 sms release.
  ok_ = cudaHostAlloc(&flags_, (2 * sms + 1) * sizeof(unsigned), cudaHostAllocMapped) == cudaSuccess &&
        cudaFuncSetAttribute(hold_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, shared) == cudaSuccess &&
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess;
  if (!ok_) return;
  std::fill(flags_, flags_ + 2 * sms + 1, 0u);
  hold_sm<<<sms, 1024, shared, stream_>>>(flags_, flags_ + 2 * sms, flags_ + sms, 8'000'000'000ull);
  ok_ = cudaGetLastError() == cudaSuccess;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ok_ && count(0) < sms && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ok_ = ok_ && count(0) == sms;  // every holder block is resident
}

SmHolder::~SmHolder() {
  release();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (flags_ != nullptr) cudaFreeHost(flags_);
}

void SmHolder::release() {
  if (flags_ == nullptr || released_) return;
  reinterpret_cast<volatile unsigned*>(flags_)[2 * sms_] = 1;
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  released_ = true;
}

unsigned SmHolder::count(unsigned first) const {
  unsigned set = 0;
  for (unsigned b = 0; b < sms_; ++b) set += reinterpret_cast<const volatile unsigned*>(flags_)[first + b] != 0;
  return set;
}

}  // namespace fastreduce::bench
