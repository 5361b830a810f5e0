// Axis and segmented reductions of any reduction (detail/reduction.cuh): argument checks, the
// path (detail/axis_plan.hpp) and its launches. The library instantiates them for the built-in
// types and ops beside the 1-D entry points (src/engine/engine_<type>.cu); the header-only entry
// points for the others.
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#include "fastreduce/detail/axis_fast.cuh"
#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/detail/axis_repro.cuh"
#include "fastreduce/detail/dispatch.cuh"
#include "fastreduce/detail/exact_axis.cuh"
#include "fastreduce/detail/ordered.cuh"
#include "fastreduce/detail/repro_pieces.hpp"
#include "fastreduce/detail/repro_segments.cuh"
#include "fastreduce/detail/segments.cuh"
#include "fastreduce/detail/segments_scan.hpp"
#include "fastreduce/detail/stat_reductions.cuh"

namespace fastreduce::engine {

// RowsTile stages inputs of a type that fills 16-byte vectors (two: of one size).
template <class R>
inline constexpr bool kTileOk = kVecOf<R> * sizeof(typename R::Input) == 16;

// AxisPath::Map: commutative reductions other than the built-in ops (whose tile kernel already
// runs an axis of length 1 at memory speed), unless one says `kMapPath = false`.
template <class R>
constexpr bool map_ok() {
  if constexpr (is_builtin_v<R> || !R::commutative) return false;
  else if constexpr (requires { R::kMapPath; }) return R::kMapPath;
  else return true;
}
template <class R>
inline constexpr bool kMapOk = map_ok<R>();

// The longest contiguous row (bytes) that takes RowsTile: a reduction's kTileRowMaxBytes, else the
// policy's bound for built-in ops or for the others.
template <class R>
constexpr std::size_t tile_row_max_bytes() {
  if constexpr (requires { R::kTileRowMaxBytes; }) return R::kTileRowMaxBytes;
  else return is_builtin_v<R> ? kAxisPolicy.tile_row_max_bytes : kAxisPolicy.tile_row_max_bytes_family;
}

// RowsLanes: commutative reductions whose inputs fill 16-byte vectors, unless one says
// `kLanesPath = false`.
template <class R>
constexpr bool lanes_ok() {
  if constexpr (!R::commutative || !kTileOk<R>) return false;
  else if constexpr (requires { R::kLanesPath; }) return R::kLanesPath;
  else return true;
}
template <class R>
inline constexpr bool kLanesOk = lanes_ok<R>();
// The rows RowsLanes takes for R: every fitting row, but rows of part of a vector only where a
// vector's results fit in 16 bytes (not the arg-extremes', 16 bytes each, whose rows of one or two
// floats ran 2-3x slower: a lane's two or four results are stores 32 or 64 bytes apart). Wider
// accumulators (the moments, the arg-extremes, Mode::Exact's checks of the L2 norm and variance)
// took rows of one or 64 vectors only while their lanes met in a butterfly a run (float rows of 8
// to 128: 0.79-0.98x of the tile kernel, H200); with the reduce-scatter they ran 1.01-1.39x faster
// than the tile kernel there. Rows of 128 vectors (a warp's run each, axis_lanes_runs_kernel) for
// reductions of one input other than the built-in ops, which took a warp a row there (float var,
// argmax and L2 over rows of 512 at 69-80% of Sum, H200; Sum at 100%); not two inputs: the dot
// product's Mode::Exact check ran 0.90x of a warp a row there. docs/notes.md, "Rows as one array
// of vectors for every op", "The lanes of a row meet by a reduce-scatter" and "Rows of 128
// vectors".
template <class R>
constexpr LanesRows lanes_rows() {
  if constexpr (!kLanesOk<R>) {
    return {};
  } else {
    using O = typename R::Out;
    return {.whole = true,
            .halves = 2 * sizeof(O) <= 16,
            .quarters = 4 * sizeof(O) <= 16,
            .runs = !is_builtin_v<R> && !two_inputs_v<R>};
  }
}
template <class R>
inline constexpr LanesRows kLanesRows = lanes_rows<R>();

// RowsLanes rows for which R::lanes_loop(length) holds (length: the row's elements) take at most
// 16 waves of resident blocks, which loop over the warps' runs (plan_axis' lanes_loop); other rows
// and reductions a block per kAxisWarps runs. On an H200 at 2^28 (docs/notes.md, "The rows-lanes
// kernel's grid"), the cap sped float var and std over rows of 2 to 256 up to 1.14x, the means
// over rows of 4 to 256 up to 1.10x (bfloat16) and float argmax over rows of 16 to 256
// 1.03-1.11x, but cost the means over rows of 2 2-4%, argmax over rows of 8 and 512 1-2% and, in
// an earlier measurement, float Sum, max and argmax over rows of one vector 2-3% and the dot
// product over rows of 4 to 256 1-3%: the built-in ops and the other reductions keep a block per
// kAxisWarps runs.
template <class R>
constexpr bool lanes_loop(std::size_t length) {
  if constexpr (requires { R::lanes_loop(length); }) {
    return R::lanes_loop(length);
  } else {
    return false;
  }
}

template <class R, unsigned V>
struct AxisKernels {
  static constexpr auto tile() {
    if constexpr (kTileOk<R>) return axis_tile_kernel<R>;
    else return nullptr;
  }
  // (Two inputs that are 16-byte aligned are read by vectors: V is kVecOf<R>.)
  static constexpr bool lanes_ok = kLanesOk<R> && V * sizeof(typename R::Input) == 16;
  // On the RowsLanes path (rows of 1 to 64 whole vectors, or part of one): rows of 2 vectors or
  // more of a reduction other than the built-in ops take the reduce-scatter's kernel
  // (axis_lanes_kernel's Across); rows of 128 vectors (kLanesRows' runs) their own.
  static bool lanes_across(std::size_t length) {
    return !is_builtin_v<R> && length * sizeof(typename R::Input) >= 2 * 16;
  }
  // Rows of 128 vectors: the runs kernel's, where R has it (rows_lanes_fit plans them for no
  // other reduction: the other kernels do not take them, and the dispatch refuses them).
  static bool lanes_runs(std::size_t length) { return length * sizeof(typename R::Input) == 16 * 32 * kLanesUnroll; }
  template <bool Across>
  static constexpr auto lanes() {
    if constexpr (lanes_ok) return axis_lanes_kernel<V, R, Across && !is_builtin_v<R>>;
    else return nullptr;
  }
  static constexpr auto runs() {
    if constexpr (lanes_ok && kLanesRows<R>.runs) return axis_lanes_runs_kernel<V, R>;
    else return nullptr;
  }
  static constexpr auto rows_warp = axis_rows_kernel<32, V, R>;
  static constexpr auto rows_block = axis_rows_kernel<kAxisThreads, V, R>;
  // Vector columns: a pack of 16-byte columns a thread, where its values fit shared memory.
  static constexpr bool columns_ok = V > 1 && kColumnPack<R> == V;
  static constexpr auto columns() {
    if constexpr (columns_ok) return axis_columns_kernel<V, R>;
    else return nullptr;
  }
  static constexpr auto columns_scalar = axis_columns_kernel<1, R>;
  static constexpr auto strided = axis_strided_kernel<R>;
  static constexpr auto map() {
    if constexpr (kMapOk<R>) return axis_map_kernel<R>;
    else return nullptr;
  }
  static constexpr auto identity = axis_identity_kernel<R>;
  static constexpr auto combine_rows = combine_row_pieces_kernel<R>;
  static constexpr auto combine_columns = combine_column_pieces_kernel<R>;
};

// Exact: with Mode::Exact's lanes. Op: the sums, the sums of the elements' magnitudes or the means.
template <class T, bool Exact = false, primitives::ExactOp Op = primitives::ExactOp::Sum>
struct ReproAxisKernels {
  using A = acc_t<T, Sum>;
  static constexpr auto rows_warp = repro_rows_kernel<1, T, AxisRowViews<T>, Exact, Op>;
  static constexpr auto rows_block = repro_rows_kernel<kReproThreads / 32, T, AxisRowViews<T>, Exact, Op>;
  static constexpr auto columns = repro_columns_kernel<T, Exact, Op>;
  static constexpr auto finish = repro_pieces_finish_kernel<A, primitives::kDividesBy<Op>>;
};

// The exact sums of squares (the L2 norm) and of products (the dot product) of float, half and
// bfloat16 inputs along an axis, in both modes: Mode::Exact's double lanes, each output finished
// as the 1-D exact_terms_kernel finishes (O: the result type).
template <class T, LaneTerm Term, class O>
struct TermAxisKernels {
  static constexpr auto kSum = primitives::ExactOp::Sum;
  static constexpr auto rows_warp = repro_rows_kernel<1, T, AxisRowViews<T>, true, kSum, Term, O>;
  static constexpr auto rows_block = repro_rows_kernel<kReproThreads / 32, T, AxisRowViews<T>, true, kSum, Term, O>;
  static constexpr auto columns = repro_columns_kernel<T, true, kSum, Term, O>;
  static constexpr auto finish = repro_pieces_finish_kernel<double, false, Term, O>;
};

// The ordered kernels of a reduction whose op is not commutative, by group size.
template <class R, class Layout>
cudaError_t launch_ordered_groups(unsigned group, unsigned grid, const typename R::Input* in, const Layout& layout,
                                  std::size_t outputs, typename R::Out* out, const R& red, cudaStream_t stream) {
  if (group == 1) return launch(ordered_groups_kernel<1, R, Layout>, grid, kOrderedThreads, 0, stream, false, in, layout, outputs, out, red);
  if (group == 32) return launch(ordered_groups_kernel<32, R, Layout>, grid, kOrderedThreads, 0, stream, false, in, layout, outputs, out, red);
  return launch(ordered_groups_kernel<kOrderedThreads, R, Layout>, grid, kOrderedThreads, 0, stream, false, in, layout,
                outputs, out, red);
}
template <class R, class Layout>
cudaError_t ordered_groups_facts(unsigned group, int device, KernelFacts& facts) {
  if (group == 1) return kernel_facts<ordered_groups_kernel<1, R, Layout>, kOrderedThreads>(device, facts);
  if (group == 32) return kernel_facts<ordered_groups_kernel<32, R, Layout>, kOrderedThreads>(device, facts);
  return kernel_facts<ordered_groups_kernel<kOrderedThreads, R, Layout>, kOrderedThreads>(device, facts);
}

// The plan of an axis reduction on `device`, and whether its second kernel may be a dependent launch.
struct AxisLaunch {
  AxisLayout layout;
  AxisPlan plan;
  bool dependent = false;
  bool vectors = true;  // the kernels with a vector of V > 1 elements (two inputs: equally aligned)
  bool exact = false;   // the reproducible paths with Mode::Exact's lanes
};

template <class R>
cudaError_t plan_axis_launch(const Axis& axis, const inputs_t<R>& in, const Options& opt, int device, AxisLaunch& out,
                             const char** message) {
  using T = typename R::Input;
  using P = typename R::Partial;
  auto fail = [&](cudaError_t e, const char* text) { return planning_error(message, e, text); };
  if (const char* error = resolve_axis(axis, out.layout); error != nullptr) return fail(cudaErrorInvalidValue, error);
  bool repro_sum = false;
  if (cudaError_t e = reproducible_form<R>(opt, repro_sum, message); e != cudaSuccess) return e;
  if constexpr (kVarianceSum<R>) {
    // (Along an axis the exact variance is plan_exact_check's and plan_variance_axis's; here only
    // the 1-D reduce of one contiguous output.)
    if (repro_sum && !(out.layout.outputs() == 0 || out.layout.one_contiguous_output())) {
      return fail(cudaErrorNotSupported, "the exact variance along an axis is planned by plan_variance_axis");
    }
  }
  if (repro_sum && out.layout.length >= kReproMaxElements) {
    return fail(cudaErrorNotSupported, opt.mode == Mode::Exact ? "Mode::Exact sums at most 2^40 elements per output"
                                                               : "Mode::Reproducible sums at most 2^40 elements per output");
  }
  // (Not for the ordered kernels, whose thread-per-output group needs 32 adjacent outputs across
  // `inner`: they keep the layout as given.)
  if (!repro_sum && R::commutative) out.layout = length_one_as_rows(out.layout);
  const int sms = multiprocessors(device);
  out.vectors = vectors_fit<R>(in) || (!two_inputs_v<R> && kVecOf<R> > 1);
  // RowsTile stages two inputs only when they are equally aligned (with the same offsets into the tile).
  AxisPath path = choose_axis_path(out.layout, sizeof(T), repro_sum, sms, kTileOk<R> && out.vectors,
                                   tile_row_max_bytes<R>(), kMapOk<R>,
                                   inputs_aligned16<R>(in) ? kLanesRows<R> : LanesRows{});
  // (The L2 norm and dot product take Mode::Exact's lanes in both modes.)
  out.exact = repro_sum && (opt.mode == Mode::Exact || kTermSum<R>);
  if constexpr (!R::commutative) {
    static_assert(!two_inputs_v<R>, "a reduction of two inputs needs a commutative op");
    KernelFacts main{};
    if (path == AxisPath::Nothing || path == AxisPath::Identity) {
      if (path == AxisPath::Identity) {
        if (cudaError_t e = kernel_facts<axis_identity_kernel<R>, kAxisThreads>(device, main); e != cudaSuccess) {
          return fail(e, "no kernel image for this GPU (axis)");
        }
      }
      out.plan = plan_axis(path, out.layout, sizeof(T), sizeof(P), sms, main.blocks_per_sm, opt.max_blocks, 0);
      return cudaSuccess;
    }
    const bool inner_contiguous = out.layout.inner >= 32 &&
                                  (out.layout.inner_stride == 1 || out.layout.inner_stride == -1);
    const unsigned group = ordered_group(out.layout.outputs(), out.layout.length, inner_contiguous);
    if (cudaError_t e = ordered_groups_facts<R, OrderedAxis>(group, device, main); e != cudaSuccess) {
      return fail(e, "no kernel image for this GPU (ordered axis)");
    }
    out.plan = plan_ordered_axis(out.layout.outputs(), out.layout.length, inner_contiguous, sms, main.blocks_per_sm,
                                 opt.max_blocks);
    return cudaSuccess;
  } else {
  return with_vector_width<R>(out.vectors, [&]<unsigned V>() -> cudaError_t {
    using K = AxisKernels<R, V>;
    if (path == AxisPath::Columns &&
        !(K::columns_ok && columns_vectorizable(out.layout, sizeof(T), reinterpret_cast<std::uintptr_t>(in.x) % 16 == 0))) {
      path = AxisPath::ColumnsScalar;
    }
    KernelFacts main{}, second{};
    cudaError_t status = cudaSuccess;
    bool has_second = false;
    unsigned repro_words = 0;
    switch (path) {
      case AxisPath::Nothing:
      case AxisPath::Flat:
      case AxisPath::Ordered:
        break;
      case AxisPath::Identity: status = kernel_facts<K::identity, kAxisThreads>(device, main); break;
      case AxisPath::RowsTile:
        if constexpr (kTileOk<R>) status = kernel_facts<K::tile(), kAxisThreads>(device, main);
        break;
      case AxisPath::RowsLanes:
        if constexpr (K::lanes_ok) {
          if (K::lanes_runs(out.layout.length)) {
            if constexpr (K::runs() != nullptr) status = kernel_facts<K::runs(), kAxisThreads>(device, main);
            else return fail(cudaErrorNotSupported, "rows of 128 vectors planned for a reduction without their kernel");
            break;
          }
          status = K::lanes_across(out.layout.length) ? kernel_facts<K::template lanes<true>(), kAxisThreads>(device, main)
                                                      : kernel_facts<K::template lanes<false>(), kAxisThreads>(device, main);
        }
        break;
      case AxisPath::RowsWarp: status = kernel_facts<K::rows_warp, kAxisThreads>(device, main); break;
      case AxisPath::RowsBlock:
        status = kernel_facts<K::rows_block, kAxisThreads>(device, main);
        if (status == cudaSuccess) status = kernel_facts<K::combine_rows, kAxisThreads>(device, second);
        has_second = true;
        break;
      case AxisPath::Columns:
      case AxisPath::ColumnsScalar:
        if constexpr (K::columns_ok) {
          status = path == AxisPath::Columns ? kernel_facts<K::columns(), kAxisThreads>(device, main)
                                             : kernel_facts<K::columns_scalar, kAxisThreads>(device, main);
        } else {
          status = kernel_facts<K::columns_scalar, kAxisThreads>(device, main);
        }
        if (status == cudaSuccess) status = kernel_facts<K::combine_columns, kAxisThreads>(device, second);
        has_second = true;
        break;
      case AxisPath::Strided: status = kernel_facts<K::strided, kAxisThreads>(device, main); break;
      case AxisPath::Map:
        if constexpr (kMapOk<R>) status = kernel_facts<K::map(), kAxisThreads>(device, main);
        break;
      case AxisPath::ReproRows:
      case AxisPath::ReproColumns: {
        // The exact axis kernels K: the main kernel of the path, then the pieces' finish.
        auto repro_facts = [&]<class K>() {
          status = path == AxisPath::ReproColumns ? kernel_facts<K::columns, kReproThreads>(device, main)
                                                  : kernel_facts<K::rows_block, kReproThreads>(device, main);
          if (status == cudaSuccess) status = kernel_facts<K::finish, kReproThreads>(device, second);
          has_second = true;
        };
        if constexpr (is_exact_sum_v<R>) {
          repro_words = primitives::kExactRowWords<acc_t<T, Sum>>;
          with_exact_lanes(out.exact, [&]<bool Exact>() {
            repro_facts.template operator()<ReproAxisKernels<T, Exact, kExactOpOf<R>>>();
          });
        } else if constexpr (kTermSum<R>) {
          repro_words = primitives::kExactRowWords<double>;
          repro_facts.template operator()<TermAxisKernels<T, kLaneTermOf<R>, typename R::Out>>();
        }
        break;
      }
    }
    if (status != cudaSuccess) return fail(status, "no kernel image for this GPU (axis)");
    // A tile holds rows of every input (two inputs: half a tile's bytes each).
    const std::size_t elem_size = path == AxisPath::RowsTile ? kAxisPolicy.tile_bytes / kTileElems<R> : sizeof(T);
    out.plan = plan_axis(path, out.layout, elem_size, sizeof(P), sms, main.blocks_per_sm, opt.max_blocks, repro_words,
                         out.exact, lanes_loop<R>(out.layout.length));
    out.dependent = has_second && compute_major(device) >= 9 && second.ptx_version >= 90;
    return cudaSuccess;
  });
  }
}

// The exact axis kernels K (ReproAxisKernels, TermAxisKernels) over every output into `pieces` (a
// row of exact limbs per output and piece, summed and finished by K::finish), or, without pieces,
// each output finished in place (`out`, of type O; `result`: the sums' narrow type). d_in2: the
// dot product's second input, of d_in's layout, else null.
template <class K, class T, class O>
cudaError_t launch_repro_kernels(const AxisLayout& L, const AxisPlan& P, const T* d_in, const T* d_in2,
                                 unsigned long long* pieces, O* out, primitives::ResultType result, cudaStream_t stream) {
  if (P.path == AxisPath::ReproRows) {
    const AxisRows<T> rows{d_in, {L.length, L.inner, L.outer_stride, L.inner_stride}};
    const ReproRowsArgs<AxisRowViews<T>, O> args{{rows, d_in2}, P.items, P.chunks, P.chunk, pieces, out, result};
    return P.group == 1 ? launch(K::rows_warp, P.grid, kReproThreads, 0, stream, false, args)
                        : launch(K::rows_block, P.grid, kReproThreads, 0, stream, false, args);
  }
  const ReproColumnsArgs<T, O> args{d_in,    d_in2,          L.outputs(), L.length, L.inner, L.outer_stride,
                                    L.length_stride, L.inner_stride, P.group, P.col_blocks, P.chunks, P.chunk,
                                    P.items, pieces, out, result};
  return launch(K::columns, P.grid, kReproThreads, 0, stream, false, args);
}

// The reproducible (Exact: exact) sum of every output, as launch_repro_kernels. Op: the sums, the
// sums of the elements' magnitudes or the means.
template <class T, bool Exact = false, primitives::ExactOp Op = primitives::ExactOp::Sum>
cudaError_t launch_repro_axis(const AxisLayout& L, const AxisPlan& P, const T* d_in, unsigned long long* pieces,
                              acc_t<T, Sum>* out, primitives::ResultType result, cudaStream_t stream) {
  return launch_repro_kernels<ReproAxisKernels<T, Exact, Op>>(L, P, d_in, static_cast<const T*>(nullptr), pieces, out,
                                                              result, stream);
}

template <class R>
cudaError_t launch_axis(const AxisLaunch& launch_plan, void* d_temp, const inputs_t<R>& in, typename R::Out* d_out,
                        const R& red, cudaStream_t stream) {
  using P = typename R::Partial;
  const AxisLayout& L = launch_plan.layout;
  const AxisPlan& Q = launch_plan.plan;
  if constexpr (!R::commutative) {
    if (Q.path == AxisPath::Identity) {
      return launch(axis_identity_kernel<R>, Q.grid, kAxisThreads, 0, stream, false, d_out, L.outputs(), red);
    }
    if (Q.path != AxisPath::Ordered) return cudaSuccess;
    const OrderedAxis layout{L.length, L.inner, L.outer_stride, L.length_stride, L.inner_stride};
    return launch_ordered_groups<R>(Q.group, Q.grid, in.x, layout, L.outputs(), d_out, red, stream);
  } else {
  if (Q.path == AxisPath::ReproRows || Q.path == AxisPath::ReproColumns) {
    if constexpr (is_exact_sum_v<R> || kTermSum<R>) {
      using T = typename R::Input;
      auto* pieces = Q.combine ? static_cast<unsigned long long*>(d_temp) : nullptr;  // one piece: finished in place
      // The pieces' finish (a warp an output), after the main kernel.
      auto finish = [&](auto kernel, auto* out, primitives::ResultType result) {
        const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((L.outputs() + 7) / 8, 1u << 16));
        return launch(kernel, grid, kReproThreads, 0, stream, launch_plan.dependent,
                      static_cast<const unsigned long long*>(pieces), L.outputs(), Q.chunks, out, result,
                      std::uint64_t(L.length));
      };
      cudaError_t status = cudaSuccess;
      if constexpr (is_exact_sum_v<R>) {
        auto* out = reinterpret_cast<acc_t<T, Sum>*>(d_out);
        status = with_exact_lanes(launch_plan.exact, [&]<bool Exact>() {
          return launch_repro_axis<T, Exact, kExactOpOf<R>>(L, Q, in.x, pieces, out, kSumResultType<R>, stream);
        });
        if (status == cudaSuccess && Q.combine) {
          status = finish(ReproAxisKernels<T, false, kExactOpOf<R>>::finish, out, kSumResultType<R>);
        }
      } else {
        using TK = TermAxisKernels<T, kLaneTermOf<R>, typename R::Out>;
        const T* y = nullptr;
        if constexpr (two_inputs_v<R>) y = in.y;
        constexpr primitives::ResultType kAcc = primitives::ResultType::Acc;  // (the term kernels store R::Out)
        status = launch_repro_kernels<TK>(L, Q, in.x, y, pieces, d_out, kAcc, stream);
        if (status == cudaSuccess && Q.combine) status = finish(TK::finish, d_out, kAcc);
      }
      return status;
    }
    return cudaErrorNotSupported;
  }
  return with_vector_width<R>(launch_plan.vectors, [&]<unsigned V>() -> cudaError_t {
    using K = AxisKernels<R, V>;
    const unsigned T_ = kAxisThreads;
    P* partials = static_cast<P*>(d_temp);
    const RowOffsets rows{L.length, L.inner, L.outer_stride, L.inner_stride};
    cudaError_t status = cudaSuccess;
    switch (Q.path) {
      case AxisPath::Nothing:
      case AxisPath::Flat:
      case AxisPath::Ordered:
      case AxisPath::ReproRows:
      case AxisPath::ReproColumns:
        return cudaSuccess;
      case AxisPath::Identity:
        return launch(K::identity, Q.grid, T_, 0, stream, false, d_out, L.outputs(), red);
      case AxisPath::RowsTile:
        if constexpr (kTileOk<R>) {
          return launch(K::tile(), Q.grid, T_, 0, stream, false,
                        TileArgs<R>{in, L.outputs(), L.length, Q.rows_per_tile, Q.items, Q.group, d_out}, red);
        }
        return cudaErrorNotSupported;
      case AxisPath::RowsLanes:
        if constexpr (K::lanes_ok) {
          const LanesArgs<R> args{in, L.outputs(), L.length, Q.chunk, Q.group, static_cast<unsigned>(Q.rows_per_tile), d_out};
          if (K::lanes_runs(L.length)) {
            if constexpr (K::runs() != nullptr) return launch(K::runs(), Q.grid, T_, 0, stream, false, args, red);
            return cudaErrorNotSupported;
          }
          return K::lanes_across(L.length) ? launch(K::template lanes<true>(), Q.grid, T_, 0, stream, false, args, red)
                                           : launch(K::template lanes<false>(), Q.grid, T_, 0, stream, false, args, red);
        }
        return cudaErrorNotSupported;
      case AxisPath::RowsWarp:
        return launch(K::rows_warp, Q.grid, T_, 0, stream, false, RowsArgs<R>{in, rows, Q.items, 1, L.length, nullptr, d_out},
                      red);
      case AxisPath::RowsBlock:
        status = launch(K::rows_block, Q.grid, T_, 0, stream, false,
                        RowsArgs<R>{in, rows, Q.items, Q.chunks, Q.chunks == 1 ? L.length : Q.chunk, partials, d_out}, red);
        if (status == cudaSuccess && Q.combine) {
          const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((L.outputs() + kAxisWarps - 1) / kAxisWarps, 1u << 16));
          status = launch(K::combine_rows, grid, T_, 0, stream, launch_plan.dependent, static_cast<const P*>(partials),
                          L.outputs(), Q.chunks, d_out, red);
        }
        return status;
      case AxisPath::Columns:
      case AxisPath::ColumnsScalar: {
        const ColumnsArgs<R> args{in,      L.outer,       L.length,  L.inner,  L.outer_stride, L.length_stride,
                                  Q.group, Q.lanes,       Q.col_blocks, Q.chunks, Q.chunk,     Q.items,
                                  partials, d_out};
        if constexpr (K::columns_ok) {
          status = Q.path == AxisPath::Columns ? launch(K::columns(), Q.grid, T_, 0, stream, false, args, red)
                                               : launch(K::columns_scalar, Q.grid, T_, 0, stream, false, args, red);
        } else {
          status = launch(K::columns_scalar, Q.grid, T_, 0, stream, false, args, red);
        }
        if (status == cudaSuccess && Q.combine) {
          const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((L.outputs() + 31) / 32, 1u << 20));
          status = launch(K::combine_columns, grid, T_, 0, stream, launch_plan.dependent, static_cast<const P*>(partials),
                          L.outer, L.inner, Q.chunks, d_out, red);
        }
        return status;
      }
      case AxisPath::Map:
        if constexpr (kMapOk<R>) return launch(K::map(), Q.grid, T_, 0, stream, false, in, L.outputs(), d_out, red);
        return cudaErrorNotSupported;
      case AxisPath::Strided:
        return launch(K::strided, Q.grid, T_, 0, stream, false,
                      StridedArgs<R>{in, L.outputs(), L.length, L.inner, L.outer_stride, L.length_stride, L.inner_stride,
                                     d_out},
                      red);
    }
    return cudaErrorInvalidValue;
  });
  }
}

