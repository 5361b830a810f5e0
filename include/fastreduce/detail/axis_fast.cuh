// The fast-mode kernels of axis and segmented reductions (paths: detail/axis_plan.hpp), for every
// reduction (detail/reduction.cuh). Each output is reduced by one thread group (a group of
// lanes, a warp or a block) in an order fixed by the shape, the plan and the address modulo 16,
// so results are bitwise repeatable. Pieces of long rows or columns leave partials that a second
// kernel combines in index order (launched with programmatic dependent launch on sm_90, like the
// 1-D engine's combine). No block ever waits for another. The index a reduction's fold sees is
// the element's position along the reduced axis.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/detail/block_reduce.cuh"
#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/detail/vector.cuh"
#include "fastreduce/detail/warp_reduce.cuh"

namespace fastreduce::engine {

using primitives::kFullMask;

// A thread's part of the reduction of elements [0, n) of `in` by a group of Group threads (this
// one is `rank`), folded by r: the elements before the first vector boundary, then whole vectors
// (Unroll in flight, into the thread's states in turn), then the elements after the last whole
// vector. Element k has index `index + k`. (Two inputs: V > 1 only where they are equally aligned.)
template <unsigned Group, unsigned Unroll, unsigned V, class R>
__device__ __forceinline__ typename R::Acc range_partial(const R& r, const inputs_t<R>& in, std::size_t n,
                                                         unsigned rank, std::size_t index) {
  using T = typename R::Input;
  using State = typename R::State;
  constexpr unsigned F = R::folds < Unroll ? R::folds : Unroll;
  constexpr std::size_t kAlign = primitives::kVecAlign<T, V>;
  const std::uintptr_t misalignment = reinterpret_cast<std::uintptr_t>(in.x) % kAlign;
  std::size_t head = misalignment == 0 ? 0 : (kAlign - misalignment) / sizeof(T);
  head = head < n ? head : n;
  const std::size_t vectors = (n - head) / V;
  State s[F];
#pragma unroll
  for (unsigned f = 0; f < F; ++f) s[f] = r.start();
  for (std::size_t k = rank; k < head; k += Group) s[0] = fold_element(r, s[0], in, std::ptrdiff_t(k), index + k);
  std::size_t i = rank;
  for (; i + (Unroll - 1) * Group < vectors; i += Unroll * Group) {
    Loaded<R, V> v[Unroll];
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) v[u] = load_vector<V, primitives::LoadHint::ReadOnly, R>(in, head, i + u * Group);
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) s[u % F] = fold_loaded(r, s[u % F], v[u], index + head + (i + u * Group) * V);
  }
#pragma unroll
  for (unsigned u = 0; u + 1 < Unroll; ++u) {
    if (i + u * Group < vectors) {
      s[u % F] = fold_loaded(r, s[u % F], load_vector<V, primitives::LoadHint::ReadOnly, R>(in, head, i + u * Group),
                             index + head + (i + u * Group) * V);
    }
  }
  for (std::size_t k = head + vectors * V + rank; k < n; k += Group) {
    s[0] = fold_element(r, s[0], in, std::ptrdiff_t(k), index + k);
  }
  typename R::Acc acc = r.value(s[0]);
#pragma unroll
  for (unsigned f = 1; f < F; ++f) acc = r.combine(acc, r.value(s[f]));
  return acc;
}

// Where row r of an axis layout starts, in elements from element (0, 0, 0): row r is output
// r = o * inner + i, its elements contiguous.
struct RowOffsets {
  std::size_t length;
  std::size_t inner;
  std::int64_t outer_stride;
  std::int64_t inner_stride;
  __device__ __forceinline__ std::int64_t operator()(std::size_t r) const {
    if (inner == 1) return static_cast<std::int64_t>(r) * outer_stride;
    return static_cast<std::int64_t>(r / inner) * outer_stride + static_cast<std::int64_t>(r % inner) * inner_stride;
  }
};

// The rows of an axis layout as pointers (the reproducible kernels).
template <class T>
struct AxisRows {
  const T* in;
  RowOffsets offsets;
  __device__ __forceinline__ const T* row(std::size_t r) const { return in + offsets(r); }
};

// N copies of a reduction made by f(0), ..., f(N - 1) (a reduction need not be default-constructible).
template <class R, unsigned N>
struct Units {
  R u[N];
};
template <class R, unsigned N, class F, unsigned... I>
__device__ __forceinline__ Units<R, N> make_units(const F& f, std::integer_sequence<unsigned, I...>) {
  return {{f(I)...}};
}
template <class R, unsigned N, class F>
__device__ __forceinline__ Units<R, N> make_units(const F& f) {
  return make_units<R, N>(f, std::make_integer_sequence<unsigned, N>{});
}

// out[q] = the reduction of no element, for every output (length 0).
template <class R>
__global__ void __launch_bounds__(kAxisThreads) axis_identity_kernel(typename R::Out* out, std::size_t count, R r) {
  const typename R::Out value = r.project(r.partial_identity());
  for (std::size_t q = std::size_t(blockIdx.x) * kAxisThreads + threadIdx.x; q < count;
       q += std::size_t(gridDim.x) * kAxisThreads) {
    if constexpr (kPaddedIndexed<typename R::Out>) store_result(out, q, value);
    else out[q] = value;
  }
}

template <class R>
struct TileArgs {
  inputs_t<R> in;
  std::size_t rows;
  std::size_t length;
  std::size_t rows_per_tile;
  std::size_t tiles;
  unsigned group;  // threads per row: a power of two up to 32
  typename R::Out* out;
};

// Elements of one input a RowsTile block stages (two inputs share the tile's bytes).
template <class R>
inline constexpr std::size_t kTileElems = kAxisPolicy.tile_bytes / (two_inputs_v<R> ? 2 : 1) / sizeof(typename R::Input);

// Stages elements [s, e) of `in` in shared memory `staged` with 16-byte loads: shared element j
// holds element base + j, base the vector boundary at or below s (it may lie before `in`: those
// slots are never read); off = s - base.
template <class T>
__device__ __forceinline__ void stage_tile(const T* in, std::size_t s, std::size_t e, std::size_t off,
                                           primitives::Vec<T>* staged) {
  using primitives::Vec;
  constexpr unsigned V = primitives::kVecElems<T>;
  const std::size_t first_vec = off == 0 ? s : s - off + V;  // first boundary >= s
  const std::size_t end_vec = e >= first_vec ? first_vec + (e - first_vec) / V * V : first_vec;
  const std::size_t vectors = (end_vec - first_vec) / V;
  T* dst = reinterpret_cast<T*>(staged);
  const Vec<T>* src = reinterpret_cast<const Vec<T>*>(in + first_vec);
  Vec<T>* vdst = staged + (first_vec - s + off) / V;
  for (std::size_t j = threadIdx.x; j < vectors; j += kAxisThreads) vdst[j] = primitives::load_vec(src + j);
  const std::size_t lead = (first_vec < e ? first_vec : e) - s;  // elements before the first vector
  if (threadIdx.x < lead) dst[off + threadIdx.x] = in[s + threadIdx.x];
  const std::size_t trail_begin = end_vec > s + lead ? end_vec : s + lead;
  if (trail_begin + threadIdx.x < e) dst[off + trail_begin - s + threadIdx.x] = in[trail_begin + threadIdx.x];
}

