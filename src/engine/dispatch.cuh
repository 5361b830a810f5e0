// reduce_async: argument checks, the launch plan, and the launch of the fast or reproducible
// kernel. Instantiated per input type in engine_<type>.cu.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "engine/bulk_kernel.cuh"
#include "engine/fast_kernel.cuh"
#include "engine/plan.hpp"
#include "engine/policy.hpp"
#include "engine/repro_kernel.cuh"
#include "engine/temp_cache.hpp"
#include "fastreduce/fastreduce.cuh"
#include "primitives/device_pointer.hpp"

namespace fastreduce::engine {

inline constexpr int kMaxDevices = 64;

// Blocks of `kernel` that fit on one SM at once (what a cooperative launch may use), per device,
// queried once. Returns 0 when the kernel cannot run on the device (not enough shared memory).
template <auto Kernel, unsigned Threads, std::size_t SharedBytes = 0>
int resident_blocks_per_sm(int device) {
  static std::array<std::atomic<int>, kMaxDevices> cache{};
  if (device < 0 || device >= kMaxDevices) return 0;
  int blocks = cache[device].load(std::memory_order_relaxed);
  if (blocks == 0) {
    bool ok = true;
    if constexpr (SharedBytes > 48 * 1024) {  // opt in to more than 48 KiB of dynamic shared memory
      ok = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(SharedBytes)) == cudaSuccess;
    }
    ok = ok && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, Threads, SharedBytes) == cudaSuccess;
    if (!ok || blocks <= 0) {
      cudaGetLastError();  // the failed query is not the caller's error
      blocks = -1;         // remembered: this kernel cannot run here
    }
    cache[device].store(blocks, std::memory_order_relaxed);
  }
  return blocks > 0 ? blocks : 0;
}

// A device attribute, per device, queried once (0 for a device index out of range).
template <cudaDeviceAttr Attribute>
int device_attribute(int device) {
  static std::array<std::atomic<int>, kMaxDevices> cache{};
  if (device < 0 || device >= kMaxDevices) return 0;
  int value = cache[device].load(std::memory_order_relaxed);
  if (value == 0) {
    cudaDeviceGetAttribute(&value, Attribute, device);
    cache[device].store(value, std::memory_order_relaxed);
  }
  return value;
}

inline int compute_major(int device) { return device_attribute<cudaDevAttrComputeCapabilityMajor>(device); }
inline int multiprocessors(int device) {
  return std::max(device_attribute<cudaDevAttrMultiProcessorCount>(device), 1);
}

template <class Kernel, class... Args>
cudaError_t launch(Kernel kernel, unsigned grid, unsigned threads, std::size_t shared_bytes,
                   cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  if (grid > 1) {  // the grid-wide barrier needs every block resident at once
    config.attrs = &cooperative;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, args...);
}

// The body of reduce_async; `message`, when given, receives the text of an argument error.
template <class T, class Op>
cudaError_t reduce_async_impl(void* d_temp, std::size_t& temp_bytes, const T* d_in,
                              acc_t<T, Op>* d_out, std::size_t n, Op op, cudaStream_t stream,
                              const Options& opt, const char** message = nullptr) {
  using A = acc_t<T, Op>;
  static_assert(is_supported_input_v<T>, "fastreduce: unsupported input type");
  static_assert(op_applies_to<A, Op>, "fastreduce: bitwise ops need an integer type");

  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const bool reproducible = opt.mode == Mode::Reproducible && std::is_floating_point_v<A> &&
                            std::is_same_v<Op, Sum>;
  if (opt.mode == Mode::Reproducible && std::is_floating_point_v<A> && std::is_same_v<Op, Prod>) {
    if (message != nullptr) *message = "Mode::Reproducible has no floating-point Prod";
    return cudaErrorNotSupported;
  }
  auto check = [&](std::size_t needed) {
    const ArgumentError error = validate_arguments(d_in, d_out, d_temp, n, alignof(T), alignof(A),
                                                   temp_bytes, needed);
    if (message != nullptr) *message = error.message;
    return error.code;
  };

  if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, Sum>) {
    if (reproducible) {
      constexpr auto kernel = repro_sum_kernel<T>;
      const int per_sm = resident_blocks_per_sm<kernel, kReproThreads>(device);
      const ReproPlan plan = plan_reproducible(n, multiprocessors(device), per_sm, opt.max_blocks,
                                               kReproBlockWords<A>);
      if (d_temp == nullptr) {
        temp_bytes = plan.temp_bytes;
        return cudaSuccess;
      }
      if (cudaError_t e = check(plan.temp_bytes); e != cudaSuccess) return e;
      if (n >= kReproMaxElements) {
        if (message != nullptr) *message = "Mode::Reproducible sums at most 2^40 elements";
        return cudaErrorNotSupported;
      }
      const bool aligned = reinterpret_cast<std::uintptr_t>(d_in) % 16 == 0;
      ReproArgs<T, A> args{d_in, n, plan.tiles, aligned, static_cast<unsigned long long*>(d_temp), d_out};
      return launch(kernel, plan.grid, kReproThreads, 0, stream, args);
    }
  }

  const std::size_t bytes = n * sizeof(T);
  // 2-byte types stay on the load path, whose 1024-thread blocks have more threads to convert
  // and add the 8 elements of every vector.
  if constexpr (sizeof(T) >= 4) {
    constexpr BulkPolicy policy = kSm90Bulk;
    constexpr std::size_t shared = std::size_t(policy.stages) * policy.stage_bytes;
    constexpr auto kernel = bulk_reduce_kernel<policy.threads, policy.stages, policy.stage_bytes, T, Op>;
    // Bulk copies are sm_90+ and need their shared memory: a GPU that cannot give it (the
    // occupancy query says 0) takes the load path, at the size query and at the launch alike.
    const int per_sm = bytes >= kSm90BulkMinBytes && compute_major(device) >= 9
                           ? resident_blocks_per_sm<kernel, policy.threads, shared>(device)
                           : 0;
    if (per_sm > 0) {
      const BulkPlan plan = plan_bulk(n, sizeof(T), reinterpret_cast<std::uintptr_t>(d_in), sizeof(A),
                                      policy.stage_bytes, multiprocessors(device), per_sm, opt.max_blocks);
      if (d_temp == nullptr) {
        temp_bytes = plan.temp_bytes;
        return cudaSuccess;
      }
      if (cudaError_t e = check(plan.temp_bytes); e != cudaSuccess) return e;
      BulkArgs<T, A> args{d_in, n, plan.head, plan.stages, plan.stages_per_block, plan.tail_begin,
                          static_cast<A*>(d_temp), d_out};
      return launch(kernel, plan.grid, policy.threads, shared, stream, args, op);
    }
  }
  auto run_fast = [&]<FastPolicy policy>() -> cudaError_t {
    constexpr auto kernel = fast_reduce_kernel<policy.threads, policy.unroll, kSm90Load, T, Op>;
    const int per_sm = resident_blocks_per_sm<kernel, policy.threads>(device);
    const FastPlan plan = plan_fast(n, sizeof(T), reinterpret_cast<std::uintptr_t>(d_in), sizeof(A),
                                    policy, multiprocessors(device), per_sm, opt.max_blocks);
    if (d_temp == nullptr) {
      temp_bytes = plan.temp_bytes;
      return cudaSuccess;
    }
    if (cudaError_t e = check(plan.temp_bytes); e != cudaSuccess) return e;
    FastArgs<T, A> args{d_in, n, plan.head, plan.vectors, plan.share, static_cast<A*>(d_temp), d_out};
    return launch(kernel, plan.grid, policy.threads, 0, stream, args, op);
  };
  if (bytes <= kSm90TinyMaxBytes) return run_fast.template operator()<kSm90Tiny>();
  if (bytes <= kSm90SmallMaxBytes) return run_fast.template operator()<kSm90Small>();
  return run_fast.template operator()<kSm90Large>();
}

