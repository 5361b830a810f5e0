// The 1-D reduction of any reduction (detail/reduction.cuh): argument checks, the choice of path
// (route) and its launches. The library instantiates it for the built-in types and ops
// (src/engine/engine_<type>.cu); the header-only entry points (fastreduce/reduce.cuh,
// fastreduce/stats.cuh) for the others.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "fastreduce/detail/bulk_path.cuh"
#include "fastreduce/detail/describe.hpp"
#include "fastreduce/detail/device_pointer.hpp"
#include "fastreduce/detail/fast_path.cuh"
#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/launch.cuh"
#include "fastreduce/detail/ordered.cuh"
#include "fastreduce/detail/plan.hpp"
#include "fastreduce/detail/policy.hpp"
#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/detail/repro_path.cuh"
#include "fastreduce/detail/temp_cache.hpp"
#include "fastreduce/fastreduce.cuh"

namespace fastreduce::engine {

// A built-in reduction of T with Op (fastreduce.cuh's acc_t), and the same with results in T
// itself (half, bfloat16).
template <class T, class Op>
using builtin_t = Builtin<T, Op, acc_t<T, Op>>;
template <class T, class Op>
using narrow_builtin_t = Builtin<T, Op, acc_t<T, Op>, T>;
// 4-byte integers' sums and products accumulated and written in 8 bytes.
template <class T, class Op>
using wide_builtin_t = Builtin<T, Op, wide_t<T>, wide_t<T>>;

// A size query's answer for T and Op: the largest storage over every result type the call could
// name (size(R, bytes) answers for reduction R), so that it does not depend on d_out's type and
// a null d_out of any type may be passed to it.
template <class T, class Op, class Size>
cudaError_t size_for_every_result(std::size_t& temp_bytes, const Size& size) {
  std::size_t bytes = 0;
  auto take = [&]<class R>() -> cudaError_t {
    std::size_t more = 0;
    if (cudaError_t e = size.template operator()<R>(more); e != cudaSuccess) return e;
    bytes = std::max(bytes, more);
    return cudaSuccess;
  };
  if (cudaError_t e = take.template operator()<builtin_t<T, Op>>(); e != cudaSuccess) return e;
  if constexpr (narrow_result<T, Op>) {
    if (cudaError_t e = take.template operator()<narrow_builtin_t<T, Op>>(); e != cudaSuccess) return e;
  }
  if constexpr (wide_result<T, Op, wide_t<T>>) {
    if (cudaError_t e = take.template operator()<wide_builtin_t<T, Op>>(); e != cudaSuccess) return e;
  }
  temp_bytes = bytes;
  return cudaSuccess;
}

// The reproducible sum's kernels serve the built-in floating-point sums, whatever their result type.
template <class R>
inline constexpr bool is_reproducible_sum_v = false;
template <class T, class O>
inline constexpr bool is_reproducible_sum_v<Builtin<T, Sum, acc_t<T, Sum>, O>> = std::is_floating_point_v<acc_t<T, Sum>>;

// Every reduction those kernels serve: the floating-point sums, the sums of magnitudes
// (kMagnitudeSum, which load |x|) and the means (kMeanSum, which divide the total by the count).
template <class R>
inline constexpr bool is_exact_sum_v = is_reproducible_sum_v<R> || kMagnitudeSum<R> || kMeanSum<R>;

// What those kernels make of R's exact sum.
template <class R>
inline constexpr primitives::ExactOp kExactOpOf = kMagnitudeSum<R> ? primitives::ExactOp::Magnitudes
                                                  : kMeanSum<R>    ? primitives::ExactOp::Mean
                                                                   : primitives::ExactOp::Sum;

// The type those kernels write R's results in: the float-valued sum's accumulator, or the input's
// own narrow type.
template <class R>
inline constexpr primitives::ResultType kSumResultType =
    std::is_same_v<typename R::Out, acc_t<typename R::Input, Sum>> ? primitives::ResultType::Acc
                                                                   : primitives::kNarrowResult<typename R::Input>;

// A reduction whose thread state is large takes kHeavySmall's and kHeavyLarge's shapes (or one
// that says so: R::kHeavyState), with a block's share counted in elements (per_element_share).
template <class R>
constexpr bool heavy_state() {
  if constexpr (requires { R::kHeavyState; }) return R::kHeavyState;
  else return sizeof(typename R::State) > kHeavyStateBytes;
}
template <class R>
inline constexpr bool kHeavy = heavy_state<R>();

// The share of sm_90's one-block bytes that R's one-block kernel takes (R::kOneBlockDivisor: 1/divisor
// of it; 1 unless R says otherwise). Other architectures keep their limit: only the H100 was measured.
template <class R>
constexpr std::size_t one_block_divisor(int compute_major) {
  if constexpr (requires { R::kOneBlockDivisor; }) return compute_major >= 9 ? R::kOneBlockDivisor : 1;
  else return 1;
}

// The kernels of each path for reduction R with V elements a vector.
template <class R, unsigned V>
struct Kernels {
  using T = typename R::Input;
  static constexpr FastPolicy small_policy = kHeavy<R> ? per_element_share(kHeavySmall, sizeof(T)) : kSmall;
  static constexpr FastPolicy large_policy = kHeavy<R> ? per_element_share(kHeavyLarge, sizeof(T)) : kLarge;
  static constexpr auto one_block = fast_reduce_kernel<kOneBlock.threads, kOneBlock.unroll, kLoadHint, V, R>;
  static constexpr auto small = fast_reduce_kernel<small_policy.threads, small_policy.unroll, kLoadHint, V, R>;
  static constexpr auto large = fast_reduce_kernel<large_policy.threads, large_policy.unroll, kLoadHint, V, R>;
  // The same, finishing in the grid's last block (Options::finish_counter).
  static constexpr auto small_self = fast_reduce_kernel<small_policy.threads, small_policy.unroll, kLoadHint, V, R, true>;
  static constexpr auto large_self = fast_reduce_kernel<large_policy.threads, large_policy.unroll, kLoadHint, V, R, true>;
  // The combine kernel of each multi-block path: as many threads as its main kernel's blocks,
  // so that a grid's last block, combining the partials itself, runs the same instructions.
  static constexpr auto combine_small = primitives::combine_partials_kernel<small_policy.threads, R>;
  static constexpr auto combine_large = primitives::combine_partials_kernel<large_policy.threads, R>;
  static constexpr auto combine_bulk = primitives::combine_partials_kernel<kBulk.threads, R>;
  // Bulk copies stream one input of 4- or 8-byte elements.
  static constexpr bool bulk_ok = !two_inputs_v<R> && sizeof(T) >= 4 && V * sizeof(T) == 16;
  static constexpr auto bulk() {
    if constexpr (bulk_ok) return bulk_reduce_kernel<kBulk.threads, kBulk.stages, kBulk.stage_bytes, R>;
    else return nullptr;
  }
  // Ops that are not commutative: the ordered tiles (detail/ordered.cuh).
  static constexpr auto ordered() {
    if constexpr (!R::commutative) return ordered_tiles_kernel<V, R>;
    else return nullptr;
  }
  static constexpr auto ordered_combine() {
    if constexpr (!R::commutative) return ordered_partials_kernel<R>;
    else return nullptr;
  }
};

// A route and everything its launches need.
struct Launch {
  Route route;
  FastPlan fast{};
  BulkPlan bulk{};
  ReproPlan repro{};
  bool exact = false;  // the reproducible sum's kernels with Mode::Exact's lanes
  OrderedPlan ordered{};
  bool vectors = true;  // the kernels with a vector of V > 1 elements (else single elements)
  unsigned* counter = nullptr;  // Options::finish_counter where the route finishes in its last block
};

// Every input starts on a 16-byte boundary (RowsLanes and Mode::Exact's term lanes read them from
// there).
template <class R>
bool inputs_aligned16(const inputs_t<R>& in) {
  bool aligned = reinterpret_cast<std::uintptr_t>(in.x) % 16 == 0;
  if constexpr (two_inputs_v<R>) aligned = aligned && reinterpret_cast<std::uintptr_t>(in.y) % 16 == 0;
  return aligned;
}

// Whether the inputs can be read by vectors: one input always (its head is peeled); two when
// their elements have the same size and the same offset from a 16-byte boundary. Ordered paths
// need the one input 16-byte aligned.
template <class R>
bool vectors_fit(const inputs_t<R>& in) {
  if constexpr (kVecOf<R> == 1) {
    return false;
  } else if constexpr (two_inputs_v<R>) {
    const auto x = reinterpret_cast<std::uintptr_t>(in.x), y = reinterpret_cast<std::uintptr_t>(in.y);
    return (x > y ? x - y : y - x) % 16 == 0;
  } else if constexpr (!R::commutative) {
    return reinterpret_cast<std::uintptr_t>(in.x) % 16 == 0;
  } else {
    return true;
  }
}

// Reductions whose inputs are not always read by vectors: two inputs (unless equally aligned)
// and the ordered path (unless 16-byte aligned). They have kernels of single elements too.
template <class R>
inline constexpr bool kScalarVariant = kVecOf<R> > 1 && (two_inputs_v<R> || !R::commutative);

// Calls f.template operator()<V>() with the vector width the launch uses.
template <class R, class F>
decltype(auto) with_vector_width(bool vectors, F&& f) {
  if constexpr (kScalarVariant<R>) {
    if (!vectors) return f.template operator()<1u>();
  }
  return f.template operator()<kVecOf<R>>();
}

// Calls f.template operator()<Exact>() with Mode::Exact's lanes (true) or reproducible mode's.
template <class F>
decltype(auto) with_exact_lanes(bool exact, F&& f) {
  if (exact) return f.template operator()<true>();
  return f.template operator()<false>();
}

inline cudaError_t planning_error(const char** message, cudaError_t e, const char* text) {
  if (message != nullptr) *message = text;
  return e;
}

// What Mode::Reproducible and Mode::Exact mean for R: the reproducible sum's kernels (`repro_sum`
// set; with Mode::Exact's lanes for Mode::Exact), the fast ones as they are (a result exact in any
// order), or cudaErrorNotSupported. The exact L2 norm, dot product (kTermSum), variance and
// standard deviation (kVarianceSum) take every shape, and run Mode::Exact's lanes in both modes.
template <class R>
cudaError_t reproducible_form(const Options& opt, bool& repro_sum, const char** message) {
  repro_sum = false;
  if (opt.mode == Mode::Fast) return cudaSuccess;
  if (opt.mode != Mode::Reproducible && opt.mode != Mode::Exact) {
    return planning_error(message, cudaErrorInvalidValue, "Options::mode is not a Mode");
  }
  if constexpr (is_exact_sum_v<R> || kTermSum<R> || kVarianceSum<R>) {
    repro_sum = true;
  } else if constexpr (!R::order_independent) {
    return planning_error(message, cudaErrorNotSupported,
                          opt.mode == Mode::Exact
                              ? "Mode::Exact: this op's result depends on the order of its floating-point operations "
                                "(exact forms: Sum, the mean and the L1 norm of floating-point types, the L2 norm, dot "
                                "product, variance and standard deviation of float, half and bfloat16, and ops whose "
                                "result is exact)"
                              : "Mode::Reproducible: this op's result depends on the order of its floating-point "
                                "operations (reproducible forms: Sum, the mean and the L1 norm of floating-point "
                                "types, the L2 norm, dot product, variance and standard deviation of float, half and "
                                "bfloat16, and ops whose result is exact)");
  }
  return cudaSuccess;
}

// Chooses the path for n elements at `in` on `device` and plans it. Errors: a kernel that cannot
// run on this device (the library was not compiled for it), and the mode's limits. `vectors`
// fixes the vector width (the size query plans both).
template <class R>
cudaError_t plan_launch(std::size_t n, const inputs_t<R>& in, const Options& opt, int device, Launch& out,
                        const char** message, int vectors = -1) {
  using T = typename R::Input;
  using P = typename R::Partial;
  constexpr std::size_t kRead = sizeof(T) + (two_inputs_v<R> ? sizeof(typename R::Input2) : 0);
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(in.x);
  const int sms = multiprocessors(device);
  const int major = compute_major(device);
  const bool dependent_possible = major >= 9;
  auto fail = [&](cudaError_t e, const char* text) { return planning_error(message, e, text); };
  out.vectors = vectors >= 0 ? vectors == 1 && kVecOf<R> > 1 : vectors_fit<R>(in);

  bool repro_sum = false;
  if (cudaError_t e = reproducible_form<R>(opt, repro_sum, message); e != cudaSuccess) return e;
  if (repro_sum) {
    if (n >= kReproMaxElements) {
      return fail(cudaErrorNotSupported, opt.mode == Mode::Exact ? "Mode::Exact sums at most 2^40 elements"
                                                                 : "Mode::Reproducible sums at most 2^40 elements");
    }
    // The reproducible path's route: a grid of `blocks_per_sm` blocks an SM at most, each storing
    // `row_words` words, then (`finish`) the one-block combine.
    auto route_reproducible = [&](int blocks_per_sm, unsigned row_words, const KernelFacts& finish) {
      out.repro = plan_reproducible(n, sms, blocks_per_sm, opt.max_blocks, row_words);
      out.route = make_route(Path::Reproducible, out.repro.grid, kReproThreads, out.repro.temp_bytes, 0,
                             dependent_possible && finish.ptx_version >= 90);
    };
    if constexpr (is_exact_sum_v<R>) {
      using A = acc_t<T, Sum>;
      out.exact = opt.mode == Mode::Exact;
      KernelFacts main{}, finish{};
      const cudaError_t facts = with_exact_lanes(
          out.exact, [&]<bool Exact>() { return kernel_facts<repro_sum_kernel<T, Exact, kExactOpOf<R>>, kReproThreads>(device, main); });
      if (facts != cudaSuccess) return fail(facts, "no kernel image for this GPU (reproducible sum)");
      constexpr bool kDivide = primitives::kDividesBy<kExactOpOf<R>>;
      if (cudaError_t e = kernel_facts<repro_finish_kernel<A, kDivide>, kReproThreads>(device, finish); e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (reproducible combine)");
      }
      route_reproducible(main.blocks_per_sm, primitives::kExactRowWords<A>, finish);
      return cudaSuccess;
    } else if constexpr (kTermSum<R>) {
      out.exact = true;  // Mode::Reproducible too: the exact result is reproducible
      KernelFacts main{}, finish{};
      using O = typename R::Out;
      if (cudaError_t e = kernel_facts<exact_terms_kernel<T, kLaneTermOf<R>, O>, kReproThreads>(device, main); e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (exact sum of squares or products)");
      }
      if (cudaError_t e = kernel_facts<exact_terms_finish_kernel<kLaneTermOf<R>, O>, kReproThreads>(device, finish);
          e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (exact sum of squares or products: combine)");
      }
      route_reproducible(main.blocks_per_sm, primitives::kExactRowWords<double>, finish);
      return cudaSuccess;
    } else if constexpr (kVarianceSum<R>) {
      // One pass (the exact Sum's rows and the squares', each element loaded once), then one
      // block's finish: two launches whatever the size.
      out.exact = true;  // Mode::Reproducible too: the result is a function of the data alone
      KernelFacts moments{}, finish{};
      if (cudaError_t e = kernel_facts<exact_moments_kernel<T>, kReproThreads>(device, moments); e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (exact variance: moments)");
      }
      if (cudaError_t e = kernel_facts<exact_variance_finish_kernel<typename R::Out>, kReproThreads>(device, finish);
          e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (exact variance: combine)");
      }
      route_reproducible(moments.blocks_per_sm, primitives::kExactRowWords<float> + primitives::kExactRowWords<double>,
                         finish);
      out.route.combine_kernel = true;  // the finish runs after the pass at every size
      return cudaSuccess;
    }
  }

  return with_vector_width<R>(out.vectors, [&]<unsigned V>() -> cudaError_t {
    using K = Kernels<R, V>;
    // A grid of more than one block leaves its partials to the combine kernel of `combine_threads`
    // threads, or (`self_finish`: Options::finish_counter given) to its own last block.
    auto route_with_combine = [&](Path path, unsigned grid, unsigned threads, std::size_t temp_bytes, std::size_t depth,
                                  auto combine_kernel, auto combine_threads, bool self_finish) -> cudaError_t {
      bool dependent = false;
      if (grid > 1 && !self_finish) {
        KernelFacts combine{};
        if (cudaError_t e = kernel_facts<decltype(combine_kernel)::value, decltype(combine_threads)::value>(device, combine);
            e != cudaSuccess) {
          return fail(e, "no kernel image for this GPU (combine)");
        }
        dependent = dependent_possible && combine.ptx_version >= 90;
      }
      out.route = make_route(path, grid, threads, temp_bytes, depth, dependent, self_finish);
      out.counter = out.route.last_block_combines ? opt.finish_counter : nullptr;
      return cudaSuccess;
    };
    auto constant = []<auto Value>() { return std::integral_constant<decltype(Value), Value>{}; };
    if constexpr (!R::commutative) {
      static_assert(!two_inputs_v<R>, "a reduction of two inputs needs a commutative op");
      KernelFacts main{};
      if (cudaError_t e = kernel_facts<K::ordered(), kOrderedThreads>(device, main); e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (ordered)");
      }
      out.ordered = plan_ordered(n, V, sizeof(P), sms, main.blocks_per_sm, opt.max_blocks);
      return route_with_combine(Path::Ordered, out.ordered.grid, kOrderedThreads, out.ordered.temp_bytes, 0,
                                constant.template operator()<K::ordered_combine()>(),
                                constant.template operator()<kOrderedThreads>(), false);
    } else {
      const std::size_t bytes = n * kRead;
      ArchPolicy arch = policy_for(major);
      arch.one_block_max_bytes /= one_block_divisor<R>(major);
      // Options::finish_counter: the last block combines where one launch saves time (ArchPolicy;
      // the load paths, below the bulk copies' sizes).
      const bool wants_self_finish = opt.finish_counter != nullptr && bytes <= arch.self_finish_max_bytes;
      bool bulk_runs = false;
      KernelFacts bulk{};
      if constexpr (K::bulk_ok) {
        // Bulk copies need code compiled for sm_90 (an older build traps there) and their shared
        // memory: asked only where the size would take them.
        if (select_fast_path(bytes, sizeof(T), arch, true) == Path::Bulk &&
            kernel_facts<K::bulk(), kBulk.threads, kBulk.shared_bytes()>(device, bulk) == cudaSuccess) {
          bulk_runs = bulk.ptx_version >= 90 && bulk.blocks_per_sm > 0;
        }
      }
      const Path path = select_fast_path(bytes, K::bulk_ok ? sizeof(T) : 1, arch, bulk_runs);
      if (path == Path::Bulk) {
        out.bulk = plan_bulk(n, sizeof(T), address, sizeof(P), kBulk.stage_bytes, sms, bulk.blocks_per_sm, opt.max_blocks);
        return route_with_combine(path, out.bulk.grid, kBulk.threads, out.bulk.temp_bytes,
                                  bulk_depth(out.bulk, n, kBulk, primitives::kVecDepth<T>),
                                  constant.template operator()<K::combine_bulk>(),
                                  constant.template operator()<kBulk.threads>(), false);
      }
      KernelFacts main{};
      cudaError_t status = cudaSuccess;
      FastPolicy policy = kOneBlock;
      unsigned cap = 1;  // the one-block path: one block whatever max_blocks says
      if (path == Path::OneBlock) {
        status = kernel_facts<K::one_block, kOneBlock.threads>(device, main);
      } else if (path == Path::Small) {
        policy = K::small_policy;
        cap = opt.max_blocks;
        status = kernel_facts<K::small, K::small_policy.threads>(device, main);
      } else {
        policy = K::large_policy;
        cap = opt.max_blocks;
        status = kernel_facts<K::large, K::large_policy.threads>(device, main);
      }
      if (status != cudaSuccess) return fail(status, "no kernel image for this GPU (load path)");
      // The grid follows the combine kernel's route (its occupancy), so that both routes have the
      // same grid, hence the same bits; the finishing kernel is only asked whether it can run.
      out.fast = plan_fast(n, sizeof(T), address, sizeof(P), policy, sms, main.blocks_per_sm, cap, V, kRead);
      const bool self_finish = wants_self_finish && path != Path::OneBlock && out.fast.grid > 1;
      if (self_finish) {
        KernelFacts finishing{};
        status = path == Path::Small ? kernel_facts<K::small_self, K::small_policy.threads>(device, finishing)
                                     : kernel_facts<K::large_self, K::large_policy.threads>(device, finishing);
        if (status != cudaSuccess) return fail(status, "no kernel image for this GPU (load path, last-block finish)");
      }
      const std::size_t depth = fast_depth(out.fast, policy.threads, primitives::kVecDepth<T>);
      if (path == Path::Large) {
        return route_with_combine(path, out.fast.grid, policy.threads, out.fast.temp_bytes, depth,
                                  constant.template operator()<K::combine_large>(),
                                  constant.template operator()<K::large_policy.threads>(), self_finish);
      }
      return route_with_combine(path, out.fast.grid, policy.threads, out.fast.temp_bytes, depth,  // one block: no combine
                                constant.template operator()<K::combine_small>(),
                                constant.template operator()<K::small_policy.threads>(), self_finish);
    }
  });
}

// Enqueues the planned kernels: the main grid, then (for more than one block) the combine.
template <class R>
cudaError_t launch_planned(const Launch& plan, void* d_temp, const inputs_t<R>& in, typename R::Out* d_out,
                           std::size_t n, const R& red, cudaStream_t stream) {
  using P = typename R::Partial;
  const Route& r = plan.route;
  if (r.path == Path::Reproducible) {
    if constexpr (is_exact_sum_v<R>) {
      using T = typename R::Input;
      using A = acc_t<T, Sum>;
      auto* rows = static_cast<unsigned long long*>(d_temp);
      ReproArgs<T, A> args{in.x, n, plan.repro.tiles, reinterpret_cast<std::uintptr_t>(in.x) % 16 == 0, rows,
                           reinterpret_cast<A*>(d_out), kSumResultType<R>};
      cudaError_t status = with_exact_lanes(plan.exact, [&]<bool Exact>() {
        return launch(repro_sum_kernel<T, Exact, kExactOpOf<R>>, r.grid, kReproThreads, 0, stream, false, args);
      });
      if (status == cudaSuccess && r.combine_kernel) {
        status = launch(repro_finish_kernel<A, primitives::kDividesBy<kExactOpOf<R>>>, 1, kReproThreads, 0, stream,
                        r.dependent_launch, static_cast<const unsigned long long*>(rows), r.grid,
                        reinterpret_cast<A*>(d_out), kSumResultType<R>, std::uint64_t(n));
      }
      return status;
    } else if constexpr (kTermSum<R>) {
      using T = typename R::Input;
      constexpr LaneTerm kTerm = kLaneTermOf<R>;
      using O = typename R::Out;  // float, or (Narrowed) the L2 norm's in a half input's own type
      auto* rows = static_cast<unsigned long long*>(d_temp);
      const T* y = nullptr;
      if constexpr (kTerm == LaneTerm::Product) y = in.y;
      const TermArgs<T, O> args{in.x, y, n, plan.repro.tiles, inputs_aligned16<R>(in), rows, d_out};
      cudaError_t status = launch(exact_terms_kernel<T, kTerm, O>, r.grid, kReproThreads, 0, stream, false, args);
      if (status == cudaSuccess && r.combine_kernel) {
        status = launch(exact_terms_finish_kernel<kTerm, O>, 1, kReproThreads, 0, stream, r.dependent_launch,
                        static_cast<const unsigned long long*>(rows), r.grid, d_out);
      }
      return status;
    } else if constexpr (kVarianceSum<R>) {
      using T = typename R::Input;
      auto* sum_rows = static_cast<unsigned long long*>(d_temp);
      auto* square_rows = sum_rows + std::size_t(r.grid) * primitives::kExactRowWords<float>;
      const MomentArgs<T> args{in.x, n, plan.repro.tiles, reinterpret_cast<std::uintptr_t>(in.x) % 16 == 0, sum_rows,
                               square_rows};
      cudaError_t status = launch(exact_moments_kernel<T>, r.grid, kReproThreads, 0, stream, false, args);
      if (status == cudaSuccess) {  // the result: float, or (Narrowed) half or bfloat16, rounded once from double
        status = launch(exact_variance_finish_kernel<typename R::Out>, 1, kReproThreads, 0, stream, r.dependent_launch,
                        static_cast<const unsigned long long*>(sum_rows), static_cast<const unsigned long long*>(square_rows),
                        r.grid, std::uint64_t(n), std::int64_t(red.finish.correction), red.finish.root, d_out);
      }
      return status;
    }
    return cudaErrorNotSupported;
  }
  return with_vector_width<R>(plan.vectors, [&]<unsigned V>() -> cudaError_t {
    using K = Kernels<R, V>;
    P* partials = static_cast<P*>(d_temp);
    cudaError_t status = cudaSuccess;
    if constexpr (!R::commutative) {
      const OrderedArgs<R> args{in.x, n, plan.ordered.per_block, partials, d_out};
      status = launch(K::ordered(), r.grid, kOrderedThreads, 0, stream, false, args, red);
      if (status == cudaSuccess && r.combine_kernel) {
        status = launch(K::ordered_combine(), 1, kOrderedThreads, 0, stream, r.dependent_launch,
                        static_cast<const P*>(partials), r.grid, d_out, red);
      }
      return status;
    } else {
      if (r.path == Path::Bulk) {
        if constexpr (K::bulk_ok) {
          const BulkPlan& b = plan.bulk;
          BulkArgs<R> args{in.x, n, b.head, b.stages, b.stages_per_block, b.tail_begin, partials, d_out};
          status = allow_shared_memory(K::bulk(), kBulk.shared_bytes());
          if (status == cudaSuccess) {
            status = launch(K::bulk(), r.grid, kBulk.threads, kBulk.shared_bytes(), stream, false, args, red);
          }
        }
      } else {
        const FastPlan& f = plan.fast;
        FastArgs<R> args{in, n, f.head, f.vectors, f.share, partials, d_out, plan.counter};
        const auto kernel = r.path == Path::OneBlock ? K::one_block
                            : r.last_block_combines ? (r.path == Path::Small ? K::small_self : K::large_self)
                            : r.path == Path::Small ? K::small
                                                    : K::large;
        status = launch(kernel, r.grid, r.threads, 0, stream, false, args, red);
      }
      if (status == cudaSuccess && r.combine_kernel) {
        const auto combine = r.path == Path::Bulk ? K::combine_bulk : r.path == Path::Large ? K::combine_large : K::combine_small;
        status = launch(combine, 1, r.threads, 0, stream, r.dependent_launch, static_cast<const P*>(partials), r.grid,
                        d_out, red);
      }
      return status;
    }
  });
}

// The temporary storage a reduction of n elements needs, whatever the inputs' alignment (CUB's
// contract: the size query's pointers need not be the ones reduced).
template <class R>
cudaError_t temp_bytes_for(std::size_t n, const inputs_t<R>& in, const Options& opt, int device, std::size_t& bytes,
                           const char** message) {
  Launch plan{};
  if (cudaError_t e = plan_launch<R>(n, in, opt, device, plan, message); e != cudaSuccess) return e;
  bytes = plan.route.temp_bytes;
  if constexpr (kScalarVariant<R>) {
    Launch other{};
    if (cudaError_t e = plan_launch<R>(n, in, opt, device, other, message, plan.vectors ? 0 : 1); e != cudaSuccess) {
      return e;
    }
    bytes = std::max(bytes, other.route.temp_bytes);
  }
  return cudaSuccess;
}

// The checks every entry point makes before it launches anything, in this order.
template <class R>
ArgumentError validate_reduction(const inputs_t<R>& in, const void* d_out, const void* d_temp, std::size_t n,
                                 std::size_t temp_bytes, std::size_t temp_needed) {
  const ArgumentError error = validate_arguments(in.x, d_out, d_temp, n, alignof(typename R::Input),
                                                 alignof(typename R::Out), temp_bytes, temp_needed);
  if constexpr (two_inputs_v<R>) {
    if (error.code == cudaSuccess && n > 0) {
      if (in.y == nullptr) return {cudaErrorInvalidValue, "the second input is null but n > 0"};
      if (reinterpret_cast<std::uintptr_t>(in.y) % alignof(typename R::Input2) != 0) {
        return {cudaErrorMisalignedAddress, "the second input is not aligned to its element type"};
      }
      if (primitives::check_device_pointer(in.y) != cudaSuccess) {
        return {cudaErrorInvalidDevicePointer, "the second input is host memory the device cannot read"};
      }
    }
  }
  return error;
}

// Options::finish_counter, where given: a 4-byte aligned word the device can use.
inline ArgumentError validate_counter(const Options& opt) {
  if (opt.finish_counter == nullptr) return {};
  if (reinterpret_cast<std::uintptr_t>(opt.finish_counter) % alignof(unsigned) != 0) {
    return {cudaErrorMisalignedAddress, "Options::finish_counter is not 4-byte aligned"};
  }
  if (primitives::check_device_pointer(opt.finish_counter) != cudaSuccess) {
    return {cudaErrorInvalidDevicePointer, "Options::finish_counter is host memory the device cannot use"};
  }
  return {};
}

// The body of every 1-D reduce_async; `message`, when given, receives the text of an error.
template <class R>
cudaError_t reduce_async_impl(void* d_temp, std::size_t& temp_bytes, const inputs_t<R>& in, typename R::Out* d_out,
                              std::size_t n, const R& red, cudaStream_t stream, const Options& opt,
                              const char** message = nullptr) {
  if (!valid_reduction(red, message)) return cudaErrorInvalidValue;
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (d_temp == nullptr) return temp_bytes_for<R>(n, in, opt, device, temp_bytes, message);
  Launch plan{};
  if (cudaError_t e = plan_launch<R>(n, in, opt, device, plan, message); e != cudaSuccess) return e;
  std::size_t needed = plan.route.temp_bytes;
  if constexpr (kScalarVariant<R>) {
    if (cudaError_t e = temp_bytes_for<R>(n, in, opt, device, needed, message); e != cudaSuccess) return e;
  }
  ArgumentError error = validate_reduction<R>(in, d_out, d_temp, n, temp_bytes, needed);
  if (error.code == cudaSuccess) error = validate_counter(opt);
  if (message != nullptr) *message = error.message;
  if (error.code != cudaSuccess) return error.code;
  const cudaError_t launched = launch_planned<R>(plan, d_temp, in, d_out, n, red, stream);
  if (launched != cudaSuccess && message != nullptr) *message = "a kernel launch failed";
  return launched;
}

// The blocking form of an _async entry point: enqueue(temp, temp_bytes, slot, options, message)
// with the cached temporary storage of `stream` (detail/temp_cache.hpp), a device slot of
// result_bytes for the result, which is copied to `result` (result_bytes 0: the call writes the
// caller's device memory), and `opt` with the storage's finish counter (unless opt names one);
// then a wait for the stream. fastreduce::Error names `what` and the argument or call that failed.
template <class Enqueue>
void run_blocking_into(cudaStream_t stream, const char* what, const Options& opt, void* result,
                       std::size_t result_bytes, const Enqueue& enqueue) {
  std::size_t temp_bytes = 0;
  const char* message = nullptr;
  auto fail = [&](cudaError_t status, const char* step) {
    throw Error(status, std::string(what) + ": " + step + ": " + (message != nullptr ? message : cudaGetErrorString(status)));
  };
  if (cudaError_t e = enqueue(static_cast<void*>(nullptr), temp_bytes, static_cast<void*>(nullptr), opt, &message);
      e != cudaSuccess) {
    fail(e, "size query");
  }
  CachedTemp cached{};
  check(acquire_cached_temp(stream, temp_bytes, result_bytes, cached), (std::string(what) + ": temporary storage").c_str());
  message = nullptr;
  Options with_counter = opt;
  if (with_counter.finish_counter == nullptr) with_counter.finish_counter = cached.counter;
  if (cudaError_t e = enqueue(cached.temp, cached.temp_bytes, cached.result_slot, with_counter, &message);
      e != cudaSuccess) {
    fail(e, "call");
  }
  if (result_bytes > 0) {
    check(cudaMemcpyAsync(result, cached.result_slot, result_bytes, cudaMemcpyDeviceToHost, stream),
          (std::string(what) + ": copying the result").c_str());
  }
  check(cudaStreamSynchronize(stream), (std::string(what) + ": kernel").c_str());
}

// A result of type O: enqueue(temp, temp_bytes, O* d_out, options, message).
template <class O, class Enqueue>
O run_blocking(cudaStream_t stream, const char* what, const Options& opt, const Enqueue& enqueue) {
  O result{};
  run_blocking_into(stream, what, opt, &result, sizeof(O),
                    [&](void* temp, std::size_t& bytes, void* slot, const Options& o, const char** message) {
                      return enqueue(temp, bytes, static_cast<O*>(slot), o, message);
                    });
  return result;
}

// Results in the caller's device memory: enqueue(temp, temp_bytes, options, message).
template <class Enqueue>
void run_blocking_void(cudaStream_t stream, const char* what, const Options& opt, const Enqueue& enqueue) {
  run_blocking_into(stream, what, opt, nullptr, 0,
                    [&](void* temp, std::size_t& bytes, void*, const Options& o, const char** message) {
                      return enqueue(temp, bytes, o, message);
                    });
}

// What reduce_async would launch for these arguments on the current device (tests and tools).
template <class R>
cudaError_t describe_reduction(const inputs_t<R>& in, std::size_t n, const Options& opt, Route& route) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  Launch plan{};
  const cudaError_t status = plan_launch<R>(n, in, opt, device, plan, nullptr);
  route = plan.route;
  return status;
}