// The checked reduction that serves R on the fast paths: ExactCheck for the sums, TermCheck for the
// L2 norm and dot product, VarianceCheck for the variance; its inputs. `type` takes axes of up to
// kMaxLength elements, `wide` those past it up to kWideMaxLength (the same type but for the
// float-valued sums and L1 norms, whose wide form keeps a CheckedPair).
template <class R>
struct CheckFor;
template <class R>
  requires is_exact_sum_v<R>
struct CheckFor<R> {
  using A = acc_t<typename R::Input, Sum>;
  static constexpr bool kHasWide = !std::is_same_v<A, double> && !primitives::kDividesBy<kExactOpOf<R>>;
  using type = ExactCheck<typename R::Input, typename R::Out, kExactOpOf<R>>;
  using wide = std::conditional_t<kHasWide, ExactCheck<typename R::Input, typename R::Out, kExactOpOf<R>, true>, type>;
  static constexpr std::size_t kMaxLength = kExactCheckMaxLength<A>;
  static constexpr std::size_t kWideMaxLength = kHasWide ? kExactWideCheckMaxLength : kMaxLength;
  static inputs_t<type> inputs(const inputs_t<R>& in) { return {in.x}; }
};
template <class R>
  requires kTermSum<R>
struct CheckFor<R> {
  using type = TermCheck<typename R::Input, kLaneTermOf<R>, typename R::Out>;
  using wide = type;
  static constexpr std::size_t kMaxLength = kExactCheckMaxLength<double>;  // a CheckedPair, as doubles'
  static constexpr std::size_t kWideMaxLength = kMaxLength;
  static inputs_t<type> inputs(const inputs_t<R>& in) {
    if constexpr (two_inputs_v<R>) return {in.x, in.y};
    else return {in.x};
  }
};
template <class R>
  requires kVarianceSum<R>
