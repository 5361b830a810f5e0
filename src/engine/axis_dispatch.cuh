// reduce_axis_async and reduce_segments_async: argument checks, the path (engine/axis_plan.hpp)
// and its launches. Instantiated per input type in engine_<type>.cu, beside the 1-D entry points.
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#include "engine/axis_fast.cuh"
#include "engine/axis_plan.hpp"
#include "engine/axis_repro.cuh"
#include "engine/dispatch.cuh"
#include "engine/repro_pieces.hpp"
#include "engine/segments.cuh"
#include "engine/segments_scan.hpp"

namespace fastreduce::engine {

template <class T, class Op>
struct AxisKernels {
  using A = acc_t<T, Op>;
  static constexpr auto tile = axis_tile_kernel<T, Op>;
  static constexpr auto rows_warp = axis_rows_kernel<32, T, Op>;
  static constexpr auto rows_block = axis_rows_kernel<kAxisThreads, T, Op>;
  static constexpr auto columns = axis_columns_kernel<primitives::kVecElems<T>, T, Op>;
  static constexpr auto columns_scalar = axis_columns_kernel<1, T, Op>;
  static constexpr auto strided = axis_strided_kernel<T, Op>;
  static constexpr auto identity = axis_identity_kernel<A>;
  static constexpr auto combine_rows = combine_row_pieces_kernel<A, Op>;
  static constexpr auto combine_columns = combine_column_pieces_kernel<A, Op>;
};

template <class T>
struct ReproAxisKernels {
  using A = acc_t<T, Sum>;
  static constexpr auto rows_warp = repro_rows_kernel<1, T, AxisRowViews<T>>;
  static constexpr auto rows_block = repro_rows_kernel<kReproThreads / 32, T, AxisRowViews<T>>;
  static constexpr auto columns = repro_columns_kernel<T>;
  static constexpr auto finish = repro_pieces_finish_kernel<A>;
};

template <class T, class Op>
inline constexpr bool is_reproducible_sum_v = std::is_floating_point_v<acc_t<T, Op>> && std::is_same_v<Op, Sum>;

// The plan of an axis reduction on `device`, and whether its second kernel may be a dependent launch.
struct AxisLaunch {
  AxisLayout layout;
  AxisPlan plan;
  bool dependent = false;
};

template <class T, class Op>
cudaError_t plan_axis_launch(const Axis& axis, std::uintptr_t address, const Options& opt, int device, AxisLaunch& out,
                             const char** message) {
  using A = acc_t<T, Op>;
  using K = AxisKernels<T, Op>;
  auto fail = [&](cudaError_t e, const char* text) {
    if (message != nullptr) *message = text;
    return e;
  };
  if (const char* error = resolve_axis(axis, out.layout); error != nullptr) return fail(cudaErrorInvalidValue, error);
  const bool reproducible = opt.mode == Mode::Reproducible;
  if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, Prod>) {
    if (reproducible) return fail(cudaErrorNotSupported, "Mode::Reproducible has no floating-point Prod");
  }
  bool repro_sum = false;
  if constexpr (is_reproducible_sum_v<T, Op>) repro_sum = reproducible;
  if (repro_sum && out.layout.length >= kReproMaxElements) {
    return fail(cudaErrorNotSupported, "Mode::Reproducible sums at most 2^40 elements per output");
  }
  const int sms = multiprocessors(device);
  AxisPath path = choose_axis_path(out.layout, sizeof(T), repro_sum, sms);
  if (path == AxisPath::Columns && !columns_vectorizable(out.layout, sizeof(T), address % 16 == 0)) {
    path = AxisPath::ColumnsScalar;
  }
  KernelFacts main{}, second{};
  cudaError_t status = cudaSuccess;
  bool has_second = false;
  unsigned repro_words = 0;
  switch (path) {
    case AxisPath::Nothing:
    case AxisPath::Flat:
      break;
    case AxisPath::Identity: status = kernel_facts<K::identity, kAxisThreads>(device, main); break;
    case AxisPath::RowsTile: status = kernel_facts<K::tile, kAxisThreads>(device, main); break;
    case AxisPath::RowsWarp: status = kernel_facts<K::rows_warp, kAxisThreads>(device, main); break;
    case AxisPath::RowsBlock:
      status = kernel_facts<K::rows_block, kAxisThreads>(device, main);
      if (status == cudaSuccess) status = kernel_facts<K::combine_rows, kAxisThreads>(device, second);
      has_second = true;
      break;
    case AxisPath::Columns:
    case AxisPath::ColumnsScalar:
      status = path == AxisPath::Columns ? kernel_facts<K::columns, kAxisThreads>(device, main)
                                         : kernel_facts<K::columns_scalar, kAxisThreads>(device, main);
      if (status == cudaSuccess) status = kernel_facts<K::combine_columns, kAxisThreads>(device, second);
      has_second = true;
      break;
    case AxisPath::Strided: status = kernel_facts<K::strided, kAxisThreads>(device, main); break;
    case AxisPath::ReproRows:
    case AxisPath::ReproColumns:
      if constexpr (is_reproducible_sum_v<T, Op>) {
        using R = ReproAxisKernels<T>;
        repro_words = primitives::kExactRowWords<A>;
        if (path == AxisPath::ReproColumns) status = kernel_facts<R::columns, kReproThreads>(device, main);
        else status = kernel_facts<R::rows_block, kReproThreads>(device, main);
        if (status == cudaSuccess) status = kernel_facts<R::finish, kReproThreads>(device, second);
        has_second = true;
      }
      break;
  }
  if (status != cudaSuccess) return fail(status, "no kernel image for this GPU (axis)");
  out.plan = plan_axis(path, out.layout, sizeof(T), sizeof(A), sms, main.blocks_per_sm, opt.max_blocks, repro_words);
  out.dependent = has_second && compute_major(device) >= 9 && second.ptx_version >= 90;
  return cudaSuccess;
}