template <class T, class Op>
cudaError_t describe_launch(const T* d_in, std::size_t n, const Options& opt, Route& route) {
  return describe_reduction<builtin_t<T, Op>>({d_in}, n, opt, route);
}

}  // namespace fastreduce::engine

namespace fastreduce::detail {

// A size query of any of the 1-D entry points below (every result type of T and Op).
template <class T, class Op>
cudaError_t reduce_size(std::size_t& temp_bytes, const T* d_in, std::size_t n, Op op, cudaStream_t stream,
                        const Options& opt) {
  return engine::size_for_every_result<T, Op>(temp_bytes, [&]<class R>(std::size_t& bytes) {
    return engine::reduce_async_impl<R>(nullptr, bytes, {d_in}, nullptr, n, R{op}, stream, opt);
  });
}

// The 1-D entry point of every result type (reduction R): a size query answers for all of them,
// a call runs R.
template <class R, class T, class Op>
cudaError_t flat_entry(void* d_temp, std::size_t& temp_bytes, const T* d_in, typename R::Out* d_out, std::size_t n,
                       Op op, cudaStream_t stream, const Options& opt) {
  if (d_temp == nullptr) return reduce_size<T, Op>(temp_bytes, d_in, n, op, stream, opt);
  return engine::reduce_async_impl<R>(d_temp, temp_bytes, {d_in}, d_out, n, R{op}, stream, opt);
}

template <class T, class Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out, std::size_t n,
                         Op op, cudaStream_t stream, const Options& opt) {
  return flat_entry<engine::builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, n, op, stream, opt);
}

