// reduce_async: argument checks, the choice of path (route) and its launches. Instantiated per
// input type in engine_<type>.cu.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "engine/bulk_path.cuh"
#include "engine/describe.hpp"
#include "engine/fast_path.cuh"
#include "engine/launch.cuh"
#include "engine/plan.hpp"
#include "engine/policy.hpp"
#include "engine/repro_path.cuh"
#include "engine/temp_cache.hpp"
#include "fastreduce/fastreduce.cuh"
#include "primitives/device_pointer.hpp"
#include "primitives/grid_finish.cuh"

namespace fastreduce::engine {

// The kernels of each path for input T and op Op.
template <class T, class Op>
struct Kernels {
  using A = acc_t<T, Op>;
  static constexpr auto one_block = fast_reduce_kernel<kOneBlock.threads, kOneBlock.unroll, kLoadHint, T, Op>;
  static constexpr auto small = fast_reduce_kernel<kSmall.threads, kSmall.unroll, kLoadHint, T, Op>;
  static constexpr auto large = fast_reduce_kernel<kLarge.threads, kLarge.unroll, kLoadHint, T, Op>;
  static constexpr auto bulk = bulk_reduce_kernel<kBulk.threads, kBulk.stages, kBulk.stage_bytes, T, Op>;
  static constexpr auto combine = primitives::combine_partials_kernel<kCombineThreads, A, Op>;
};

// A route and everything its launches need.
struct Launch {
  Route route;
  FastPlan fast{};
  BulkPlan bulk{};
  ReproPlan repro{};
};

// Chooses the path for n elements at `address` on `device` and plans it. Errors: a kernel that
// cannot run on this device (the library was not compiled for it), and the mode's limits.
template <class T, class Op>
cudaError_t plan_launch(std::size_t n, std::uintptr_t address, const Options& opt, int device, Launch& out,
                        const char** message) {
  using A = acc_t<T, Op>;
  using K = Kernels<T, Op>;
  const int sms = multiprocessors(device);
  const int major = compute_major(device);
  const bool dependent_possible = major >= 9;
  auto fail = [&](cudaError_t e, const char* text) {
    if (message != nullptr) *message = text;
    return e;
  };

  if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, Prod>) {
    if (opt.mode == Mode::Reproducible) return fail(cudaErrorNotSupported, "Mode::Reproducible has no floating-point Prod");
  }
  if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, Sum>) {
    if (opt.mode == Mode::Reproducible) {
      if (n >= kReproMaxElements) return fail(cudaErrorNotSupported, "Mode::Reproducible sums at most 2^40 elements");
      KernelFacts main{}, finish{};
      if (cudaError_t e = kernel_facts<repro_sum_kernel<T>, kReproThreads>(device, main); e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (reproducible sum)");
      }
      if (cudaError_t e = kernel_facts<repro_finish_kernel<A>, kReproThreads>(device, finish); e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (reproducible combine)");
      }
      out.repro = plan_reproducible(n, sms, main.blocks_per_sm, opt.max_blocks, primitives::kExactRowWords<A>);
      out.route = make_route(Path::Reproducible, out.repro.grid, kReproThreads, out.repro.temp_bytes, 0,
                             dependent_possible && finish.ptx_version >= 90);
      return cudaSuccess;
    }
  }

  const std::size_t bytes = n * sizeof(T);
  const ArchPolicy& arch = policy_for(major);
  // A grid of more than one block leaves its partials to the combine kernel.
  auto route_with_combine = [&](Path path, unsigned grid, unsigned threads, std::size_t temp_bytes,
                                std::size_t depth) -> cudaError_t {
    bool dependent = false;
    if (grid > 1) {
      KernelFacts combine{};
      if (cudaError_t e = kernel_facts<K::combine, kCombineThreads>(device, combine); e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (combine)");
      }
      dependent = dependent_possible && combine.ptx_version >= 90;
    }
    out.route = make_route(path, grid, threads, temp_bytes, depth, dependent);
    return cudaSuccess;
  };
  bool bulk_runs = false;
  KernelFacts bulk{};
  if constexpr (sizeof(T) >= 4) {
    // Bulk copies need code compiled for sm_90 (an older build traps there) and their shared
    // memory: asked only where the size would take them.
    if (select_fast_path(bytes, sizeof(T), arch, true) == Path::Bulk &&
        kernel_facts<K::bulk, kBulk.threads, kBulk.shared_bytes()>(device, bulk) == cudaSuccess) {
      bulk_runs = bulk.ptx_version >= 90 && bulk.blocks_per_sm > 0;
    }
  }
  const Path path = select_fast_path(bytes, sizeof(T), arch, bulk_runs);
  if (path == Path::Bulk) {
    out.bulk = plan_bulk(n, sizeof(T), address, sizeof(A), kBulk.stage_bytes, sms, bulk.blocks_per_sm, opt.max_blocks);
    return route_with_combine(path, out.bulk.grid, kBulk.threads, out.bulk.temp_bytes,
                              bulk_depth(out.bulk, n, kBulk, primitives::kVecDepth<T>));
  }
  KernelFacts main{};
  cudaError_t status = cudaSuccess;
  FastPolicy policy = kOneBlock;
  unsigned cap = 1;  // the one-block path: one block whatever max_blocks says
  if (path == Path::OneBlock) {
    status = kernel_facts<K::one_block, kOneBlock.threads>(device, main);
  } else if (path == Path::Small) {
    policy = kSmall;
    cap = opt.max_blocks;
    status = kernel_facts<K::small, kSmall.threads>(device, main);
  } else {
    policy = kLarge;
    cap = opt.max_blocks;
    status = kernel_facts<K::large, kLarge.threads>(device, main);
  }
  if (status != cudaSuccess) return fail(status, "no kernel image for this GPU (load path)");
  out.fast = plan_fast(n, sizeof(T), address, sizeof(A), policy, sms, main.blocks_per_sm, cap);
  return route_with_combine(path, out.fast.grid, policy.threads, out.fast.temp_bytes,
                            fast_depth(out.fast, policy.threads, primitives::kVecDepth<T>));
}