template <class T, class Op>
cudaError_t launch_axis(const AxisLaunch& launch_plan, void* d_temp, const T* d_in, acc_t<T, Op>* d_out, Op op,
                        cudaStream_t stream) {
  using A = acc_t<T, Op>;
  using K = AxisKernels<T, Op>;
  const AxisLayout& L = launch_plan.layout;
  const AxisPlan& P = launch_plan.plan;
  const unsigned T_ = kAxisThreads;
  A* partials = static_cast<A*>(d_temp);
  const AxisRows<T> rows{d_in, L.length, L.inner, L.outer_stride, L.inner_stride};
  cudaError_t status = cudaSuccess;
  switch (P.path) {
    case AxisPath::Nothing:
    case AxisPath::Flat:
      return cudaSuccess;
    case AxisPath::Identity:
      return launch(K::identity, P.grid, T_, 0, stream, false, d_out, L.outputs(), Op::template identity<A>());
    case AxisPath::RowsTile:
      return launch(K::tile, P.grid, T_, 0, stream, false,
                    TileArgs<T, A>{d_in, L.outputs(), L.length, P.rows_per_tile, P.items, P.group, d_out}, op);
    case AxisPath::RowsWarp:
      return launch(K::rows_warp, P.grid, T_, 0, stream, false, RowsArgs<T, A>{rows, P.items, 1, L.length, nullptr, d_out},
                    op);
    case AxisPath::RowsBlock:
      status = launch(K::rows_block, P.grid, T_, 0, stream, false,
                      RowsArgs<T, A>{rows, P.items, P.chunks, P.chunks == 1 ? L.length : P.chunk, partials, d_out}, op);
      if (status == cudaSuccess && P.combine) {
        const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((L.outputs() + kAxisWarps - 1) / kAxisWarps, 1u << 16));
        status = launch(K::combine_rows, grid, T_, 0, stream, launch_plan.dependent, static_cast<const A*>(partials),
                        L.outputs(), P.chunks, d_out, op);
      }
      return status;
    case AxisPath::Columns:
    case AxisPath::ColumnsScalar: {
      const ColumnsArgs<T, A> args{d_in,           L.outer,   L.length, L.inner, L.outer_stride, L.length_stride,
                                   P.group,        P.lanes,   P.col_blocks, P.chunks, P.chunk,  P.items,
                                   partials,       d_out};
      status = P.path == AxisPath::Columns ? launch(K::columns, P.grid, T_, 0, stream, false, args, op)
                                           : launch(K::columns_scalar, P.grid, T_, 0, stream, false, args, op);
      if (status == cudaSuccess && P.combine) {
        const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((L.outputs() + 31) / 32, 1u << 20));
        status = launch(K::combine_columns, grid, T_, 0, stream, launch_plan.dependent,
                        static_cast<const A*>(partials), L.outer, L.inner, P.chunks, d_out, op);
      }
      return status;
    }
    case AxisPath::Strided:
      return launch(K::strided, P.grid, T_, 0, stream, false,
                    StridedArgs<T, A>{d_in, L.outputs(), L.length, L.inner, L.outer_stride, L.length_stride,
                                      L.inner_stride, d_out},
                    op);
    case AxisPath::ReproRows:
    case AxisPath::ReproColumns:
      if constexpr (is_reproducible_sum_v<T, Op>) {
        using R = ReproAxisKernels<T>;
        auto* pieces = P.combine ? static_cast<unsigned long long*>(d_temp) : nullptr;  // one piece: rounded in place
        if (P.path == AxisPath::ReproRows) {
          const ReproRowsArgs<AxisRowViews<T>, A> args{{rows}, P.items, P.chunks, P.chunk, pieces, d_out};
          status = P.group == 1 ? launch(R::rows_warp, P.grid, kReproThreads, 0, stream, false, args)
                                : launch(R::rows_block, P.grid, kReproThreads, 0, stream, false, args);
        } else {
          const ReproColumnsArgs<T, A> args{d_in,         L.outputs(), L.length,  L.inner, L.outer_stride,
                                            L.length_stride, L.inner_stride, P.group, P.col_blocks, P.chunks,
                                            P.chunk,      P.items,     pieces,    d_out};
          status = launch(R::columns, P.grid, kReproThreads, 0, stream, false, args);
        }
        if (status == cudaSuccess && P.combine) {
          const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((L.outputs() + 7) / 8, 1u << 16));
          status = launch(R::finish, grid, kReproThreads, 0, stream, launch_plan.dependent,
                          static_cast<const unsigned long long*>(pieces), L.outputs(), P.chunks, d_out);
        }
        return status;
      }
      return cudaErrorNotSupported;
  }
  return cudaErrorInvalidValue;
}