template <class T, class Op>
acc_t<T, Op> reduce(cudaStream_t stream, const T* d_in, std::size_t n, Op op, const Options& opt) {
  using R = engine::builtin_t<T, Op>;
  return engine::run_blocking<acc_t<T, Op>>(
      stream, "fastreduce::reduce", opt,
      [&](void* temp, std::size_t& bytes, acc_t<T, Op>* out, const Options& o, const char** message) {
        return engine::reduce_async_impl<R>(temp, bytes, {d_in}, out, n, R{op}, stream, o, message);
      });
}

template <class T, class Op>
cudaError_t reduce_async_narrow(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out, std::size_t n, Op op,
                                cudaStream_t stream, const Options& opt) {
  return flat_entry<engine::narrow_builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, n, op, stream, opt);
}

template <class T, class Op>
cudaError_t reduce_async_wide(void* d_temp, std::size_t& temp_bytes, const T* d_in, wide_t<T>* d_out, std::size_t n,
                              Op op, cudaStream_t stream, const Options& opt) {
  return flat_entry<engine::wide_builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, n, op, stream, opt);
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

// The 1-D, axis and segmented entry points (FASTREDUCE_INSTANTIATE_AXIS: detail/axis_dispatch.cuh).
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

// The entry points with results in the input's own type (half and bfloat16: the same kernels).
#define FASTREDUCE_INSTANTIATE_NARROW(T, Op)                                                                     \
  template cudaError_t fastreduce::detail::reduce_async_narrow<T, Op>(void*, std::size_t&, const T*, T*,        \
                                                                      std::size_t, Op, cudaStream_t,            \
                                                                      const fastreduce::Options&);              \
  FASTREDUCE_INSTANTIATE_AXIS_NARROW(T, Op)