// Contiguous short rows: each block stages whole rows (a tile of at most kAxisPolicy.tile_bytes)
// in shared memory with 16-byte loads, then groups of `group` threads reduce a row each and the
// group's first thread writes it. (Inputs of a type that fills 16-byte vectors; two inputs
// equally far from a 16-byte boundary.)
template <class R>
__global__ void __launch_bounds__(kAxisThreads) axis_tile_kernel(TileArgs<R> args, R red) {
  using T = typename R::Input;
  using Acc = typename R::Acc;
  using primitives::Vec;
  constexpr bool kTwo = two_inputs_v<R>;
  using U = std::conditional_t<kTwo, typename R::Input2, T>;
  constexpr unsigned V = primitives::kVecElems<T>;
  static_assert(V * sizeof(T) == 16 && sizeof(U) == sizeof(T), "the tile is staged with 16-byte loads");
  constexpr std::size_t kElems = kTileElems<R>;
  __shared__ Vec<T> staged[kElems / V + 2];
  __shared__ Vec<U> staged_y[kTwo ? kElems / V + 2 : 1];
  const T* smem = reinterpret_cast<const T*>(staged);
  const U* smem_y = reinterpret_cast<const U*>(staged_y);
  const std::uintptr_t misalignment = reinterpret_cast<std::uintptr_t>(args.in.x) % 16;
  const std::size_t head = misalignment == 0 ? 0 : (16 - misalignment) / sizeof(T);  // < V
  const unsigned group = args.group;
  const unsigned rank = threadIdx.x % group;
  for (std::size_t tile = blockIdx.x; tile < args.tiles; tile += gridDim.x) {
    const std::size_t r0 = tile * args.rows_per_tile;
    const std::size_t rows = args.rows - r0 < args.rows_per_tile ? args.rows - r0 : args.rows_per_tile;
    const std::size_t s = r0 * args.length;
    const std::size_t e = s + rows * args.length;
    const std::size_t off = (s + V - head) % V;
    stage_tile(args.in.x, s, e, off, staged);
    if constexpr (kTwo) stage_tile(args.in.y, s, e, off, staged_y);
    __syncthreads();  // the tile is staged
    const unsigned per_pass = kAxisThreads / group;
    // Rows of whole vectors that start on a vector in shared memory are read a vector at a time
    // (4- and 8-byte types: measured slower for 2-byte ones, whose vectors are 8 elements).
    const bool vector_rows = sizeof(T) >= 4 && off == 0 && args.length % V == 0;
    for (std::size_t first_row = 0; first_row < rows; first_row += per_pass) {
      const std::size_t r = first_row + threadIdx.x / group;
      const R u = red.at(r < rows ? smem + off + r * args.length : nullptr);
      typename R::State st = u.start();
      if (r < rows && vector_rows) {
        const Vec<T>* row = staged + r * args.length / V;
        const Vec<U>* row_y = staged_y + (kTwo ? r * args.length / V : 0);
        for (std::size_t j = rank; j < args.length / V; j += group) {
          if constexpr (kTwo) st = u.fold_vec(st, row[j], row_y[j], j * V);
          else st = u.fold_vec(st, row[j], j * V);
        }
      } else if (r < rows) {
        const T* row = smem + off + r * args.length;
        const U* row_y = smem_y + (kTwo ? off + r * args.length : 0);
        for (std::size_t k = rank; k < args.length; k += group) {
          if constexpr (kTwo) st = u.fold(st, row[k], row_y[k], k);
          else st = u.fold(st, row[k], k);
        }
      }
      Acc acc = u.value(st);
      for (unsigned offset = group / 2; offset > 0; offset /= 2) acc = u.combine(acc, primitives::shfl_xor(acc, offset));
      if (r < rows && rank == 0) write_result(u, args.out, r0 + r, u.partial(acc));
    }
    __syncthreads();  // every row is read before the next tile is staged
  }
}

template <class R>
struct LanesArgs {
  inputs_t<R> in;  // 16-byte aligned (two inputs: both)
  std::size_t rows;
  std::size_t length;
  std::size_t vectors;       // whole 16-byte vectors of the rows' elements
  unsigned lanes;            // vectors a row: a power of two up to 64 (lanes a row up to 32, then two
                             // vectors a lane), or 128 (axis_lanes_runs_kernel); 1 where a vector
                             // holds rows
  unsigned rows_per_vector;  // 1, or 2 or 4 rows of V / rows_per_vector elements a vector
  typename R::Out* out;
};

// The unit that reduces a row whose first element is `first` (reduction.cuh's at(): the moments'
// shift; the built-in ops are their own).
template <class R>
__device__ __forceinline__ R row_unit(const R& red, const typename R::Input& first) {
  if constexpr (is_builtin_v<R>) return red;
  else return red.at(&first);
}
// ... whose first element is the first of lane `src`'s vector v (every lane of the warp calls it;
// `loaded`: this lane's v holds data, as does src's where they share a row).
template <class R, unsigned V>
__device__ __forceinline__ R row_unit_from(const R& red, const Loaded<R, V>& v, unsigned src, bool loaded) {
  if constexpr (is_builtin_v<R>) {
    return red;
  } else {
    using T = typename R::Input;
    return row_unit(red, primitives::shfl_idx(loaded ? v.x.elem[0] : T{}, src));
  }
}

// A row of L elements (part of a vector) folded from the empty state as a vector of L (a
// reduction whose fold_vec takes whole 16-byte vectors only, as the arg-extremes': element by
// element, in index order): its result.
template <unsigned L, class R>
__device__ __forceinline__ typename R::Out row_part_result(const R& red, const Loaded<R, L>& part) {
  const R u = row_unit(red, part.x.elem[0]);
  typename R::State s = u.start();
  constexpr bool kFoldsPart = two_inputs_v<R> ? requires { u.fold_vec(s, part.x, part.y, std::size_t(0)); }
                                               : requires { u.fold_vec(s, part.x, std::size_t(0)); };
  if constexpr (kFoldsPart) {
    s = fold_loaded(u, s, part, 0);
  } else {
#pragma unroll
    for (unsigned k = 0; k < L; ++k) {
      if constexpr (two_inputs_v<R>) s = u.fold(s, part.x.elem[k], part.y.elem[k], k);
      else s = u.fold(s, part.x.elem[k], k);
    }
  }
  return u.project(u.partial(u.value(s)));
}

// The K rows of V / K elements in one vector, each written from `first_row` on.
template <unsigned K, unsigned V, class R>
__device__ __forceinline__ void write_rows_of_vector(const R& red, const Loaded<R, V>& v, std::size_t first_row,
                                                     typename R::Out* out) {
  constexpr unsigned L = V / K;
#pragma unroll
  for (unsigned s = 0; s < K; ++s) {
    Loaded<R, L> part;
#pragma unroll
    for (unsigned k = 0; k < L; ++k) {
      part.x.elem[k] = v.x.elem[s * L + k];
      if constexpr (two_inputs_v<R>) part.y.elem[k] = v.y.elem[s * L + k];
    }
    out[first_row + s] = row_part_result(red, part);
  }
}