template <class T>
cudaError_t plan_repro_pieces(const AxisLayout& layout, const Options& opt, int device, PiecesPlan& out) {
  using A = acc_t<T, Sum>;
  using R = ReproAxisKernels<T>;
  out.layout = layout;
  out.empty = layout.length == 0 || layout.outputs() == 0;
  if (out.empty) return cudaSuccess;
  const bool rows_contiguous = layout.length_stride == 1 || layout.length == 1;
  KernelFacts facts{};
  const cudaError_t e = rows_contiguous ? kernel_facts<R::rows_block, kReproThreads>(device, facts)
                                        : kernel_facts<R::columns, kReproThreads>(device, facts);
  if (e != cudaSuccess) return e;
  out.plan = plan_axis(rows_contiguous ? AxisPath::ReproRows : AxisPath::ReproColumns, layout, sizeof(T), sizeof(A),
                       multiprocessors(device), facts.blocks_per_sm, opt.max_blocks, primitives::kExactRowWords<A>);
  return cudaSuccess;
}

template <class T>
cudaError_t launch_repro_pieces(const PiecesPlan& plan, const T* d_in, unsigned long long* pieces, cudaStream_t stream) {
  using A = acc_t<T, Sum>;
  using R = ReproAxisKernels<T>;
  if (plan.empty) return cudaSuccess;
  const AxisLayout& L = plan.layout;
  const AxisPlan& P = plan.plan;
  if (P.path == AxisPath::ReproRows) {
    const AxisRows<T> rows{d_in, L.length, L.inner, L.outer_stride, L.inner_stride};
    const ReproRowsArgs<AxisRowViews<T>, A> args{{rows}, P.items, P.chunks, P.chunk, pieces, nullptr};
    return P.group == 1 ? launch(R::rows_warp, P.grid, kReproThreads, 0, stream, false, args)
                        : launch(R::rows_block, P.grid, kReproThreads, 0, stream, false, args);
  }
  const ReproColumnsArgs<T, A> args{d_in,    L.outputs(),  L.length, L.inner, L.outer_stride, L.length_stride,
                                    L.inner_stride, P.group, P.col_blocks, P.chunks, P.chunk, P.items, pieces, nullptr};
  return launch(R::columns, P.grid, kReproThreads, 0, stream, false, args);
}