struct CheckFor<R> {
  using type = VarianceCheck<typename R::Input, typename R::Out>;
  using wide = type;
  static constexpr std::size_t kMaxLength = kExactCheckMaxLength<double>;  // CheckedPairs, as doubles'
  static constexpr std::size_t kWideMaxLength = kMaxLength;
  static inputs_t<type> inputs(const inputs_t<R>& in) { return {in.x}; }
};

// f.template operator()<C>() with C the checked reduction of R for an axis of `length` elements.
template <class R, class F>
decltype(auto) with_check(std::size_t length, F&& f) {
  using For = CheckFor<R>;
  if constexpr (!std::is_same_v<typename For::wide, typename For::type>) {
    if (length > For::kMaxLength) return f.template operator()<typename For::wide>();
  }
  return f.template operator()<typename For::type>();
}

// Whether R's exact check (CheckFor) serves the options' mode: Mode::Exact, and for the L2 norm,
// dot product, variance and standard deviation Mode::Reproducible too (their bits are one).
template <class R>
bool exact_check_mode(const Options& opt) {
  return opt.mode == Mode::Exact || ((kTermSum<R> || kVarianceSum<R>) && opt.mode == Mode::Reproducible);
}

// Mode::Exact by ExactCheck on the fast paths (detail/exact_axis.cuh): whether it takes this axis
// sum (rows or columns of 1 to CheckFor<R>::kWideMaxLength elements, not one contiguous output,
// which is the 1-D sum), and its plan. The L2 norm and dot product, by TermCheck, in both modes (their bits
// are one), and the variance and standard deviation by VarianceCheck (axes of length 0 too: NaN in
// every output, by the identity kernel). Anything it does not take, argument errors included, goes
// on to the exact lanes' paths.
template <class R>
bool plan_exact_check(const Axis& axis, const inputs_t<R>& in, const Options& opt, int device, AxisLaunch& out) {
  if constexpr (!is_exact_sum_v<R> && !kTermSum<R> && !kVarianceSum<R>) {
    return false;
  } else {
    if (!exact_check_mode<R>(opt)) return false;
    AxisLayout layout{};
    if (resolve_axis(axis, layout) != nullptr) return false;
    if ((layout.length == 0 && !kVarianceSum<R>) || layout.length > CheckFor<R>::kWideMaxLength) return false;
    Options fast = opt;
    fast.mode = Mode::Fast;
    const cudaError_t planned = with_check<R>(layout.length, [&]<class C>() {
      return plan_axis_launch<C>(axis, CheckFor<R>::inputs(in), fast, device, out, nullptr);
    });
    if (planned != cudaSuccess) return false;
    const AxisPath path = out.plan.path;
    return path != AxisPath::Flat && path != AxisPath::Nothing && (path != AxisPath::Identity || kVarianceSum<R>);
  }
}