template <class T, class Op>
acc_t<T, Op> reduce_blocking(cudaStream_t stream, const T* d_in, std::size_t n, Op op,
                             const Options& opt) {
  using A = acc_t<T, Op>;
  std::size_t temp_bytes = 0;
  const char* message = nullptr;
  check(reduce_async_impl<T, Op>(nullptr, temp_bytes, d_in, nullptr, n, op, stream, opt, &message),
        "fastreduce::reduce: size query");
  CachedTemp cached{};
  check(acquire_cached_temp(stream, temp_bytes, cached), "fastreduce::reduce: temporary storage");
  A* d_out = static_cast<A*>(cached.result_slot);
  const cudaError_t status = reduce_async_impl<T, Op>(cached.temp, cached.temp_bytes, d_in, d_out,
                                                       n, op, stream, opt, &message);
  if (status != cudaSuccess) {
    throw Error(status, std::string("fastreduce::reduce: ") +
                            (message != nullptr ? message : cudaGetErrorString(status)));
  }
  A result{};
  check(cudaMemcpyAsync(&result, d_out, sizeof(A), cudaMemcpyDeviceToHost, stream),
        "fastreduce::reduce: copying the result");
  check(cudaStreamSynchronize(stream), "fastreduce::reduce: kernel");
  return result;
}

}  // namespace fastreduce::engine

namespace fastreduce {

template <class T, class Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                         std::size_t n, Op op, cudaStream_t stream, const Options& opt) {
  return engine::reduce_async_impl<T, Op>(d_temp, temp_bytes, d_in, d_out, n, op, stream, opt);
}

template <class T, class Op>
acc_t<T, Op> reduce(const T* d_in, std::size_t n, Op op, const Options& opt) {
  return engine::reduce_blocking<T, Op>(cudaStream_t{}, d_in, n, op, opt);
}

template <class T, class Op>
acc_t<T, Op> reduce_on(cudaStream_t stream, const T* d_in, std::size_t n, Op op, const Options& opt) {
  return engine::reduce_blocking<T, Op>(stream, d_in, n, op, opt);
}

}  // namespace fastreduce

// Explicit instantiation of the public entry points for input T and op Op.
#define FASTREDUCE_INSTANTIATE(T, Op)                                                           \
  template cudaError_t fastreduce::reduce_async<T, Op>(void*, std::size_t&, const T*,            \
                                                       fastreduce::acc_t<T, Op>*, std::size_t,   \
                                                       Op, cudaStream_t, const Options&);        \
  template fastreduce::acc_t<T, Op> fastreduce::reduce<T, Op>(const T*, std::size_t, Op,         \
                                                              const Options&);                   \
  template fastreduce::acc_t<T, Op> fastreduce::reduce_on<T, Op>(cudaStream_t, const T*,         \
                                                                 std::size_t, Op, const Options&);