template <class T, class Op>
cudaError_t reduce_axis_async_impl(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                   const Axis& axis, Op op, cudaStream_t stream, const Options& opt,
                                   const char** message = nullptr) {
  using A = acc_t<T, Op>;
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  AxisLaunch plan{};
  if (cudaError_t e = plan_axis_launch<T, Op>(axis, reinterpret_cast<std::uintptr_t>(d_in), opt, device, plan, message);
      e != cudaSuccess) {
    return e;
  }
  if (plan.plan.path == AxisPath::Flat) {
    return reduce_async_impl<T, Op>(d_temp, temp_bytes, d_in, d_out, plan.layout.length, op, stream, opt, message);
  }
  if (d_temp == nullptr) {
    temp_bytes = plan.plan.temp_bytes;
    return cudaSuccess;
  }
  if (plan.plan.path == AxisPath::Nothing) return cudaSuccess;
  const std::size_t reads = plan.plan.path == AxisPath::Identity ? 0 : 1;
  const ArgumentError error =
      validate_arguments(d_in, d_out, d_temp, reads, alignof(T), alignof(A), temp_bytes, plan.plan.temp_bytes);
  if (message != nullptr) *message = error.message;
  if (error.code != cudaSuccess) return error.code;
  return launch_axis<T, Op>(plan, d_temp, d_in, d_out, op, stream);
}

template <class T, class Op>
void reduce_axis_blocking(cudaStream_t stream, const T* d_in, acc_t<T, Op>* d_out, const Axis& axis, Op op,
                          const Options& opt) {
  std::size_t temp_bytes = 0;
  const char* message = nullptr;
  auto fail = [&](cudaError_t status, const char* what) {
    throw Error(status, std::string("fastreduce::reduce_axis: ") + what + ": " +
                            (message != nullptr ? message : cudaGetErrorString(status)));
  };
  if (cudaError_t e = reduce_axis_async_impl<T, Op>(nullptr, temp_bytes, d_in, d_out, axis, op, stream, opt, &message);
      e != cudaSuccess) {
    fail(e, "size query");
  }
  CachedTemp cached{};
  check(acquire_cached_temp(stream, temp_bytes, cached), "fastreduce::reduce_axis: temporary storage");
  message = nullptr;
  if (cudaError_t e =
          reduce_axis_async_impl<T, Op>(cached.temp, cached.temp_bytes, d_in, d_out, axis, op, stream, opt, &message);
      e != cudaSuccess) {
    fail(e, "arguments");
  }
  check(cudaStreamSynchronize(stream), "fastreduce::reduce_axis: kernel");
}

// What reduce_axis_async would run (tests and tools).
template <class T, class Op>
cudaError_t describe_axis(const T* d_in, const Axis& axis, const Options& opt, AxisPlan& plan) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  AxisLaunch launch_plan{};
  const cudaError_t status =
      plan_axis_launch<T, Op>(axis, reinterpret_cast<std::uintptr_t>(d_in), opt, device, launch_plan, nullptr);
  plan = launch_plan.plan;
  return status;
}