// Row `row` of V / K elements read on its own (a row past the last whole vector), written as
// write_rows_of_vector writes the others: the same bits for equal rows wherever they lie.
template <unsigned K, unsigned V, class R>
__device__ __forceinline__ void write_row_alone(const R& red, const inputs_t<R>& in, std::size_t row,
                                                typename R::Out* out) {
  constexpr unsigned L = V / K;
  Loaded<R, L> part;
#pragma unroll
  for (unsigned k = 0; k < L; ++k) {
    part.x.elem[k] = in.x[row * L + k];
    if constexpr (two_inputs_v<R>) part.y.elem[k] = in.y[row * L + k];
  }
  out[row] = row_part_result(red, part);
}

// The lanes of one row (`width` of them, a power of two up to 32, aligned) meet in a butterfly
// of shuffles (a fixed order); the row's first lane writes it.
template <class R>
__device__ __forceinline__ void meet_and_write(const R& u, typename R::Acc acc, unsigned width, bool write,
                                               std::size_t row, typename R::Out* out) {
  for (unsigned offset = width / 2; offset > 0; offset /= 2) acc = u.combine(acc, primitives::shfl_xor(acc, offset));
  if (write) write_result(u, out, row, u.partial(acc));
}

// A row's unit where its lanes meet in the Across and runs kernels below, for a reduction with a
// LaneAcc (reduction.cuh): its accumulators take that form. The moments and the mean leave their
// count (the row's length gives it), the arg-extremes keep a 32-bit index. On an H200 at 2^28
// over rows of 64 floats, Nsight Compute counted 440 -> 375 instructions a warp's run (16
// elements a lane) for the variance and 472 -> 411 for argmax; float var over rows of 16 to 256
// ran 1.04-1.09x faster, argmax over rows of 32 to 256 1.06-1.09x (docs/notes.md, "The lanes'
// meeting in fewer words"). A reduction with a lane_partial finishes a row by it, the row's
// length being a power of two (the moments: their offset by a multiplication), and takes the form
// for it on rows of one vector in the butterfly's kernel too (docs/notes.md, "Whole sectors for
// the arg-extremes; the moments' offset by a multiplication"). Other reductions meet as
// themselves (lane_unit_t): their code does not change.
template <class R>
inline constexpr bool kHasLanePartial =
    requires(const R& r, const typename R::LaneAcc& l, std::size_t n) { r.lane_partial(l, n); };
template <class R>
struct LaneForm {
  using Acc = typename R::LaneAcc;
  using Partial = typename R::Partial;
  using Out = typename R::Out;
  R red;
  unsigned elements;  // a row's

  __device__ __forceinline__ Acc combine(const Acc& a, const Acc& b) const { return red.lane_combine(a, b); }
  __device__ __forceinline__ Partial partial(const Acc& a) const {
    if constexpr (kHasLanePartial<R>) return red.lane_partial(a, elements);
    else return red.partial(red.from_lane(a, elements));
  }
  __device__ __forceinline__ Out project(const Partial& p) const { return red.project(p); }
};
template <class R>
inline constexpr bool kHasLaneForm = requires { typename R::LaneAcc; };
// Unit u of a row of `elements` as its LaneForm where Form holds, else as itself.
template <bool Form, class R>
using unit_form_t = std::conditional_t<Form, LaneForm<R>, R>;
template <bool Form, class R>
__device__ __forceinline__ unit_form_t<Form, R> unit_form(const R& u, unsigned elements) {
  if constexpr (Form) return {u, elements};
  else return u;
}
template <class R>
using lane_unit_t = unit_form_t<kHasLaneForm<R>, R>;

// Unit u of a row of `elements` as lane_unit_t; the reduction of such a unit; a row's fold
// (u's Acc) as the unit's accumulator, and the unit's accumulator of no element.
template <class R>
__device__ __forceinline__ lane_unit_t<R> lane_unit(const R& u, unsigned elements) {
  return unit_form<kHasLaneForm<R>>(u, elements);
}
template <class L>
inline constexpr bool kIsLaneForm = false;
template <class R>
inline constexpr bool kIsLaneForm<LaneForm<R>> = true;
template <class L>
__device__ __forceinline__ const auto& lane_red(const L& l) {
  if constexpr (kIsLaneForm<L>) return l.red;
  else return l;
}
template <class L, class A>
__device__ __forceinline__ typename L::Acc lane_acc(const L& l, const A& a) {
  if constexpr (kIsLaneForm<L>) return l.red.to_lane(a);
  else return a;
}
template <class L>
__device__ __forceinline__ typename L::Acc lane_identity(const L& l) {
  return lane_acc(l, lane_red(l).identity());
}

// A lane's accumulators of M runs' rows (one a run), with the rows' units.
template <class R, unsigned M>
struct HeldRuns {
  Units<R, M> units;
  typename R::Acc acc[M];
};

// One step of a reduce-scatter across lanes `o` apart (a power of two, inside rows of 2 * o lanes
// or more): a lane keeps half of its runs, the first half where its bit o is clear, each met with
// its partner's accumulator of the same row, the lower lane's first. Every lane's row then gets
// the tree the butterfly below gives its first lane (the lower half of the lanes first at each
// step), so the bits do not depend on which lane finishes a row; one shuffle a kept run where the
// butterfly takes one a run a step.
template <class R, unsigned M>
__device__ __forceinline__ HeldRuns<R, M / 2> scatter_runs(const HeldRuns<R, M>& h, unsigned o, bool upper) {
  constexpr unsigned H = M / 2;
  using primitives::pick_words;
  HeldRuns<R, H> kept{make_units<R, H>([&](unsigned i) { return pick_words(upper, h.units.u[H + i], h.units.u[i]); }),
                      {}};
#pragma unroll
  for (unsigned i = 0; i < H; ++i) {
    const typename R::Acc got = primitives::shfl_xor(pick_words(upper, h.acc[i], h.acc[H + i]), o);
    kept.acc[i] = kept.units.u[i].combine(pick_words(upper, got, h.acc[i]), pick_words(upper, h.acc[H + i], got));
  }
  return kept;
}

// A lane's part of a warp's run of the rows-as-one-array kernels: vectors first + k * 32 (k <
// kLanesUnroll; first: the run's first vector plus the lane), all loaded before any is reduced;
// Bounded: those before `vectors` alone.
template <bool Bounded, unsigned V, class R>
__device__ __forceinline__ void load_run(Loaded<R, V> (&v)[kLanesUnroll], const inputs_t<R>& in, std::size_t first,
                                         std::size_t vectors) {
#pragma unroll
  for (unsigned k = 0; k < kLanesUnroll; ++k) {
    if (!Bounded || first + k * 32 < vectors) v[k] = load_vector<V, primitives::LoadHint::ReadOnly, R>(in, 0, first + k * 32);
  }
}