// Mode::Exact along an axis of length 1 runs as fast mode: one element's sum, 0 + x, is the
// element itself rounded once into the result type (exact for every float type), and -0 gives +0
// as the exact paths do. So do the L2 norm and the dot product in both modes (their one mode):
// fast mode's one square in double, root in double and rounding into the result, and its one
// product in double rounded into float, are the exact finish's steps on the same exact value.
// The options a reduction runs with, that rule applied.
template <class R>
Options exact_length_one_as_fast(const Axis& axis, const Options& opt) {
  if constexpr (is_exact_sum_v<R> || kTermSum<R>) {
    AxisLayout layout{};
    if (exact_check_mode<R>(opt) && resolve_axis(axis, layout) == nullptr && layout.length == 1) {
      Options fast = opt;
      fast.mode = Mode::Fast;
      return fast;
    }
  }
  return opt;
}

template <class R>
cudaError_t axis_temp_bytes(const Axis& axis, const inputs_t<R>& in, const Options& opt, int device, std::size_t& bytes,
                            const char** message);

// The flag word of an ExactCheck launch, then the fast path's own storage.
inline constexpr std::size_t kExactCheckFlagBytes = 256;

// The axis sum planned by plan_exact_check: the flag zeroed, the fast path's kernels with
// the checked reduction (with_check), and the fix-up of the outputs that failed the check.
template <class R>
cudaError_t reduce_axis_exact_check(const AxisLaunch& plan, void* d_temp, std::size_t& temp_bytes, const inputs_t<R>& in,
                                    typename R::Out* d_out, const R& red, cudaStream_t stream, const Options& opt,
                                    int device, const char** message, const Axis& axis) {
  using T = typename R::Input;
  using C = typename CheckFor<R>::type;
  std::size_t needed = kExactCheckFlagBytes + plan.plan.temp_bytes;
  if constexpr (two_inputs_v<R>) {
    // (Two inputs' storage depends on whether they are equally aligned: enough for either, this
    // plan's included.)
    Options fast = opt;
    fast.mode = Mode::Fast;
    std::size_t bytes = 0;
    if (cudaError_t e = axis_temp_bytes<C>(axis, CheckFor<R>::inputs(in), fast, device, bytes, message); e != cudaSuccess) {
      return e;
    }
    needed = kExactCheckFlagBytes + bytes;
  }
  if (d_temp == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  // (An axis of length 0, the variance's identity path, reads no input: its pointer may be null.)
  const bool identity = plan.plan.path == AxisPath::Identity;
  const ArgumentError error = validate_reduction<R>(in, d_out, d_temp, identity ? 0 : 1, temp_bytes, needed);
  if (message != nullptr) *message = error.message;
  if (error.code != cudaSuccess) return error.code;
  KernelFacts fixup{};
  cudaError_t facts = cudaSuccess;
  if constexpr (kTermSum<R>) {
    facts = kernel_facts<term_fixup_kernel<T, kLaneTermOf<R>, typename R::Out>, kFixupThreads>(device, fixup);
  } else if constexpr (kVarianceSum<R>) {
    facts = kernel_facts<variance_fixup_kernel<T, typename R::Out>, kFixupThreads>(device, fixup);
  } else {
    facts = kernel_facts<exact_fixup_kernel<T, kExactOpOf<R>>, kFixupThreads>(device, fixup);
  }
  if (facts != cudaSuccess) return planning_error(message, facts, "no kernel image for this GPU (axis)");
  auto* failed = static_cast<unsigned*>(d_temp);
  cudaError_t status = cudaMemsetAsync(failed, 0, sizeof(unsigned), stream);
  if (status == cudaSuccess) {
    status = with_check<R>(plan.layout.length, [&]<class Check>() {
      return launch_axis<Check>(plan, static_cast<char*>(d_temp) + kExactCheckFlagBytes, CheckFor<R>::inputs(in), d_out,
                                Check::with(failed, plan.layout.length, red), stream);
    });
  }
  if (status == cudaSuccess && !identity) {
    const AxisLayout& L = plan.layout;
    constexpr std::size_t kOutputsPerBlock = kFixupThreads;  // a warp reads 32 outputs at a time
    std::size_t resident = std::size_t(multiprocessors(device)) * std::max(fixup.blocks_per_sm, 1);
    if (opt.max_blocks > 0) resident = std::min<std::size_t>(resident, opt.max_blocks);
    const unsigned grid = static_cast<unsigned>(
        std::clamp<std::size_t>((L.outputs() + kOutputsPerBlock - 1) / kOutputsPerBlock, 1, resident));
    const bool dependent = compute_major(device) >= 9 && fixup.ptx_version >= 90;
    const ExactFixupArgs args{failed,         L.outputs(),    L.length,         L.inner,
                              L.outer_stride, L.length_stride, L.inner_stride, kSumResultType<R>};
    if constexpr (kTermSum<R>) {
      const T* y = nullptr;
      if constexpr (two_inputs_v<R>) y = in.y;
      status = launch(term_fixup_kernel<T, kLaneTermOf<R>, typename R::Out>, grid, kFixupThreads, 0, stream, dependent,
                      in.x, y, d_out, args);
    } else if constexpr (kVarianceSum<R>) {
      status = launch(variance_fixup_kernel<T, typename R::Out>, grid, kFixupThreads, 0, stream, dependent, in.x, d_out,
                      args, std::int64_t(red.finish.correction), red.finish.root);
    } else {
      status = launch(exact_fixup_kernel<T, kExactOpOf<R>>, grid, kFixupThreads, 0, stream, dependent, in.x,
                      reinterpret_cast<acc_t<T, Sum>*>(d_out), args);
    }
  }
  if (status != cudaSuccess && message != nullptr) *message = "a kernel launch failed";
  return status;
}

// The variance and standard deviation along axes longer than VarianceCheck's (both modes): two
// passes over the input, the exact Sum's axis kernels (ReproAxisKernels) and the squares'
// (TermAxisKernels), each into pieces (a row per output and piece, also where an output is one
// piece), then repro_variance_finish_kernel. `sums` and `squares` are the two passes' plans (those
// of the exact Sum and of the exact L2 norm on this axis); the storage is their pieces, one after
// the other.
struct VarianceAxisLaunch {
  AxisLaunch sums, squares;
  std::size_t sum_bytes = 0, square_bytes = 0;
  bool dependent = false;  // the finish may be a dependent launch
};

// Whether the variance R takes that way on this axis (Mode::Exact or Mode::Reproducible, some output,
// not one contiguous output, which is the 1-D variance's; shorter axes take plan_exact_check), and its
// plan; planning errors in `error`.
template <class R>
bool plan_variance_axis(const Axis& axis, const inputs_t<R>& in, const Options& opt, int device, VarianceAxisLaunch& out,
                        cudaError_t& error, const char** message) {
  error = cudaSuccess;
  if constexpr (!kVarianceSum<R>) {
    return false;
  } else {
    using T = typename R::Input;
    if (!exact_check_mode<R>(opt)) return false;
    AxisLayout layout{};
    if (resolve_axis(axis, layout) != nullptr) return false;  // (the plans below give the error)
    if (layout.outputs() == 0 || layout.length == 0 || layout.one_contiguous_output()) return false;
    Options exact = opt;
    exact.mode = Mode::Exact;
    if ((error = plan_axis_launch<builtin_t<T, Sum>>(axis, {in.x}, exact, device, out.sums, message)) != cudaSuccess ||
        (error = plan_axis_launch<l2_reduction<T>>(axis, {in.x}, exact, device, out.squares, message)) != cudaSuccess) {
      return true;
    }
    auto exact_path = [](const AxisLaunch& p) {
      return p.plan.path == AxisPath::ReproRows || p.plan.path == AxisPath::ReproColumns;
    };
    if (!exact_path(out.sums) || !exact_path(out.squares)) {
      error = planning_error(message, cudaErrorNotSupported, "the exact variance's axis plan");  // (not reached)
      return true;
    }
    const std::size_t outputs = out.sums.layout.outputs();
    out.sum_bytes = (outputs * out.sums.plan.chunks * primitives::kExactRowWords<float> * 8 + 255) / 256 * 256;
    out.square_bytes = outputs * out.squares.plan.chunks * primitives::kExactRowWords<double> * 8;
    KernelFacts finish{};
    if ((error = kernel_facts<repro_variance_finish_kernel<typename R::Out>, kReproThreads>(device, finish)) != cudaSuccess) {
      error = planning_error(message, error, "no kernel image for this GPU (exact variance along an axis)");
      return true;
    }
    out.dependent = compute_major(device) >= 9 && finish.ptx_version >= 90;
    return true;
  }
}

template <class R>
cudaError_t reduce_axis_variance(const VarianceAxisLaunch& plan, void* d_temp, std::size_t& temp_bytes,
                                 const inputs_t<R>& in, typename R::Out* d_out, const R& red, cudaStream_t stream,
                                 const char** message) {
  using T = typename R::Input;
  const std::size_t needed = plan.sum_bytes + plan.square_bytes;
  if (d_temp == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  const ArgumentError error = validate_reduction<R>(in, d_out, d_temp, 1, temp_bytes, needed);
  if (message != nullptr) *message = error.message;
  if (error.code != cudaSuccess) return error.code;
  auto* sums = static_cast<unsigned long long*>(d_temp);
  auto* squares = reinterpret_cast<unsigned long long*>(static_cast<char*>(d_temp) + plan.sum_bytes);
  const AxisLayout& L = plan.sums.layout;
  constexpr primitives::ResultType kAcc = primitives::ResultType::Acc;
  cudaError_t status = launch_repro_kernels<ReproAxisKernels<T, true>>(L, plan.sums.plan, in.x, static_cast<const T*>(nullptr),
                                                                       sums, static_cast<acc_t<T, Sum>*>(nullptr), kAcc, stream);
  if (status == cudaSuccess) {
    status = launch_repro_kernels<TermAxisKernels<T, LaneTerm::Square, float>>(
        plan.squares.layout, plan.squares.plan, in.x, static_cast<const T*>(nullptr), squares, static_cast<float*>(nullptr),
        kAcc, stream);
  }
  if (status == cudaSuccess) {
    const VariancePiecesArgs<typename R::Out> args{sums, plan.sums.plan.chunks, squares, plan.squares.plan.chunks,
                                                   L.outputs(), std::uint64_t(L.length),
                                                   std::int64_t(red.finish.correction), red.finish.root, d_out};
    const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((L.outputs() + 7) / 8, 1u << 16));
    status = launch(repro_variance_finish_kernel<typename R::Out>, grid, kReproThreads, 0, stream, plan.dependent, args);
  }
  if (status != cudaSuccess && message != nullptr) *message = "a kernel launch failed";
  return status;
}

template <class T>
cudaError_t plan_repro_pieces(const AxisLayout& layout, const Options& opt, int device, PiecesPlan& out) {
  using A = acc_t<T, Sum>;
  out.layout = layout;
  out.empty = layout.length == 0 || layout.outputs() == 0;
  out.exact = opt.mode == Mode::Exact;
  if (out.empty) return cudaSuccess;
  const bool rows_contiguous = layout.length_stride == 1 || layout.length == 1;
  KernelFacts facts{};
  const cudaError_t e = with_exact_lanes(out.exact, [&]<bool Exact>() {
    using RK = ReproAxisKernels<T, Exact>;
    return rows_contiguous ? kernel_facts<RK::rows_block, kReproThreads>(device, facts)
                           : kernel_facts<RK::columns, kReproThreads>(device, facts);
  });
  if (e != cudaSuccess) return e;
  out.plan = plan_axis(rows_contiguous ? AxisPath::ReproRows : AxisPath::ReproColumns, layout, sizeof(T), sizeof(A),
                       multiprocessors(device), facts.blocks_per_sm, opt.max_blocks, primitives::kExactRowWords<A>,
                       out.exact);
  return cudaSuccess;
}

template <class T>
cudaError_t launch_repro_pieces(const PiecesPlan& plan, const T* d_in, unsigned long long* pieces, cudaStream_t stream) {
  if (plan.empty) return cudaSuccess;
  return with_exact_lanes(plan.exact, [&]<bool Exact>() {
    return launch_repro_axis<T, Exact>(plan.layout, plan.plan, d_in, pieces, nullptr, primitives::ResultType::Acc, stream);
  });
}

// The axis reduction's temporary storage, whatever the inputs' alignment.
template <class R>
cudaError_t axis_temp_bytes(const Axis& axis, const inputs_t<R>& in, const Options& opt, int device, std::size_t& bytes,
                            const char** message) {
  AxisLaunch plan{};
  if (cudaError_t e = plan_axis_launch<R>(axis, in, opt, device, plan, message); e != cudaSuccess) return e;
  if (plan.plan.path == AxisPath::Flat) {
    return temp_bytes_for<R>(plan.layout.length, in, opt, device, bytes, message);
  }
  bytes = plan.plan.temp_bytes;
  if constexpr (two_inputs_v<R>) {
  // The size query's pointers need not be the ones reduced: plan the other alignments too (one
  // input's storage does not depend on its alignment; two inputs' on whether they are equally
  // aligned): both inputs aligned alike, and apart two ways.
  constexpr std::uintptr_t kX = alignof(typename R::Input), kY = alignof(typename R::Input2);
  for (const auto [offset_x, offset_y] : {std::pair{std::uintptr_t(0), std::uintptr_t(0)}, std::pair{std::uintptr_t(0), kY},
                                          std::pair{std::uintptr_t(16) - kX, kY}}) {
    inputs_t<R> other = in;
    other.x = reinterpret_cast<const typename R::Input*>(std::uintptr_t(256) + offset_x);
    other.y = reinterpret_cast<const typename R::Input2*>(std::uintptr_t(256) + offset_y);
    AxisLaunch q{};
    if (cudaError_t e = plan_axis_launch<R>(axis, other, opt, device, q, message); e != cudaSuccess) return e;
    bytes = std::max(bytes, q.plan.temp_bytes);
  }
  }
  return cudaSuccess;
}

template <class R>
cudaError_t reduce_axis_async_impl(void* d_temp, std::size_t& temp_bytes, const inputs_t<R>& in, typename R::Out* d_out,
                                   const Axis& axis, const R& red, cudaStream_t stream, const Options& options,
                                   const char** message = nullptr) {
  if (!valid_reduction(red, message)) return cudaErrorInvalidValue;
  const Options opt = exact_length_one_as_fast<R>(axis, options);
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if constexpr (is_exact_sum_v<R> || kTermSum<R> || kVarianceSum<R>) {
    AxisLaunch check{};
    if (plan_exact_check<R>(axis, in, opt, device, check)) {
      return reduce_axis_exact_check<R>(check, d_temp, temp_bytes, in, d_out, red, stream, opt, device, message, axis);
    }
  }
  if constexpr (kVarianceSum<R>) {
    VarianceAxisLaunch variance{};
    cudaError_t e = cudaSuccess;
    if (plan_variance_axis<R>(axis, in, opt, device, variance, e, message)) {
      return e != cudaSuccess ? e : reduce_axis_variance<R>(variance, d_temp, temp_bytes, in, d_out, red, stream, message);
    }
  }
  if (d_temp == nullptr) return axis_temp_bytes<R>(axis, in, opt, device, temp_bytes, message);
  AxisLaunch plan{};
  if (cudaError_t e = plan_axis_launch<R>(axis, in, opt, device, plan, message); e != cudaSuccess) return e;
  if (plan.plan.path == AxisPath::Flat) {
    return reduce_async_impl<R>(d_temp, temp_bytes, in, d_out, plan.layout.length, red, stream, opt, message);
  }
  if (plan.plan.path == AxisPath::Nothing) return cudaSuccess;
  std::size_t needed = plan.plan.temp_bytes;
  if constexpr (two_inputs_v<R>) {
    if (cudaError_t e = axis_temp_bytes<R>(axis, in, opt, device, needed, message); e != cudaSuccess) return e;
  }
  const std::size_t reads = plan.plan.path == AxisPath::Identity ? 0 : 1;
  const ArgumentError error = validate_reduction<R>(in, d_out, d_temp, reads, temp_bytes, needed);
  if (message != nullptr) *message = error.message;
  if (error.code != cudaSuccess) return error.code;
  const cudaError_t launched = launch_axis<R>(plan, d_temp, in, d_out, red, stream);
  if (launched != cudaSuccess && message != nullptr) *message = "a kernel launch failed";
  return launched;
}

// What reduce_axis_async would run (tests and tools).
template <class R>
cudaError_t describe_axis_reduction(const inputs_t<R>& in, const Axis& axis, const Options& options, AxisPlan& plan) {
  const Options opt = exact_length_one_as_fast<R>(axis, options);
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  AxisLaunch launch_plan{};
  if (plan_exact_check<R>(axis, in, opt, device, launch_plan)) {
    plan = launch_plan.plan;
    return cudaSuccess;
  }
  VarianceAxisLaunch variance{};
  cudaError_t e = cudaSuccess;
  if (plan_variance_axis<R>(axis, in, opt, device, variance, e, nullptr)) {
    plan = variance.sums.plan;  // (the first pass's; the squares' takes the same path)
    return e;
  }
  const cudaError_t status = plan_axis_launch<R>(axis, in, opt, device, launch_plan, nullptr);
  plan = launch_plan.plan;
  return status;
}

template <class T, class Op>
cudaError_t describe_axis(const T* d_in, const Axis& axis, const Options& opt, AxisPlan& plan) {
  return describe_axis_reduction<builtin_t<T, Op>>({d_in}, axis, opt, plan);
}

template <class R, class Offset>
cudaError_t reduce_segments_async_impl(void* d_temp, std::size_t& temp_bytes, const inputs_t<R>& in,
                                       typename R::Out* d_out, std::size_t count, const Offset* d_begin,
                                       const Offset* d_end, const R& red, cudaStream_t stream, const Options& opt,
                                       const char** message = nullptr) {
  using T = typename R::Input;
  using P = typename R::Partial;
  auto fail = [&](cudaError_t e, const char* text) { return planning_error(message, e, text); };
  if (!valid_reduction(red, message)) return cudaErrorInvalidValue;
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  bool repro_sum = false;
  if (cudaError_t e = reproducible_form<R>(opt, repro_sum, message); e != cudaSuccess) return e;
  const bool exact = repro_sum && opt.mode == Mode::Exact;  // Mode::Exact's lanes
  const int sms = multiprocessors(device);
  SegmentPlan plan{};
  AxisPlan ordered{};
  KernelFacts main{}, join{};
  std::size_t scan_bytes = 0;
  // Two inputs equally aligned, or one: the vector kernels.
  const bool vectors = vectors_fit<R>(in) || (!two_inputs_v<R> && kVecOf<R> > 1);
  // Past one block's scan, the pieces are scanned by CUB (the balanced kernels: fast, reproducible
  // and exact; not the ordered ones).
  if ((repro_sum || R::commutative) && count > kOneBlockScanMax) {
    if (cudaError_t f = inclusive_scan_pieces(nullptr, scan_bytes, nullptr, nullptr, count, stream); f != cudaSuccess) {
      return fail(f, "segment scan size query");
    }
  }
  if (repro_sum) {
    if constexpr (is_exact_sum_v<R>) {
      using A = acc_t<T, Sum>;
      static_assert(kReproThreads == kAxisThreads, "plan_segments counts the grid's warps as kAxisWarps a block");
      const cudaError_t e = with_exact_lanes(exact, [&]<bool Exact>() {
        if (cudaError_t f = kernel_facts<repro_segments_kernel<T, Offset, Exact, kExactOpOf<R>>, kReproThreads>(device, main);
            f != cudaSuccess) {
          return f;
        }
        return kernel_facts<repro_segments_join_kernel<T, Offset, primitives::kDividesBy<kExactOpOf<R>>>, kReproThreads>(
            device, join);
      });
      if (e != cudaSuccess) return fail(e, "no kernel image for this GPU (segments)");
      // Two rows of limbs per warp of the grid (a head and a tail).
      plan = plan_segments(count, primitives::kExactRowWords<A> * sizeof(unsigned long long), scan_bytes, sms,
                           main.blocks_per_sm, opt.max_blocks);
    } else if constexpr (kTermSum<R>) {
      using O = typename R::Out;
      constexpr LaneTerm kTerm = kLaneTermOf<R>;
      cudaError_t e = kernel_facts<repro_segments_kernel<T, Offset, true, primitives::ExactOp::Sum, kTerm, O>,
                                   kReproThreads>(device, main);
      if (e == cudaSuccess) e = kernel_facts<repro_segments_join_kernel<T, Offset, false, kTerm, O>, kReproThreads>(device, join);
      if (e != cudaSuccess) return fail(e, "no kernel image for this GPU (segments)");
      plan = plan_segments(count, primitives::kExactRowWords<double> * sizeof(unsigned long long), scan_bytes, sms,
                           main.blocks_per_sm, opt.max_blocks);
    } else if constexpr (kVarianceSum<R>) {
      using O = typename R::Out;
      cudaError_t e = kernel_facts<exact_variance_segments_kernel<T, Offset, O>, kReproThreads>(device, main);
      if (e == cudaSuccess) e = kernel_facts<exact_variance_segments_join_kernel<T, Offset, O>, kReproThreads>(device, join);
      if (e != cudaSuccess) return fail(e, "no kernel image for this GPU (exact variance over segments)");
      // Two rows of each format per warp of the grid (a head and a tail).
      plan = plan_segments(count, kVarianceRowBytes, scan_bytes, sms, main.blocks_per_sm, opt.max_blocks);
    }
  } else if constexpr (!R::commutative) {
    const unsigned group = count <= 1024 ? kOrderedThreads : 32;
    if (cudaError_t e = ordered_groups_facts<R, OrderedSegments<Offset>>(group, device, main); e != cudaSuccess) {
      return fail(e, "no kernel image for this GPU (ordered segments)");
    }
    ordered.group = group;
    ordered.grid = static_cast<unsigned>(std::clamp<std::size_t>((count + kOrderedThreads / group - 1) / (kOrderedThreads / group), 1,
                                                                 std::size_t(sms) * std::max(main.blocks_per_sm, 1)));
  } else {
    const cudaError_t e = with_vector_width<R>(vectors, [&]<unsigned V>() {
      if (cudaError_t f = kernel_facts<segments_kernel<V, R, Offset>, kAxisThreads>(device, main); f != cudaSuccess) return f;
      return kernel_facts<segments_join_kernel<R>, kAxisThreads>(device, join);
    });
    if (e != cudaSuccess) return fail(e, "no kernel image for this GPU (segments)");
    plan = plan_segments(count, sizeof(P), scan_bytes, sms, main.blocks_per_sm, opt.max_blocks);
    if constexpr (kScalarVariant<R>) {
      // Two inputs may be read by vectors or not: storage for the slots of either grid.
      KernelFacts other{};
      const cudaError_t g = vectors ? kernel_facts<segments_kernel<1, R, Offset>, kAxisThreads>(device, other)
                                    : kernel_facts<segments_kernel<kVecOf<R>, R, Offset>, kAxisThreads>(device, other);
      if (g != cudaSuccess) return fail(g, "no kernel image for this GPU (segments)");
      plan.temp_bytes = std::max(
          plan.temp_bytes, plan_segments(count, sizeof(P), scan_bytes, sms, other.blocks_per_sm, opt.max_blocks).temp_bytes);
    }
  }
  if (d_temp == nullptr) {
    temp_bytes = plan.temp_bytes;
    return cudaSuccess;
  }
  if (count == 0) return cudaSuccess;
  if (d_begin == nullptr || d_end == nullptr) return fail(cudaErrorInvalidValue, "d_begin or d_end is null");
  if (reinterpret_cast<std::uintptr_t>(d_begin) % alignof(Offset) != 0 ||
      reinterpret_cast<std::uintptr_t>(d_end) % alignof(Offset) != 0) {
    return fail(cudaErrorMisalignedAddress, "d_begin or d_end is not aligned to its offset type");
  }
  const ArgumentError error =
      validate_reduction<R>(in, d_out, d_temp, in.x != nullptr ? 1 : 0, temp_bytes, plan.temp_bytes);
  if (error.code != cudaSuccess) return fail(error.code, error.message);
  if (primitives::check_device_pointer(d_begin) != cudaSuccess || primitives::check_device_pointer(d_end) != cudaSuccess) {
    return fail(cudaErrorInvalidDevicePointer, "d_begin or d_end is host memory the device cannot read");
  }
  if constexpr (!R::commutative) {
    return launch_ordered_groups<R>(ordered.group, ordered.grid, in.x, OrderedSegments<Offset>{d_begin, d_end}, count,
                                    d_out, red, stream);
  } else {
    // The pieces of every segment, counted and scanned.
    char* base = static_cast<char*>(d_temp);
    auto* pieces = reinterpret_cast<unsigned long long*>(base + plan.pieces_offset);
    auto* scan = reinterpret_cast<unsigned long long*>(base + plan.scan_offset);
    cudaError_t status = cudaSuccess;
    const bool one_block = count <= kOneBlockScanMax;
    if (one_block) {
      status = launch(segment_scan_kernel<Offset>, 1, kScanThreads, 0, stream, false, d_begin, d_end, count, scan);
    } else {
      const unsigned count_grid =
          static_cast<unsigned>(std::min<std::size_t>((count + kAxisThreads - 1) / kAxisThreads, 1u << 16));
      status = launch(segment_pieces_kernel<Offset>, count_grid, kAxisThreads, 0, stream, false, d_begin, d_end, count,
                      pieces);
      if (status == cudaSuccess) {
        status = inclusive_scan_pieces(base + plan.scan_temp_offset, scan_bytes, pieces, scan, count, stream);
      }
    }
    if (repro_sum) {
      if (status != cudaSuccess) return status;
      // The warps' runs of tiles (repro_segments.cuh), then the cut segments joined.
      const bool after_scan = one_block && compute_major(device) >= 9 && main.ptx_version >= 90;
      const bool after_main = compute_major(device) >= 9 && join.ptx_version >= 90;
      const std::size_t warps = std::size_t(plan.grid) * (kReproThreads / 32);
      auto* rows = reinterpret_cast<unsigned long long*>(base + plan.slots_offset);
      auto run = [&](auto runs_kernel, auto join_kernel, const auto& args) {
        const cudaError_t s = launch(runs_kernel, plan.grid, kReproThreads, 0, stream, after_scan, args);
        if (s != cudaSuccess) return s;
        return launch(join_kernel, plan.grid, kReproThreads, 0, stream, after_main, args);
      };
      if constexpr (is_exact_sum_v<R>) {
        using A = acc_t<T, Sum>;
        const ReproSegmentArgs<T, Offset> args{in.x,  d_begin, d_end, count, scan, warps, rows, reinterpret_cast<A*>(d_out),
                                               kSumResultType<R>};
        return with_exact_lanes(exact, [&]<bool Exact>() {
          constexpr primitives::ExactOp kOp = kExactOpOf<R>;
          return run(repro_segments_kernel<T, Offset, Exact, kOp>,
                     repro_segments_join_kernel<T, Offset, primitives::kDividesBy<kOp>>, args);
        });
      } else if constexpr (kTermSum<R>) {
        using O = typename R::Out;
        constexpr LaneTerm kTerm = kLaneTermOf<R>;
        const T* y = nullptr;
        if constexpr (two_inputs_v<R>) y = in.y;
        const ReproSegmentArgs<T, Offset, O> args{in.x, d_begin, d_end, count, scan, warps, rows, d_out,
                                                  primitives::ResultType::Acc, y};
        return run(repro_segments_kernel<T, Offset, true, primitives::ExactOp::Sum, kTerm, O>,
                   repro_segments_join_kernel<T, Offset, false, kTerm, O>, args);
      } else if constexpr (kVarianceSum<R>) {
        using O = typename R::Out;
        const VarianceSegmentArgs<T, Offset, O> args{
            {in.x, d_begin, d_end, count, scan, warps, rows, d_out, primitives::ResultType::Acc},
            std::int64_t(red.finish.correction),
            red.finish.root};
        return run(exact_variance_segments_kernel<T, Offset, O>, exact_variance_segments_join_kernel<T, Offset, O>, args);
      }
      return cudaErrorNotSupported;
    }
    P* slots = reinterpret_cast<P*>(base + plan.slots_offset);
    if (status == cudaSuccess) {
      // After the one-block scan, a dependent launch (the kernel waits for the scan first).
      const bool dependent = one_block && compute_major(device) >= 9 && main.ptx_version >= 90;
      status = with_vector_width<R>(vectors, [&]<unsigned V>() {
        return launch(segments_kernel<V, R, Offset>, plan.grid, kAxisThreads, 0, stream, dependent,
                      SegmentArgs<R, Offset>{in, d_begin, d_end, count, scan, slots, d_out}, red);
      });
    }
    if (status == cudaSuccess) {
      const unsigned workers = plan.grid * kAxisWarps;
      const bool dependent = compute_major(device) >= 9 && join.ptx_version >= 90;
      status = launch(segments_join_kernel<R>, plan.grid, kAxisThreads, 0, stream, dependent,
                      static_cast<const unsigned long long*>(scan), count, static_cast<const P*>(slots), workers, d_out,
                      red);
    }
    return status;
  }
}

}  // namespace fastreduce::engine