template <class T, class Op, class Offset>
cudaError_t reduce_segments_async_impl(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                       std::size_t count, const Offset* d_begin, const Offset* d_end, Op op,
                                       cudaStream_t stream, const Options& opt, const char** message = nullptr) {
  using A = acc_t<T, Op>;
  auto fail = [&](cudaError_t e, const char* text) {
    if (message != nullptr) *message = text;
    return e;
  };
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const bool reproducible = opt.mode == Mode::Reproducible;
  if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, Prod>) {
    if (reproducible) return fail(cudaErrorNotSupported, "Mode::Reproducible has no floating-point Prod");
  }
  bool repro_sum = false;
  if constexpr (is_reproducible_sum_v<T, Op>) repro_sum = reproducible;
  const int sms = multiprocessors(device);
  SegmentPlan plan{};
  KernelFacts main{}, join{};
  std::size_t scan_bytes = 0;
  if (repro_sum) {
    if constexpr (is_reproducible_sum_v<T, Op>) {
      if (cudaError_t e = kernel_facts<repro_rows_kernel<kReproThreads / 32, T, SegmentViews<T, Offset>>, kReproThreads>(
              device, main);
          e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (segments)");
      }
    }
  } else {
    if (cudaError_t e = kernel_facts<segments_kernel<T, Op, Offset>, kAxisThreads>(device, main); e != cudaSuccess) {
      return fail(e, "no kernel image for this GPU (segments)");
    }
    if (cudaError_t e = kernel_facts<segments_join_kernel<A, Op>, kAxisThreads>(device, join); e != cudaSuccess) {
      return fail(e, "no kernel image for this GPU (segments)");
    }
    if (count > 0) {
      if (cudaError_t e = inclusive_scan_pieces(nullptr, scan_bytes, nullptr, nullptr, count, stream); e != cudaSuccess) {
        return fail(e, "segment scan size query");
      }
    }
    plan = plan_segments(count, sizeof(A), scan_bytes, sms, main.blocks_per_sm, opt.max_blocks);
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
      validate_arguments(d_in, d_out, d_temp, d_in != nullptr ? 1 : 0, alignof(T), alignof(A), temp_bytes, plan.temp_bytes);
  if (error.code != cudaSuccess) return fail(error.code, error.message);
  if (primitives::check_device_pointer(d_begin) != cudaSuccess || primitives::check_device_pointer(d_end) != cudaSuccess) {
    return fail(cudaErrorInvalidDevicePointer, "d_begin or d_end is host memory the device cannot read");
  }
  if (repro_sum) {
    if constexpr (is_reproducible_sum_v<T, Op>) {
      const unsigned grid = static_cast<unsigned>(std::min<std::size_t>(
          count, opt.max_blocks > 0 ? opt.max_blocks : std::size_t(std::numeric_limits<int>::max())));
      const ReproRowsArgs<SegmentViews<T, Offset>, A> args{{d_in, d_begin, d_end}, count, 1, kReproMaxElements, nullptr, d_out};
      return launch(repro_rows_kernel<kReproThreads / 32, T, SegmentViews<T, Offset>>, grid, kReproThreads, 0, stream,
                    false, args);
    }
    return cudaErrorNotSupported;
  }
  char* base = static_cast<char*>(d_temp);
  auto* pieces = reinterpret_cast<unsigned long long*>(base + plan.pieces_offset);
  auto* scan = reinterpret_cast<unsigned long long*>(base + plan.scan_offset);
  A* slots = reinterpret_cast<A*>(base + plan.slots_offset);
  const unsigned count_grid = static_cast<unsigned>(std::min<std::size_t>((count + kAxisThreads - 1) / kAxisThreads, 1u << 16));
  cudaError_t status = launch(segment_pieces_kernel<Offset>, count_grid, kAxisThreads, 0, stream, false, d_begin, d_end,
                              count, pieces);
  if (status == cudaSuccess) {
    status = inclusive_scan_pieces(base + plan.scan_temp_offset, scan_bytes, pieces, scan, count, stream);
  }
  if (status == cudaSuccess) {
    status = launch(segments_kernel<T, Op, Offset>, plan.grid, kAxisThreads, 0, stream, false,
                    SegmentArgs<T, A, Offset>{d_in, d_begin, d_end, count, scan, slots, d_out}, op);
  }
  if (status == cudaSuccess) {
    const unsigned workers = plan.grid * kAxisWarps;
    const bool dependent = compute_major(device) >= 9 && join.ptx_version >= 90;
    status = launch(segments_join_kernel<A, Op>, plan.grid, kAxisThreads, 0, stream,
                    dependent, static_cast<const unsigned long long*>(scan), count, static_cast<const A*>(slots), workers,
                    d_out, op);
  }
  return status;
}

}  // namespace fastreduce::engine

namespace fastreduce::detail {

template <class T, class Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                              const Axis& axis, Op op, cudaStream_t stream, const Options& opt) {
  return engine::reduce_axis_async_impl<T, Op>(d_temp, temp_bytes, d_in, d_out, axis, op, stream, opt);
}

template <class T, class Op>
void reduce_axis(cudaStream_t stream, const T* d_in, acc_t<T, Op>* d_out, const Axis& axis, Op op, const Options& opt) {
  engine::reduce_axis_blocking<T, Op>(stream, d_in, d_out, axis, op, opt);
}

template <class T, class Op, class Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                  cudaStream_t stream, const Options& opt) {
  return engine::reduce_segments_async_impl<T, Op, Offset>(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin,
                                                           d_end, op, stream, opt);
}

}  // namespace fastreduce::detail

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