// Back-to-back rows of a 16-byte aligned input whose rows are 1 to 64 whole vectors (a power of
// two, `lanes`) or 2 or 4 to a vector (AxisPath::RowsLanes; every commutative reduction whose
// inputs fill 16-byte vectors, for the kinds of row axis_dispatch.cuh's kLanesRows gives it). The
// rows are one array of vectors: a warp loads kLanesUnroll runs of 32 adjacent vectors before it
// reduces any, each lane folds its vector (two, for rows of 64) from the empty state, and the
// lanes of one row meet in a butterfly of shuffles (a fixed order); the row's first lane writes
// it. The reductions other than the built-in ops take a kernel of their own (`Across`) for rows
// of 2 to 64 vectors, where the lanes meet by a reduce-scatter of the runs' rows (scatter_runs:
// a quarter to a half of the butterfly's shuffles, the same bits), and keep the butterfly's
// kernel for the rest: the scatter holds two accumulators live, whose registers (the moments' 64
// -> 79 in one kernel) cost bfloat16 variances over rows of one vector or less 19-23%, H200. In
// that kernel the accumulators meet in their reduction's LaneAcc form where it has one (LaneForm;
// in the butterfly's kernel, the reductions with a lane_partial on rows of one vector).
// The built-in ops keep a butterfly a run on every row (the scatter not measured for them). A row's
// unit (at(), the moments' shift) takes the row's first element from the lane that holds it. Rows
// of part of a vector are folded and written by the lane that holds them; those that end in a
// last partial vector are the first block's, a thread each, folded alike. No shared memory and no
// barrier: on an H200 at 2^28, bfloat16 sums over rows of 2 to 512 elements ran at 39-76% of the
// 1-D GB/s on the tile kernel (staging, then 2-byte reads from shared memory) and a warp a row
// (one or two loads a lane in flight), at 83-98% here (docs/notes.md, "Rows as one array of
// vectors"). Eight rows a vector (bfloat16 rows of one element) ran 3.6x slower than the tile
// kernel: eight scalar stores a lane.
template <unsigned V, class R, bool Across>
__global__ void __launch_bounds__(kAxisThreads) axis_lanes_kernel(LanesArgs<R> args, R red) {
  using T = typename R::Input;
  using Acc = typename R::Acc;
  constexpr unsigned U = kLanesUnroll;
  static_assert(V * sizeof(T) == 16, "inputs read by 16-byte vectors");
  static_assert(U == 4, "rows of 64 vectors take two runs; the reduce-scatter halves four runs in pairs");
  static_assert(!Across || !is_builtin_v<R>, "the built-in ops take one kernel for every row");
  const unsigned lane = threadIdx.x % 32;
  const unsigned lanes = args.lanes;
  const unsigned shift = static_cast<unsigned>(__ffs(static_cast<int>(lanes)) - 1);
  const std::size_t runs = (args.vectors + 32 * U - 1) / (32 * U);
  for (std::size_t run = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32; run < runs;
       run += std::size_t(gridDim.x) * kAxisWarps) {
    const std::size_t first = run * 32 * U + lane;
    Loaded<R, V> v[U];
    load_run<true>(v, args.in, first, args.vectors);
    if (Across && lanes == 64) {
      // Rows of 64 vectors: a lane's runs 2p and 2p + 1 hold its two vectors of row p (of two), from
      // a multiple of 64 on (lane 0's first is the row's first element); they meet, the lanes 16
      // apart scatter the two rows (lanes 0-15 keep the first), then 16 lanes meet in each.
      HeldRuns<lane_unit_t<R>, 2> h{
          make_units<lane_unit_t<R>, 2>([&](unsigned p) {
            return lane_unit(row_unit_from(red, v[2 * p], 0, first + 2 * p * 32 < args.vectors), 64 * V);
          }),
          {}};
#pragma unroll
      for (unsigned p = 0; p < 2; ++p) {
        const R& u = lane_red(h.units.u[p]);
        h.acc[p] = first + 2 * p * 32 < args.vectors
                       ? lane_acc(h.units.u[p],
                                  u.value(fold_loaded(u, fold_loaded(u, u.start(), v[2 * p], std::size_t(lane) * V),
                                                      v[2 * p + 1], std::size_t(lane + 32) * V)))
                       : lane_identity(h.units.u[p]);
      }
      const bool upper = (lane & 16) != 0;
      const HeldRuns<lane_unit_t<R>, 1> row = scatter_runs(h, 16, upper);
      const std::size_t j = first + (upper ? 2 : 0) * 32;
      meet_and_write(row.units.u[0], row.acc[0], 16, j < args.vectors && (lane & 15) == 0, j >> 6, args.out);
    } else if (lanes == 64) {
      // (The built-in ops: a lane's runs k and k + 1 (k even) meet, then the 32 lanes do.)
#pragma unroll
      for (unsigned k = 0; k < U; k += 2) {
        const std::size_t j = first + k * 32;
        const bool mine = j < args.vectors;  // (and so is j + 32: rows are whole)
        const R u = row_unit_from(red, v[k], 0, mine);
        Acc acc = u.identity();
        if (mine) {
          acc = u.value(fold_loaded(u, fold_loaded(u, u.start(), v[k], std::size_t(lane) * V), v[k + 1],
                                    std::size_t(lane + 32) * V));
        }
        meet_and_write(u, acc, 32, mine && lane == 0, j >> 6, args.out);
      }
    } else if (Across) {
      // Rows of 2 to 32 vectors: the lanes lanes / 2 apart scatter runs 0 and 2, then 1 and 3 (the
      // lower lanes keep 0 and 1: two accumulators live, not four), those lanes / 4 apart the two
      // kept (rows of 2 vectors: each lane finishes two), then the lanes of each quarter of a row
      // meet in it.
      const unsigned rank = lane & (lanes - 1);
      const bool upper = (lane & (lanes / 2)) != 0;
      const auto scatter_pair = [&](unsigned k) {
        HeldRuns<lane_unit_t<R>, 2> h{
            make_units<lane_unit_t<R>, 2>([&](unsigned i) {
              return lane_unit(row_unit_from(red, v[k + 2 * i], lane - rank, first + (k + 2 * i) * 32 < args.vectors),
                               lanes * V);
            }),
            {}};
#pragma unroll
        for (unsigned i = 0; i < 2; ++i) {
          const R& u = lane_red(h.units.u[i]);
          h.acc[i] = first + (k + 2 * i) * 32 < args.vectors
                         ? lane_acc(h.units.u[i],
                                    u.value(fold_loaded(u, u.start(), v[k + 2 * i], std::size_t(rank) * V)))
                         : lane_identity(h.units.u[i]);
        }
        return scatter_runs(h, lanes / 2, upper);
      };
      const HeldRuns<lane_unit_t<R>, 1> a = scatter_pair(0);
      const HeldRuns<lane_unit_t<R>, 1> b = scatter_pair(1);
      const HeldRuns<lane_unit_t<R>, 2> half{
          make_units<lane_unit_t<R>, 2>([&](unsigned i) { return i == 0 ? a.units.u[0] : b.units.u[0]; }),
          {a.acc[0], b.acc[0]}};
      const unsigned k0 = upper ? U / 2 : 0;  // the runs this lane kept
      if (lanes == 2) {
#pragma unroll
        for (unsigned i = 0; i < U / 2; ++i) {
          const std::size_t j = first + (k0 + i) * 32;
          if (j < args.vectors) write_result(half.units.u[i], args.out, j >> 1, half.units.u[i].partial(half.acc[i]));
        }
      } else {
        const bool upper2 = (lane & (lanes / 4)) != 0;
        const HeldRuns<lane_unit_t<R>, 1> row = scatter_runs(half, lanes / 4, upper2);
        const std::size_t j = first + (k0 + (upper2 ? 1 : 0)) * 32;
        meet_and_write(row.units.u[0], row.acc[0], lanes / 4, j < args.vectors && (lane & (lanes / 4 - 1)) == 0,
                       j >> shift, args.out);
      }
    } else if (args.rows_per_vector == 1) {
#pragma unroll
      for (unsigned k = 0; k < U; ++k) {
        const std::size_t j = first + k * 32;
        const bool mine = j < args.vectors;  // (a row's lanes are all in or all out: rows are whole vectors)
        const unsigned rank = static_cast<unsigned>(j) & (lanes - 1);
        const R u = row_unit_from(red, v[k], lane - rank, mine);
        // (the LaneForm where R has a lane_partial: the moments' finish in fewer operations)
        const unit_form_t<kHasLanePartial<R>, R> unit = unit_form<kHasLanePartial<R>>(u, lanes * V);
        meet_and_write(unit,
                       mine ? lane_acc(unit, u.value(fold_loaded(u, u.start(), v[k], std::size_t(rank) * V)))
                            : lane_identity(unit),
                       lanes, mine && rank == 0, j >> shift, args.out);
      }
    } else {
#pragma unroll
      for (unsigned k = 0; k < U; ++k) {
        const std::size_t j = first + k * 32;
        if (j >= args.vectors) continue;
        const std::size_t row = j * args.rows_per_vector;
        if (args.rows_per_vector == 2) write_rows_of_vector<2, V>(red, v[k], row, args.out);
        if constexpr (V >= 4) {
          if (args.rows_per_vector == 4) write_rows_of_vector<4, V>(red, v[k], row, args.out);
        }
      }
    }
  }
  if (!Across && blockIdx.x == 0 && args.rows_per_vector > 1) {
    const std::size_t r = args.vectors * args.rows_per_vector + threadIdx.x;
    if (r < args.rows) {
      if (args.rows_per_vector == 2) write_row_alone<2, V>(red, args.in, r, args.out);
      if constexpr (V >= 4) {
        if (args.rows_per_vector == 4) write_row_alone<4, V>(red, args.in, r, args.out);
      }
    }
  }
}