// Enqueues the planned kernels: the main grid, then (for more than one block) the combine.
template <class T, class Op>
cudaError_t launch_planned(const Launch& plan, void* d_temp, const T* d_in, acc_t<T, Op>* d_out, std::size_t n, Op op,
                           cudaStream_t stream) {
  using A = acc_t<T, Op>;
  using K = Kernels<T, Op>;
  const Route& r = plan.route;
  cudaError_t status = cudaSuccess;
  if (r.path == Path::Reproducible) {
    if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, Sum>) {
      auto* rows = static_cast<unsigned long long*>(d_temp);
      ReproArgs<T, A> args{d_in, n, plan.repro.tiles, reinterpret_cast<std::uintptr_t>(d_in) % 16 == 0, rows, d_out};
      status = launch(repro_sum_kernel<T>, r.grid, kReproThreads, 0, stream, false, args);
      if (status == cudaSuccess && r.combine_kernel) {
        status = launch(repro_finish_kernel<A>, 1, kReproThreads, 0, stream, r.dependent_launch,
                        static_cast<const unsigned long long*>(rows), r.grid, d_out);
      }
    }
    return status;
  }
  A* partials = static_cast<A*>(d_temp);
  if (r.path == Path::Bulk) {
    if constexpr (sizeof(T) >= 4) {
      const BulkPlan& b = plan.bulk;
      BulkArgs<T, A> args{d_in, n, b.head, b.stages, b.stages_per_block, b.tail_begin, partials, d_out};
      status = launch(K::bulk, r.grid, kBulk.threads, kBulk.shared_bytes(), stream, false, args, op);
    }
  } else {
    const FastPlan& f = plan.fast;
    FastArgs<T, A> args{d_in, n, f.head, f.vectors, f.share, partials, d_out};
    const auto kernel = r.path == Path::OneBlock ? K::one_block : r.path == Path::Small ? K::small : K::large;
    status = launch(kernel, r.grid, r.threads, 0, stream, false, args, op);
  }
  if (status == cudaSuccess && r.combine_kernel) {
    status = launch(K::combine, 1, kCombineThreads, 0, stream, r.dependent_launch, static_cast<const A*>(partials),
                    r.grid, d_out, op);
  }
  return status;
}

// The body of reduce_async; `message`, when given, receives the text of an argument error.
template <class T, class Op>
cudaError_t reduce_async_impl(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                              std::size_t n, Op op, cudaStream_t stream, const Options& opt,
                              const char** message = nullptr) {
  using A = acc_t<T, Op>;
  static_assert(reducible<T, Op>, "fastreduce: not an input type and op the engine is built for");
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  Launch plan{};
  if (cudaError_t e = plan_launch<T, Op>(n, reinterpret_cast<std::uintptr_t>(d_in), opt, device, plan, message);
      e != cudaSuccess) {
    return e;
  }
  if (d_temp == nullptr) {
    temp_bytes = plan.route.temp_bytes;
    return cudaSuccess;
  }
  const ArgumentError error =
      validate_arguments(d_in, d_out, d_temp, n, alignof(T), alignof(A), temp_bytes, plan.route.temp_bytes);
  if (message != nullptr) *message = error.message;
  if (error.code != cudaSuccess) return error.code;
  return launch_planned<T, Op>(plan, d_temp, d_in, d_out, n, op, stream);
}