namespace fastreduce::detail {

// A size query of any of the axis entry points below (every result type of T and Op).
template <class T, class Op>
cudaError_t reduce_axis_size(std::size_t& temp_bytes, const T* d_in, const Axis& axis, Op op, cudaStream_t stream,
                             const Options& opt) {
  return engine::size_for_every_result<T, Op>(temp_bytes, [&]<class R>(std::size_t& bytes) {
    return engine::reduce_axis_async_impl<R>(nullptr, bytes, {d_in}, nullptr, axis, R{op}, stream, opt);
  });
}

// A size query of any of the segmented entry points below.
template <class T, class Op, class Offset>
cudaError_t reduce_segments_size(std::size_t& temp_bytes, const T* d_in, std::size_t num_segments,
                                 const Offset* d_begin, const Offset* d_end, Op op, cudaStream_t stream,
                                 const Options& opt) {
  return engine::size_for_every_result<T, Op>(temp_bytes, [&]<class R>(std::size_t& bytes) {
    return engine::reduce_segments_async_impl<R, Offset>(nullptr, bytes, {d_in}, nullptr, num_segments, d_begin, d_end,
                                                         R{op}, stream, opt);
  });
}

// The axis and segmented entry points of every result type (reduction R): a size query answers for
// all of them, a call runs R.
template <class R, class T, class Op>
cudaError_t axis_entry(void* d_temp, std::size_t& temp_bytes, const T* d_in, typename R::Out* d_out, const Axis& axis,
                       Op op, cudaStream_t stream, const Options& opt) {
  if (d_temp == nullptr) return reduce_axis_size<T, Op>(temp_bytes, d_in, axis, op, stream, opt);
  return engine::reduce_axis_async_impl<R>(d_temp, temp_bytes, {d_in}, d_out, axis, R{op}, stream, opt);
}
template <class R, class T, class Op, class Offset>
cudaError_t segments_entry(void* d_temp, std::size_t& temp_bytes, const T* d_in, typename R::Out* d_out,
                           std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                           cudaStream_t stream, const Options& opt) {
  if (d_temp == nullptr) {
    return reduce_segments_size<T, Op, Offset>(temp_bytes, d_in, num_segments, d_begin, d_end, op, stream, opt);
  }
  return engine::reduce_segments_async_impl<R, Offset>(d_temp, temp_bytes, {d_in}, d_out, num_segments, d_begin, d_end,
                                                       R{op}, stream, opt);
}
// The blocking axis reduction of R.
template <class R, class T, class Op>
void axis_blocking(cudaStream_t stream, const T* d_in, typename R::Out* d_out, const Axis& axis, Op op,
                   const Options& opt) {
  engine::run_blocking_void(stream, "fastreduce::reduce_axis", opt,
                            [&](void* temp, std::size_t& bytes, const Options& o, const char** message) {
                              return engine::reduce_axis_async_impl<R>(temp, bytes, {d_in}, d_out, axis, R{op}, stream,
                                                                       o, message);
                            });
}

template <class T, class Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                              const Axis& axis, Op op, cudaStream_t stream, const Options& opt) {
  return axis_entry<engine::builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, axis, op, stream, opt);
}