// Sum and Prod of a 4-byte integer type accumulated in 8 bytes.
#define FASTREDUCE_INSTANTIATE_WIDE(T, Op)                                                                   \
  template cudaError_t fastreduce::detail::reduce_async_wide<T, Op>(void*, std::size_t&, const T*,          \
                                                                    fastreduce::wide_t<T>*, std::size_t, Op, \
                                                                    cudaStream_t, const fastreduce::Options&); \
  FASTREDUCE_INSTANTIATE_AXIS_WIDE(T, Op)
#define FASTREDUCE_INSTANTIATE_WIDE_ALL(T) \
  FASTREDUCE_INSTANTIATE_WIDE(T, Sum)      \
  FASTREDUCE_INSTANTIATE_WIDE(T, Prod)

// Sum, Prod, Min and Max for half and bfloat16 with results in their own type.
#define FASTREDUCE_INSTANTIATE_NARROW_ALL(T) \
  FASTREDUCE_INSTANTIATE_NARROW(T, Sum)      \
  FASTREDUCE_INSTANTIATE_NARROW(T, Prod)     \
  FASTREDUCE_INSTANTIATE_NARROW(T, Min)      \
  FASTREDUCE_INSTANTIATE_NARROW(T, Max)

// Sum, Prod, Min and Max for a floating-point input type, and the reproducible axis sum's
// unrounded pieces (detail/repro_pieces.hpp).
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