// Rows of 128 vectors (AxisPath::RowsLanes, reductions of one input other than the built-in ops):
// a warp's run of 32 x kLanesUnroll vectors is one row, whose vectors k * 32 + lane are lane's;
// they fold in index order, then the 32 lanes meet in a butterfly, in the LaneAcc form where the
// reduction has one. Such rows took a warp a row (float var, argmax and L2 over rows of 512 at
// 69-80% of Sum, H200). A kernel of its own: as a branch of axis_lanes_kernel's Across form its
// registers cost rows of 2 to 64 vectors up to 15% (docs/notes.md, "Rows of 128 vectors").
template <unsigned V, class R>
__global__ void __launch_bounds__(kAxisThreads) axis_lanes_runs_kernel(LanesArgs<R> args, R red) {
  constexpr unsigned U = kLanesUnroll;
  static_assert(V * sizeof(typename R::Input) == 16, "inputs read by 16-byte vectors");
  const unsigned lane = threadIdx.x % 32;
  const std::size_t rows = args.vectors / (32 * U);  // (whole rows of whole vectors)
  for (std::size_t row = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32; row < rows;
       row += std::size_t(gridDim.x) * kAxisWarps) {
    const std::size_t first = row * 32 * U + lane;
    Loaded<R, V> v[U];
    load_run<false>(v, args.in, first, args.vectors);
    const lane_unit_t<R> unit = lane_unit(row_unit_from(red, v[0], 0, true), 32 * U * V);
    const R& u = lane_red(unit);
    typename R::State s = u.start();
#pragma unroll
    for (unsigned k = 0; k < U; ++k) s = fold_loaded(u, s, v[k], std::size_t(lane + 32 * k) * V);
    meet_and_write(unit, lane_acc(unit, u.value(s)), 32, lane == 0, row, args.out);
  }
}

// An axis of length 1 over adjacent outputs (AxisPath::Map): output q is element q alone, folded
// from the empty state at index 0 by its unit (at() given the loaded copy, as the tile kernel
// gives a staged one: no second load), and projected. A thread loads kMapOutputsPerThread
// outputs' elements (a grid stride apart) before it computes any; scalar loads, as the strided
// kernel's.
template <class R>
__global__ void __launch_bounds__(kAxisThreads)
    axis_map_kernel(inputs_t<R> in, std::size_t count, typename R::Out* out, R red) {
  using T = typename R::Input;
  using U = std::conditional_t<two_inputs_v<R>, typename R::Input2, T>;
  constexpr unsigned kPer = kMapOutputsPerThread;
  const std::size_t stride = std::size_t(gridDim.x) * kAxisThreads;
  for (std::size_t first = std::size_t(blockIdx.x) * kAxisThreads + threadIdx.x; first < count;
       first += kPer * stride) {
    T x[kPer];
    U y[kPer];
#pragma unroll
    for (unsigned k = 0; k < kPer; ++k) {
      const std::size_t q = first + k * stride;
      if (q < count) {
        x[k] = in.x[q];
        if constexpr (two_inputs_v<R>) y[k] = in.y[q];
      }
    }
#pragma unroll
    for (unsigned k = 0; k < kPer; ++k) {
      const std::size_t q = first + k * stride;
      if (q < count) {
        const R u = red.at(x + k);
        typename R::State s = u.start();
        if constexpr (two_inputs_v<R>) s = u.fold(s, x[k], y[k], 0);
        else s = u.fold(s, x[k], 0);
        write_result(u, out, q, u.partial(u.value(s)));
      }
    }
  }
}

template <class R>
struct RowsArgs {
  inputs_t<R> in;
  RowOffsets rows;
  std::size_t items;  // rows * chunks
  unsigned chunks;
  std::size_t chunk;  // elements per piece (the whole row when chunks == 1)
  typename R::Partial* partials;  // chunks > 1: partials[row * chunks + piece]
  typename R::Out* out;
};

// Rows whose elements are contiguous: a warp (Group 32) or the block (Group kAxisThreads) per
// row or piece of a row. Each kernel's bound on blocks an SM (0 emits none, which is not the same
// code as 1: ptxas gave the block-per-row float sum 48 registers under 1 and 32 under none):
// - a warp per row is latency-bound: the built-in ops of float inputs keep eight blocks an SM
//   (32 registers a thread; at 33 to 40 it is six, 7% slower on rows of 256 floats on an H100);
//   the other built-in ops have none, as the kernel had before the one engine. For half and
//   bfloat16 inputs eight spills 4 to 12 bytes: rows of 1024 to 4096 bfloat16 ran 2-12% slower
//   than with none (40 registers, six blocks), rows of 256 3-7% faster;
// - a block per row streams: none for the built-in ops (as the kernel had), except those of
//   2-byte inputs (half, bfloat16, int16), which keep 1: bfloat16 sums and extremes ran 2-6%
//   faster at 53 registers under 1 than at 40 under none;
// - other reductions: 1, or their own kWarpRowsMinBlocks and kBlockRowsMinBlocks (Mode::Exact's
//   check, exact_axis.cuh; the mean, stat_reductions.cuh).
template <class R>
constexpr unsigned warp_rows_min_blocks() {
  if constexpr (requires { R::kWarpRowsMinBlocks; }) return R::kWarpRowsMinBlocks;
  else if constexpr (!is_builtin_v<R>) return 1;
  else return std::is_same_v<typename R::Input, float> ? 8 : 0;
}
template <class R>
constexpr unsigned block_rows_min_blocks() {
  if constexpr (requires { R::kBlockRowsMinBlocks; }) return R::kBlockRowsMinBlocks;
  else if constexpr (!is_builtin_v<R>) return 1;
  else return sizeof(typename R::Input) == 2 ? 1 : 0;
}
template <unsigned Group, class R>
inline constexpr unsigned kRowsMinBlocks = Group == 32 ? warp_rows_min_blocks<R>() : block_rows_min_blocks<R>();