template <class T, class Op>
void reduce_axis(cudaStream_t stream, const T* d_in, acc_t<T, Op>* d_out, const Axis& axis, Op op, const Options& opt) {
  axis_blocking<engine::builtin_t<T, Op>>(stream, d_in, d_out, axis, op, opt);
}

template <class T, class Op, class Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                  cudaStream_t stream, const Options& opt) {
  return segments_entry<engine::builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin, d_end, op,
                                                  stream, opt);
}

// Results in the input's own type (half, bfloat16): the kernels with a narrowing projection.
template <class T, class Op>
cudaError_t reduce_axis_async_narrow(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out, const Axis& axis,
                                     Op op, cudaStream_t stream, const Options& opt) {
  return axis_entry<engine::narrow_builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, axis, op, stream, opt);
}
template <class T, class Op>
void reduce_axis_narrow(cudaStream_t stream, const T* d_in, T* d_out, const Axis& axis, Op op, const Options& opt) {
  axis_blocking<engine::narrow_builtin_t<T, Op>>(stream, d_in, d_out, axis, op, opt);
}
template <class T, class Op, class Offset>
cudaError_t reduce_segments_async_narrow(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out,
                                         std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                         cudaStream_t stream, const Options& opt) {
  return segments_entry<engine::narrow_builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin, d_end,
                                                         op, stream, opt);
}