template <class T, class Op>
acc_t<T, Op> reduce_blocking(cudaStream_t stream, const T* d_in, std::size_t n, Op op, const Options& opt) {
  using A = acc_t<T, Op>;
  std::size_t temp_bytes = 0;
  const char* message = nullptr;
  auto fail = [&](cudaError_t status, const char* what) {
    throw Error(status, std::string("fastreduce::reduce: ") + what + ": " +
                            (message != nullptr ? message : cudaGetErrorString(status)));
  };
  if (cudaError_t e = reduce_async_impl<T, Op>(nullptr, temp_bytes, d_in, nullptr, n, op, stream, opt, &message);
      e != cudaSuccess) {
    fail(e, "size query");
  }
  CachedTemp cached{};
  check(acquire_cached_temp(stream, temp_bytes, cached), "fastreduce::reduce: temporary storage");
  A* d_out = static_cast<A*>(cached.result_slot);
  message = nullptr;
  if (cudaError_t e = reduce_async_impl<T, Op>(cached.temp, cached.temp_bytes, d_in, d_out, n, op, stream, opt, &message);
      e != cudaSuccess) {
    fail(e, "arguments");
  }
  A result{};
  check(cudaMemcpyAsync(&result, d_out, sizeof(A), cudaMemcpyDeviceToHost, stream),
        "fastreduce::reduce: copying the result");
  check(cudaStreamSynchronize(stream), "fastreduce::reduce: kernel");
  return result;
}

template <class T, class Op>
cudaError_t describe_launch(const T* d_in, std::size_t n, const Options& opt, Route& route) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  Launch plan{};
  const cudaError_t status = plan_launch<T, Op>(n, reinterpret_cast<std::uintptr_t>(d_in), opt, device, plan, nullptr);
  route = plan.route;
  return status;
}

}  // namespace fastreduce::engine

namespace fastreduce::detail {

template <class T, class Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out, std::size_t n,
                         Op op, cudaStream_t stream, const Options& opt) {
  return engine::reduce_async_impl<T, Op>(d_temp, temp_bytes, d_in, d_out, n, op, stream, opt);
}

template <class T, class Op>
acc_t<T, Op> reduce(cudaStream_t stream, const T* d_in, std::size_t n, Op op, const Options& opt) {
  return engine::reduce_blocking<T, Op>(stream, d_in, n, op, opt);
}

}  // namespace fastreduce::detail

// Explicit instantiation of the library's entry points for input T (a storage type) and op Op.
#define FASTREDUCE_INSTANTIATE(T, Op)                                                                                 \
  template cudaError_t fastreduce::detail::reduce_async<T, Op>(void*, std::size_t&, const T*,                        \
                                                               fastreduce::acc_t<T, Op>*, std::size_t, Op,          \
                                                               cudaStream_t, const fastreduce::Options&);            \
  template fastreduce::acc_t<T, Op> fastreduce::detail::reduce<T, Op>(cudaStream_t, const T*, std::size_t, Op,       \
                                                                      const fastreduce::Options&);                   \
  template cudaError_t fastreduce::engine::describe_launch<T, Op>(const T*, std::size_t, const fastreduce::Options&, \
                                                                  fastreduce::engine::Route&);

// The 1-D, axis and segmented entry points (FASTREDUCE_INSTANTIATE_AXIS: engine/axis_dispatch.cuh).
#define FASTREDUCE_INSTANTIATE_ALL(T, Op) \
  FASTREDUCE_INSTANTIATE(T, Op)           \
  FASTREDUCE_INSTANTIATE_AXIS(T, Op)

// All seven ops for an integer input type.
#define FASTREDUCE_INSTANTIATE_INTEGER(T) \
  FASTREDUCE_INSTANTIATE_ALL(T, Sum)      \
  FASTREDUCE_INSTANTIATE_ALL(T, Prod)     \
  FASTREDUCE_INSTANTIATE_ALL(T, Min)      \
  FASTREDUCE_INSTANTIATE_ALL(T, Max)      \
  FASTREDUCE_INSTANTIATE_ALL(T, BitAnd)   \
  FASTREDUCE_INSTANTIATE_ALL(T, BitOr)    \
  FASTREDUCE_INSTANTIATE_ALL(T, BitXor)

// Sum, Prod, Min and Max for a floating-point input type, and the reproducible axis sum's
// unrounded pieces (engine/repro_pieces.hpp).
#define FASTREDUCE_INSTANTIATE_FLOATING(T)                                                                          \
  FASTREDUCE_INSTANTIATE_ALL(T, Sum)                                                                                \
  FASTREDUCE_INSTANTIATE_ALL(T, Prod)                                                                               \
  FASTREDUCE_INSTANTIATE_ALL(T, Min)                                                                                \
  FASTREDUCE_INSTANTIATE_ALL(T, Max)                                                                                \
  template cudaError_t fastreduce::engine::plan_repro_pieces<T>(const fastreduce::engine::AxisLayout&,              \
                                                                const fastreduce::Options&, int,                    \
                                                                fastreduce::engine::PiecesPlan&);                   \
  template cudaError_t fastreduce::engine::launch_repro_pieces<T>(const fastreduce::engine::PiecesPlan&, const T*, \
                                                                  unsigned long long*, cudaStream_t);