template <unsigned Group, unsigned V, class R>
__global__ void __launch_bounds__(kAxisThreads, kRowsMinBlocks<Group, R>) axis_rows_kernel(RowsArgs<R> args, R red) {
  using Acc = typename R::Acc;
  constexpr unsigned kPerBlock = kAxisThreads / Group;
  __shared__ primitives::BlockReduceStorage<Acc, kAxisThreads> storage;
  const unsigned rank = threadIdx.x % Group;
  for (std::size_t item = std::size_t(blockIdx.x) * kPerBlock + threadIdx.x / Group; item < args.items;
       item += std::size_t(gridDim.x) * kPerBlock) {
    const std::size_t r = item / args.chunks;
    const std::size_t begin = (item % args.chunks) * args.chunk;
    const std::size_t end = begin + args.chunk < args.rows.length ? begin + args.chunk : args.rows.length;
    const inputs_t<R> piece = advance(args.in, args.rows(r) + static_cast<std::int64_t>(begin));
    const R u = red.at(piece.x);
    Acc acc = range_partial<Group, 4, V>(u, piece, end - begin, rank, begin);
    if constexpr (Group == 32) {
      acc = primitives::warp_reduce(acc, combiner_of(u));
    } else {
      acc = primitives::block_reduce<kAxisThreads>(acc, combiner_of(u), storage, u.identity());
    }
    if (rank == 0) {
      if (args.chunks == 1) write_result(u, args.out, r, u.partial(acc));
      else args.partials[item] = u.partial(acc);
    }
    if constexpr (Group != 32) __syncthreads();  // warp 0 is done with `storage`
  }
}

// out[r] = project(merge over the pieces of row r, in piece order): a warp per row.
template <class R>
__global__ void __launch_bounds__(kAxisThreads) combine_row_pieces_kernel(const typename R::Partial* partials,
                                                                          std::size_t rows, unsigned chunks,
                                                                          typename R::Out* out, R r) {
  using P = typename R::Partial;
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t q = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32; q < rows;
       q += std::size_t(gridDim.x) * kAxisWarps) {
    P acc = r.partial_identity();
    for (unsigned c = lane; c < chunks; c += 32) acc = r.merge(acc, primitives::load_from_l2(partials + q * chunks + c));
    acc = primitives::warp_reduce(acc, merger_of(r));
    if (lane == 0) write_result(r, out, q, acc);
  }
}

template <class R>
struct ColumnsArgs {
  inputs_t<R> in;
  std::size_t outer, length, inner;
  std::int64_t outer_stride, length_stride;
  unsigned width;  // packs of columns per block
  unsigned lanes;  // row lanes per block: thread t takes pack t % width, rows t / width + lanes * m
  std::size_t col_blocks;
  unsigned chunks;
  std::size_t chunk;  // rows per piece
  std::size_t items;  // outer * chunks * col_blocks
  typename R::Partial* partials;  // chunks > 1: partials[(o * chunks + piece) * inner + i]
  typename R::Out* out;
};

// Whether a block's lanes of vectors of columns, staged as T, fit 32 KB of shared memory.
template <class R, class T>
inline constexpr bool kColumnStageFits = sizeof(T) * kAxisThreads * kVecOf<R> <= 32768;
// Whether R's vector columns kernel stages its lanes in R's LaneAcc form (reduction.cuh), each
// lane's count of elements restored from its rows: where R says the form holds any count
// (R::kColumnLaneStage: the moments) and its Acc does not fit the stage but the form does (the
// half types' moments: 24 bytes a column, 16 as sums). The other reductions stage their Acc.
template <class R>
__host__ __device__ constexpr bool column_lane_stage() {
  if constexpr (requires { R::kColumnLaneStage; }) {
    return R::kColumnLaneStage && kVecOf<R> > 1 && !kColumnStageFits<R, typename R::Acc> &&
           kColumnStageFits<R, typename R::LaneAcc>;
  } else {
    return false;
  }
}
// What the columns kernel of Pack columns a thread stages a lane's accumulator as.
template <class R, bool Lane>
struct ColumnStage {
  using type = typename R::Acc;
};
template <class R>
struct ColumnStage<R, true> {
  using type = typename R::LaneAcc;
};
template <class R, unsigned Pack>
using column_stage_t = typename ColumnStage<R, Pack != 1 && column_lane_stage<R>()>::type;

// Columns a thread takes at once: a vector's worth where the lanes' values of a block still fit
// 32 KB of shared memory, else one (the scalar column path).
template <class R>
inline constexpr unsigned kColumnPack =
    kColumnStageFits<R, column_stage_t<R, kVecOf<R>>> ? kVecOf<R> : 1u;

// The columns kernel stages thread t's pack of Pack values from value t * stride: the pack, and
// where its values are 16 bytes (the means' sum and count, an arg-extreme's value and index, the
// half types' moments as sums) and there are 2 or more, one value more, an odd count of 16-byte
// chunks, so that a quarter warp's stores of one value of its packs fall in distinct banks. Without
// it they met in a few: the bfloat16 mean's packs of 8, 128 bytes apart, put a quarter warp's
// stores in the same 16 bytes of the banks, 8 times the wavefronts (Nsight Compute, H200, down
// columns of 16 at 2^24: 4.19M store wavefronts, 3.67M of them conflicts; 0.56M padded). A pack's
// values stay in order, so a warp's reads of consecutive columns in the walk fall in distinct
// banks where a quarter warp reads in one pack (packs of 8 or more), two to a chunk with packs of
// 4 and 2. Packs of smaller values keep their order: padded, bfloat16 Sum's 8 floats a thread
// traded its stores' conflicts for its reads' and ran 0.95x down columns of 4.
template <unsigned Pack, std::size_t S>
inline constexpr unsigned kColumnStagePad = S == 16 && Pack > 1 ? 1u : 0u;
template <unsigned Pack, std::size_t S>
inline constexpr unsigned kColumnStageStride = Pack + kColumnStagePad<Pack, S>;

// The columns kernel's bound: a reduction's kColumnsMinBlocks, else none (0 emits no bound, as
// the kernel had; 1 would change the built-in ops' code, as it did the rows kernels'); a vector
// kernel that stages the LaneAcc form, R's kColumnsLaneStageMinBlocks.
template <class R, unsigned Pack>
constexpr unsigned columns_min_blocks() {
  if constexpr (Pack != 1 && column_lane_stage<R>()) return R::kColumnsLaneStageMinBlocks;
  else if constexpr (requires { R::kColumnsMinBlocks; }) return R::kColumnsMinBlocks;
  else return 0;
}

// A column's row lanes after the columns kernel's pass meet in a group of 2^shift threads: the
// most, up to a warp (a group is aligned within one), with no more than one lane each and every
// column's group in one round of the block's threads (so 0 where a round has a column a thread).
__device__ __forceinline__ unsigned column_group_shift(unsigned columns, unsigned lanes) {
  unsigned shift = 0;
  while (shift < 5 && (2u << shift) <= lanes && columns * (2u << shift) <= kAxisThreads) ++shift;
  return shift;
}