// 4-byte integers' sums and products accumulated and written in 8 bytes.
template <class T, class Op>
cudaError_t reduce_axis_async_wide(void* d_temp, std::size_t& temp_bytes, const T* d_in, wide_t<T>* d_out,
                                   const Axis& axis, Op op, cudaStream_t stream, const Options& opt) {
  return axis_entry<engine::wide_builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, axis, op, stream, opt);
}
template <class T, class Op>
void reduce_axis_wide(cudaStream_t stream, const T* d_in, wide_t<T>* d_out, const Axis& axis, Op op, const Options& opt) {
  axis_blocking<engine::wide_builtin_t<T, Op>>(stream, d_in, d_out, axis, op, opt);
}
template <class T, class Op, class Offset>
cudaError_t reduce_segments_async_wide(void* d_temp, std::size_t& temp_bytes, const T* d_in, wide_t<T>* d_out,
                                       std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                       cudaStream_t stream, const Options& opt) {
  return segments_entry<engine::wide_builtin_t<T, Op>>(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin, d_end, op,
                                                       stream, opt);
}

}  // namespace fastreduce::detail

#define FASTREDUCE_INSTANTIATE_SEGMENTS_WIDE(T, Op, Offset)                                                       \
  template cudaError_t fastreduce::detail::reduce_segments_async_wide<T, Op, Offset>(                            \
      void*, std::size_t&, const T*, fastreduce::wide_t<T>*, std::size_t, const Offset*, const Offset*, Op,       \
      cudaStream_t, const fastreduce::Options&);