// Whether R's columns kernel combines a column's lanes in groups (column_group_shift): where
// R says so (R::kColumnGroups; the arg-extremes). Measured on an H100 (bench-axis, 2^24 floats):
// argmax over columns 5-39% faster; Sum, the moments, the norms and dot the same or up to 20%
// slower, so they keep the walk of a thread a column. (Not profiled; where columns is a multiple
// of 32 a group's reads of `stage` fall group-many to a shared-memory bank, and the butterfly
// costs what a cheap combine saves.)
template <class R>
__host__ __device__ constexpr bool column_groups() {
  if constexpr (requires { R::kColumnGroups; }) return R::kColumnGroups;
  else return false;
}

// Whether R's vector columns kernel loads the first row of a thread's pack of columns as one
// 16-byte vector and gives at() its copies (R::kColumnUnitsByVector: the half types' moments,
// whose at() reads the shift), where each column took a load of its own, its address and its
// bounds: the same values (a vector kernel's packs lie whole inside the array, inner being a
// multiple of the pack). Nsight Compute (H200, main at 6ebeb6f, bfloat16 var down columns of 4 at
// 2^28, the columns kernel): 341.6M warp instructions, about 280 of a warp's 1303 an item in the
// 8 loads of 2 bytes, 656 us; by a vector, 287.1M, 598 us.
template <class R>
__host__ __device__ constexpr bool column_units_by_vector() {
  if constexpr (requires { R::kColumnUnitsByVector; }) return R::kColumnUnitsByVector;
  else return false;
}

// The partial of a column's accumulator v, of the piece's `rows` rows (every column of a piece
// folds them all): by R's lane_partial where R has one and `by_lane` says rows is a power of two
// (the moments: their offset s1 / n by a multiplication, the same bits as the division, as the
// rows kernels finish; LaneForm), else partial(v). The columns kernel's units all share the count,
// so the test is one an item.
template <class R>
__device__ __forceinline__ typename R::Partial column_partial(const R& u, const typename R::Acc& v, bool by_lane,
                                                              std::size_t rows) {
  if constexpr (kHasLanePartial<R>) {
    if (by_lane) return u.lane_partial(u.to_lane(v), rows);
  }
  (void)by_lane;
  (void)rows;
  return u.partial(v);
}

// Inner-contiguous columns: thread t walks down a pack of Pack adjacent columns (a 16-byte
// vector, or one element), taking every lanes-th row of the block's piece; the row lanes' values
// then meet in shared memory in lane order.
template <unsigned Pack, class R>
__global__ void __launch_bounds__(kAxisThreads, columns_min_blocks<R, Pack>())
    axis_columns_kernel(ColumnsArgs<R> args, R red) {
  using Acc = typename R::Acc;
  using State = typename R::State;
  using L = Loaded<R, Pack>;
  using Stage = column_stage_t<R, Pack>;
  constexpr bool kLaneStage = !std::is_same_v<Stage, Acc>;
  constexpr unsigned kStride = kColumnStageStride<Pack, sizeof(Stage)>;  // values a thread's pack
  __shared__ Stage stage[kAxisThreads * kStride];
  const unsigned w = threadIdx.x % args.width;
  const unsigned kk = threadIdx.x / args.width;
  const std::int64_t ls = args.length_stride;
  for (std::size_t item = blockIdx.x; item < args.items; item += gridDim.x) {
    const std::size_t cb = item % args.col_blocks;
    const std::size_t rest = item / args.col_blocks;
    const std::size_t piece = rest % args.chunks;
    const std::size_t o = rest / args.chunks;
    const std::size_t col = (cb * args.width + w) * Pack;
    const std::size_t k_begin = piece * args.chunk;
    // Column c of this piece starts at element (o, k_begin, c).
    const auto column_start = [&](std::size_t c) {
      return static_cast<std::int64_t>(o) * args.outer_stride + static_cast<std::int64_t>(k_begin) * ls +
             static_cast<std::int64_t>(c);
    };
    const Units<R, Pack> units = [&] {
      if constexpr (Pack != 1 && column_units_by_vector<R>()) {
        // The pack's first row as one vector, its elements given to at() by row_unit
        // (column_units_by_vector); zeros where the thread folds none (a unit that folds nothing,
        // as at(nullptr) would give the moments). A pointer into the vector or null, chosen per
        // column, kept the vector in local memory (16 bytes of stack, and fewer of its gains).
        using Row = primitives::Vec<typename R::Input, Pack>;
        Row first{};
        if (kk < args.lanes && col < args.inner) {
          first = primitives::load_vec<primitives::LoadHint::ReadOnly>(reinterpret_cast<const Row*>(args.in.x + column_start(col)));
        }
        return make_units<R, Pack>([&](unsigned e) { return row_unit(red, first.elem[e]); });
      } else {
        return make_units<R, Pack>([&](unsigned e) {
          return red.at(kk < args.lanes && col + e < args.inner ? args.in.x + column_start(col + e) : nullptr);
        });
      }
    }();
    const R* u = units.u;
    State s[Pack];
#pragma unroll
    for (unsigned e = 0; e < Pack; ++e) s[e] = u[e].start();
    if (kk < args.lanes && col < args.inner) {
      const inputs_t<R> base = advance(args.in, static_cast<std::int64_t>(o) * args.outer_stride + static_cast<std::int64_t>(col));
      const std::size_t k_end = k_begin + args.chunk < args.length ? k_begin + args.chunk : args.length;
      std::size_t k = k_begin + kk;
      const std::size_t step = args.lanes;
      const auto fold_row = [&](const L& v, std::size_t row) {
#pragma unroll
        for (unsigned e = 0; e < Pack; ++e) {
          if constexpr (two_inputs_v<R>) s[e] = u[e].fold(s[e], v.x.elem[e], v.y.elem[e], row);
          else s[e] = u[e].fold(s[e], v.x.elem[e], row);
        }
      };
      for (; k + 3 * step < k_end; k += 4 * step) {
        L v[4];
#pragma unroll
        for (unsigned q = 0; q < 4; ++q) v[q] = load_vector<Pack, primitives::LoadHint::ReadOnly, R>(base, static_cast<std::int64_t>(k + q * step) * ls, 0);
#pragma unroll
        for (unsigned q = 0; q < 4; ++q) fold_row(v[q], k + q * step);
      }
      for (; k < k_end; k += step) fold_row(load_vector<Pack, primitives::LoadHint::ReadOnly, R>(base, static_cast<std::int64_t>(k) * ls, 0), k);
    }
    // The piece's rows, which every column of it folds (lanes meet below), and whether that count
    // is a power of two (column_partial).
    const std::size_t rows = args.length - k_begin < args.chunk ? args.length - k_begin : args.chunk;
    const bool rows_by_lane = (rows & (rows - 1)) == 0;
    // Column i's result (chunks 1) or its piece's partial, from its accumulator v.
    const auto finish = [&](const R& uc, std::size_t i, const Acc& v) {
      if (args.chunks == 1) write_result(uc, args.out, o * args.inner + i, column_partial(uc, v, rows_by_lane, rows));
      else args.partials[(o * args.chunks + piece) * args.inner + i] = column_partial(uc, v, rows_by_lane, rows);
    };
    if (kColumnFinish<R> != ColumnFinish::Walk && args.width == kAxisThreads) {
      // One lane a column and every thread one (uniform: a block as wide as its threads, short
      // columns of a wide array): the thread finishes its columns from its registers, as the walk
      // below would (the identity, then the one lane), with no staging, no barrier and no second
      // load of a column's first element for its unit (reduction.cuh, ColumnFinish). A block of
      // 129 to 255 packs has one lane a column too, but threads past its width that hold no
      // column: it walks (a test of the thread here moved the kernels' registers and cost the
      // moments and others up to 5%).
      const auto acc = [&](unsigned e) { return u[e].combine(u[e].identity(), u[e].value(s[e])); };
      if constexpr (kColumnFinish<R> == ColumnFinish::LaneWords) {
        if (args.chunks == 1) {
          const unsigned n = col < args.inner ? static_cast<unsigned>(args.inner - col < Pack ? args.inner - col : Pack) : 0u;
          store_results<Pack>(args.out, o * args.inner + col, n,
                              [&](unsigned e) { return u[e].project(column_partial(u[e], acc(e), rows_by_lane, rows)); });
          continue;
        }
      }
#pragma unroll
      for (unsigned e = 0; e < Pack; ++e) {
        if (col + e >= args.inner) break;
        finish(u[e], col + e, acc(e));
      }
      continue;
    }
#pragma unroll
    for (unsigned e = 0; e < Pack; ++e) {
      if constexpr (kLaneStage) stage[threadIdx.x * kStride + e] = u[e].to_lane(u[e].value(s[e]));
      else stage[threadIdx.x * kStride + e] = u[e].value(s[e]);
    }
    __syncthreads();  // every lane's values are staged
    const unsigned columns = args.width * Pack;
    // Lane l's value of column j as an Acc; in the LaneAcc form with its count of the piece's rows
    // l, l + lanes, ...: q + 1 for the first r lanes, q for the others, where the piece's rows
    // are q lanes + r (one division an item: a division a lane cost bfloat16 var down columns of
    // 256 at 2^24 half its speed).
    std::size_t lane_rows = 0;
    unsigned longer_lanes = 0;
    if constexpr (kLaneStage) {
      lane_rows = rows / args.lanes;
      longer_lanes = static_cast<unsigned>(rows % args.lanes);
    }
    const auto staged = [&](const R& uc, unsigned l, unsigned j) -> decltype(auto) {
      // thread l * width + j / Pack's value j % Pack
      const unsigned at = kStride == Pack ? l * columns + j : (l * args.width + j / Pack) * kStride + j % Pack;
      if constexpr (kLaneStage) return uc.from_lane(stage[at], lane_rows + (l < longer_lanes ? 1 : 0));
      else return static_cast<const Acc&>(stage[at]);  // (a reference: the kernels' code as before)
    };
    const unsigned shift = column_groups<R>() ? column_group_shift(columns, args.lanes) : 0u;
    if (shift == 0) {  // a thread a column walks its lanes in order
      for (unsigned j = threadIdx.x; j < columns; j += kAxisThreads) {
        const std::size_t i = cb * columns + j;
        if (i >= args.inner) break;
        const R uc = red.at(args.in.x + column_start(i));
        Acc v = uc.identity();
        for (unsigned l = 0; l < args.lanes; ++l) v = uc.combine(v, staged(uc, l, j));
        finish(uc, i, v);
      }
    } else {  // (uniform across the block) a group a column: each thread takes every group-th lane
      // in lane order, then the group meets in a butterfly; the order depends only on the plan, so
      // results repeat, and few columns no longer wait on one thread's walk through every lane
      const unsigned group = 1u << shift;
      const unsigned j = threadIdx.x >> shift;
      const std::size_t i = cb * columns + j;
      const bool active = j < columns && i < args.inner;
      const R uc = red.at(active ? args.in.x + column_start(i) : nullptr);
      Acc v = uc.identity();
      if (active) {
        for (unsigned l = threadIdx.x & (group - 1); l < args.lanes; l += group) v = uc.combine(v, staged(uc, l, j));
      }
      for (unsigned offset = group / 2; offset > 0; offset /= 2) v = uc.combine(v, primitives::shfl_xor(v, offset));
      if (active && (threadIdx.x & (group - 1)) == 0) finish(uc, i, v);
    }
    __syncthreads();  // `stage` is read before the next item writes it
  }
}

// out[o * inner + i] = project(merge over the pieces of that column). A block per 32 outputs (its
// lanes): the warps take every kAxisWarps-th piece, then their partials meet in warp order. The
// order depends only on the piece count, so results are repeatable.
template <class R>
__global__ void __launch_bounds__(kAxisThreads) combine_column_pieces_kernel(const typename R::Partial* partials,
                                                                             std::size_t outer, std::size_t inner,
                                                                             unsigned chunks, typename R::Out* out,
                                                                             R r) {
  using P = typename R::Partial;
  __shared__ P stage[kAxisWarps][32];
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  for (std::size_t first = std::size_t(blockIdx.x) * 32; first < outer * inner; first += std::size_t(gridDim.x) * 32) {
    const std::size_t q = first + lane;
    P acc = r.partial_identity();
    if (q < outer * inner) {
      const P* column = partials + (q / inner) * chunks * inner + q % inner;
      unsigned c = warp;
      for (; c + 3 * kAxisWarps < chunks; c += 4 * kAxisWarps) {
        P v[4];
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) v[u] = primitives::load_from_l2(column + std::size_t(c + u * kAxisWarps) * inner);
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) acc = r.merge(acc, v[u]);
      }
      for (; c < chunks; c += kAxisWarps) acc = r.merge(acc, primitives::load_from_l2(column + std::size_t(c) * inner));
    }
    stage[warp][lane] = acc;
    __syncthreads();  // every warp's partial is staged
    if (warp == 0 && q < outer * inner) {
      P total = stage[0][lane];
      for (unsigned w = 1; w < kAxisWarps; ++w) total = r.merge(total, stage[w][lane]);
      write_result(r, out, q, total);
    }
    __syncthreads();  // `stage` is read before the next round writes it
  }
}

template <class R>
struct StridedArgs {
  inputs_t<R> in;
  std::size_t outputs, length, inner;
  std::int64_t outer_stride, length_stride, inner_stride;
  typename R::Out* out;
};

// Any other view: a warp per output, its lanes striding along the reduced axis.
template <class R>
__global__ void __launch_bounds__(kAxisThreads) axis_strided_kernel(StridedArgs<R> args, R red) {
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t q = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32; q < args.outputs;
       q += std::size_t(gridDim.x) * kAxisWarps) {
    const inputs_t<R> base = advance(args.in, static_cast<std::int64_t>(q / args.inner) * args.outer_stride +
                                                  static_cast<std::int64_t>(q % args.inner) * args.inner_stride);
    const R u = red.at(base.x);
    typename R::State s = u.start();
    for (std::size_t k = lane; k < args.length; k += 32) {
      s = fold_element(u, s, base, static_cast<std::int64_t>(k) * args.length_stride, k);
    }
    const typename R::Acc acc = primitives::warp_reduce(u.value(s), combiner_of(u));
    if (lane == 0) write_result(u, args.out, q, u.partial(acc));
  }
}

}  // namespace fastreduce::engine