// The axis and segmented entry points of 4-byte integers' sums and products in 8 bytes.
#define FASTREDUCE_INSTANTIATE_AXIS_WIDE(T, Op)                                                                    \
  template cudaError_t fastreduce::detail::reduce_axis_async_wide<T, Op>(                                         \
      void*, std::size_t&, const T*, fastreduce::wide_t<T>*, const fastreduce::Axis&, Op, cudaStream_t,           \
      const fastreduce::Options&);                                                                               \
  template void fastreduce::detail::reduce_axis_wide<T, Op>(cudaStream_t, const T*, fastreduce::wide_t<T>*,      \
                                                            const fastreduce::Axis&, Op, const fastreduce::Options&); \
  FASTREDUCE_INSTANTIATE_SEGMENTS_WIDE(T, Op, std::int32_t)                                                      \
  FASTREDUCE_INSTANTIATE_SEGMENTS_WIDE(T, Op, std::int64_t)                                                      \
  FASTREDUCE_INSTANTIATE_SEGMENTS_WIDE(T, Op, std::uint64_t)

#define FASTREDUCE_INSTANTIATE_SEGMENTS_NARROW(T, Op, Offset)                                                  \
  template cudaError_t fastreduce::detail::reduce_segments_async_narrow<T, Op, Offset>(                        \
      void*, std::size_t&, const T*, T*, std::size_t, const Offset*, const Offset*, Op, cudaStream_t,          \
      const fastreduce::Options&);

// The axis and segmented entry points with results in the input's own type.
#define FASTREDUCE_INSTANTIATE_AXIS_NARROW(T, Op)                                                                \
  template cudaError_t fastreduce::detail::reduce_axis_async_narrow<T, Op>(                                     \
      void*, std::size_t&, const T*, T*, const fastreduce::Axis&, Op, cudaStream_t, const fastreduce::Options&); \
  template void fastreduce::detail::reduce_axis_narrow<T, Op>(cudaStream_t, const T*, T*, const fastreduce::Axis&, \
                                                              Op, const fastreduce::Options&);                 \
  FASTREDUCE_INSTANTIATE_SEGMENTS_NARROW(T, Op, std::int32_t)                                                  \
  FASTREDUCE_INSTANTIATE_SEGMENTS_NARROW(T, Op, std::int64_t)                                                  \
  FASTREDUCE_INSTANTIATE_SEGMENTS_NARROW(T, Op, std::uint64_t)

#define FASTREDUCE_INSTANTIATE_SEGMENTS(T, Op, Offset)                                                           \
  template cudaError_t fastreduce::detail::reduce_segments_async<T, Op, Offset>(                                \
      void*, std::size_t&, const T*, fastreduce::acc_t<T, Op>*, std::size_t, const Offset*, const Offset*, Op, \
      cudaStream_t, const fastreduce::Options&);

// The axis and segmented entry points for input T and op Op.
#define FASTREDUCE_INSTANTIATE_AXIS(T, Op)                                                                         \
  template cudaError_t fastreduce::detail::reduce_axis_async<T, Op>(void*, std::size_t&, const T*,                \
                                                                    fastreduce::acc_t<T, Op>*,                    \
                                                                    const fastreduce::Axis&, Op, cudaStream_t,    \
                                                                    const fastreduce::Options&);                  \
  template void fastreduce::detail::reduce_axis<T, Op>(cudaStream_t, const T*, fastreduce::acc_t<T, Op>*,         \
                                                       const fastreduce::Axis&, Op, const fastreduce::Options&); \
  template cudaError_t fastreduce::engine::describe_axis<T, Op>(const T*, const fastreduce::Axis&,                \
                                                                const fastreduce::Options&,                       \
                                                                fastreduce::engine::AxisPlan&);                   \
  FASTREDUCE_INSTANTIATE_SEGMENTS(T, Op, std::int32_t)                                                           \
  FASTREDUCE_INSTANTIATE_SEGMENTS(T, Op, std::int64_t)                                                           \
  FASTREDUCE_INSTANTIATE_SEGMENTS(T, Op, std::uint64_t)
