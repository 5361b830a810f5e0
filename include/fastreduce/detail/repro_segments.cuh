// Reproducible and exact segmented sums, balanced as fast mode's segments (segments.cuh): every
// segment is cut into pieces of one tile (kReproTile elements, counted from the segment's first
// element; an empty segment is one piece), an inclusive scan numbers the pieces, and the grid's
// warps take equal runs of them. A warp sums each segment's tiles in its run with the 1-D code
// (repro_path.cuh: the same lanes, the same tiles), so a segment's limbs are the exact sum of the
// same tile or lane partials whichever warps sum its tiles: the bits are those of the 1-D sum of
// the segment alone (Mode::Reproducible), or its exact sum rounded once (Mode::Exact).
//   - A segment wholly inside a run is rounded and written by its warp.
//   - The part of a segment cut by a run's start goes, unrounded, to the run's head row; the part
//     cut by its end to its tail row (rows of kExactRowWords<A> words in temporary storage).
//   - repro_segments_join_kernel then gives each cut segment to a block, which adds the tail row
//     of the run where it starts and the head rows of the runs it reaches, and rounds the total.
//     Its warps look at eight runs at once (a search of the scan each, a few dependent loads).
// A segment of 2^20 elements is thereby summed by many warps at once, and a million short ones
// by every warp of the grid; before, a block took each segment whole.
#pragma once

#include <cstdint>
#include <type_traits>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/detail/exact_sum.cuh"
#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/repro_path.cuh"
#include "fastreduce/detail/segments.cuh"

namespace fastreduce::engine {

// The segments' scan (segment_pieces_kernel, segment_scan_kernel) counts pieces of kSegmentPiece
// elements: here they are the 1-D sum's tiles.
static_assert(kSegmentPiece == kReproTile, "the segments' pieces must be the reproducible sum's tiles");

// O: the type of out, the sum's accumulator (whose narrow result `result` says) or the L2 norm's
// and dot product's result type; in2: the dot product's second input, else null.
template <class T, class Offset, class O = acc_t<T, Sum>>
struct ReproSegmentArgs {
  const T* in;
  const Offset* begin;
  const Offset* end;
  std::size_t count;
  const unsigned long long* scan;  // inclusive running count of pieces (tiles) per segment
  std::size_t warps;               // the main kernel's warps (its grid times kReproThreads / 32)
  unsigned long long* rows;        // [0, warps): head rows; [warps, 2 warps): tail rows
  O* out;
  primitives::ResultType result;   // the type of out's elements (ResultType::Acc: the accumulator's)
  const T* in2 = nullptr;
};

// f(s, part, w) for each segment part of the run of this warp (the grid's warp w of args.warps), in
// order (for_each_segment_part); nothing where its run is empty (so no barrier of the block may
// follow it).
template <unsigned kWarps, class Args, class F>
__device__ __forceinline__ void for_each_warp_part(const Args& args, F&& f) {
  const std::size_t w = std::size_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  const unsigned long long total = __ldcg(args.scan + args.count - 1);
  const PieceRun run = piece_run(total, w, active_workers(total, args.warps));
  if (run.first >= run.last) return;
  for_each_segment_part(args.scan, args.count, run, threadIdx.x % 32,
                        [&](std::size_t s, const SegmentPart& part) { f(s, part, w); });
}

// Each warp sums its run of tiles, segment by segment. Exact: Mode::Exact's lanes. Op: the sum,
// the sum of the elements' magnitudes (the L1 norm) or the sum divided by the segment's length
// (the mean). Term: the squares (the L2 norm, O its result type) or the products with in2's
// elements (the dot product) on the double lanes, finished as the 1-D exact L2 norm and dot product.
template <class T, class Offset, bool Exact = false, primitives::ExactOp Op = primitives::ExactOp::Sum,
          LaneTerm Term = LaneTerm::Element, class O = acc_t<T, Sum>>
__global__ void __launch_bounds__(kReproThreads) repro_segments_kernel(ReproSegmentArgs<T, Offset, O> args) {
  static_assert(Term == LaneTerm::Element || (Exact && Op == primitives::ExactOp::Sum),
                "squares and products take Mode::Exact's lanes");
  using A = exact_acc_t<T, Term>;
  constexpr bool Abs = primitives::kMagnitudesOf<Op>;
  using primitives::ExactSum;
  constexpr unsigned kWarps = kReproThreads / 32;
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned K = ExactSum<A>::K;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  __shared__ long long slots[kWarps][W];  // a warp's limbs, to be rounded
  __shared__ primitives::LaneLimbs lane_limbs[std::is_same_v<A, float> ? kWarps : 1];
  // Mode::Exact, doubles: each warp's row of handed-on leftovers (WarpSpillRow)
  constexpr bool kSpillRows = Exact && std::is_same_v<A, double>;
  __shared__ long long spill_rows[kSpillRows ? kWarps : 1][kSpillRows ? W : 1];
  __shared__ unsigned spill_flags[kWarps];
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const std::size_t warps = args.warps;
  for_each_warp_part<kWarps>(args, [&](std::size_t s, const SegmentPart& part, std::size_t w) {
    const std::size_t n = segment_length(args.begin, args.end, s);
    const T* p = n > 0 ? args.in + args.begin[s] : args.in;
    const T* p2 = Term == LaneTerm::Product && n > 0 ? args.in2 + args.begin[s] : args.in2;
    // The segment's tiles [t0, t1) (an empty segment: its one piece, nothing to add).
    const std::size_t t0 = static_cast<std::size_t>(part.first);
    const std::size_t t1 = n > 0 ? static_cast<std::size_t>(part.last) : t0;
    const bool aligned = reinterpret_cast<std::uintptr_t>(p) % 16 == 0 &&
                         (Term != LaneTerm::Product || reinterpret_cast<std::uintptr_t>(p2) % 16 == 0);
    ExactSum<A> exact;
    if constexpr (std::is_same_v<A, float>) {
      __syncwarp();  // every lane has read the previous segment's limbs (into) before they are zeroed
      primitives::LaneExact lane_exact(lane_limbs[warp], lane);
      add_float_tiles<T, Exact, Abs>(lane_exact, p, n, t1, t0, 1, aligned, lane);
      lane_exact.into(exact);
    } else {
      add_double_tiles<Exact, Abs, Term>(exact, p, n, t1, t0, 1, aligned, lane, spill_rows[kSpillRows ? warp : 0],
                                         &spill_flags[warp], p2);
    }
    if (!part.cut_before && !part.cut_after) {
#pragma unroll
      for (unsigned k = 0; k < K; ++k) slots[warp][lane + 32 * k] = exact.limb[k];
      if constexpr (Term != LaneTerm::Element) {
        store_term_row<Term>(args.out, s, slots[warp], exact.special, lane);
      } else {
        primitives::store_limb_row<T, primitives::kDividesBy<Op>>(args.out, s, args.result, slots[warp], exact.special,
                                                                 lane, n);
      }
      __syncwarp();  // the row is read before the next segment's limbs are written
    } else {
      unsigned long long* row = args.rows + (part.cut_before ? w : warps + w) * kWords;
#pragma unroll
      for (unsigned k = 0; k < K; ++k) row[lane + 32 * k] = static_cast<unsigned long long>(exact.limb[k]);
      if (lane == 0) row[W] = exact.special;
    }
  });
}

// The joins: each warp of a block looks at one worker's run (kWarps at once, grid-stride); a
// segment that starts in that run and continues past it is then finished by the whole block:
// join(s, from, reached) with `from` the worker whose run it starts in (its tail row) and `reached`
// the number of runs after it that it reaches (their head rows). Every thread of the block calls
// join with the same arguments; it may use the block's barriers.
template <unsigned kWarps, class Join>
__device__ __forceinline__ void join_cut_segments(const unsigned long long* scan, std::size_t count, std::size_t warps,
                                                  Join&& join) {
  __shared__ std::size_t joins[kWarps][2];  // per warp's worker: the segment, and the last run it reaches (or none)
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  if (count == 0) return;
  constexpr std::size_t kNone = ~std::size_t(0);
  const unsigned long long total = __ldcg(scan + count - 1);
  const std::size_t workers = active_workers(total, warps);
  for (std::size_t first = std::size_t(blockIdx.x) * kWarps; first < workers; first += std::size_t(gridDim.x) * kWarps) {
    const std::size_t w = first + warp;
    std::size_t segment = kNone, last = 0;
    if (w < workers) {
      const CutSegment cut = segment_cut_after(scan, count, piece_run(total, w, workers), lane);
      if (cut.found) {
        segment = cut.segment;
        last = worker_of_piece(total, workers, cut.through - 1);  // the last run it reaches
      }
    }
    if (lane == 0) {
      joins[warp][0] = segment;
      joins[warp][1] = last;
    }
    __syncthreads();  // every warp's join is known
    for (unsigned i = 0; i < kWarps; ++i) {
      const std::size_t s = joins[i][0];
      if (s == kNone) continue;
      const std::size_t from = first + i;
      join(s, from, static_cast<unsigned>(joins[i][1] - from));
      __syncthreads();  // the block is done with this join's shared memory before the next
    }
    __syncthreads();  // every warp has read `joins` before the next runs' are written
  }
}

// The joins of repro_segments_kernel's cut segments: the run's tail row and the head rows of the
// runs it reaches, added exactly and rounded once (Divide: divided by the segment's length, the
// mean; Term: the squares' or products' rows, finished as the 1-D exact L2 norm or dot product).
template <class T, class Offset, bool Divide = false, LaneTerm Term = LaneTerm::Element, class O = acc_t<T, Sum>>
__global__ void __launch_bounds__(kReproThreads) repro_segments_join_kernel(ReproSegmentArgs<T, Offset, O> args) {
  static_assert(Term == LaneTerm::Element || !Divide);
  using A = exact_acc_t<T, Term>;
  constexpr unsigned kWarps = kReproThreads / 32;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  __shared__ primitives::ExactShared<A, kWarps> shared;
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const std::size_t warps = args.warps;
  join_cut_segments<kWarps>(args.scan, args.count, warps, [&](std::size_t s, std::size_t from, unsigned reached) {
    const primitives::ExactTotal<A> sum = primitives::gather_exact_rows<A, kWarps, true>(
        args.rows + (from + 1) * kWords, reached, shared, args.rows + (warps + from) * kWords);
    if (sum.limbs != nullptr) {
      if constexpr (Term != LaneTerm::Element) {
        store_term_total<Term>(args.out, s, sum.limbs, sum.negative, sum.special, lane);
      } else {
        primitives::store_exact<T, A, Divide>(args.out, s, args.result, sum.limbs, sum.negative, sum.special, lane,
                                              segment_length(args.begin, args.end, s));
      }
    }
  });
}

// The variance and standard deviation of each segment (float, half and bfloat16 inputs, both modes:
// the bits of the 1-D exact variance of the segment alone), on the same runs of tiles: each warp
// adds its part of a segment's elements and of their squares exactly, each element loaded once
// (add_moment_tiles, the 1-D exact_moments_kernel's lanes). A segment wholly inside a run is
// finished by its warp (store_variance_rows); a cut one leaves two rows, the exact Sum's (float
// format) in `rows` and the squares' (double format) in square_rows(), head or tail as
// repro_segments_kernel's, and exact_variance_segments_join_kernel adds both and finishes it.
template <class T, class Offset, class O>
struct VarianceSegmentArgs : ReproSegmentArgs<T, Offset, O> {
  std::int64_t correction = 0;
  bool root = false;
  // The squares' head rows ([0, warps)) and tail rows ([warps, 2 warps)), after the sums'.
  __device__ unsigned long long* square_rows() const {
    return this->rows + 2 * this->warps * primitives::kExactRowWords<float>;
  }
};
// Temporary storage per head or tail row of the variance over segments: both formats.
inline constexpr std::size_t kVarianceRowBytes =
    (primitives::kExactRowWords<float> + primitives::kExactRowWords<double>) * sizeof(unsigned long long);

// Two blocks an SM, as the 1-D pass (exact_moments_kernel): the double additions need the warps.
template <class T, class Offset, class O>
__global__ void __launch_bounds__(kReproThreads, 2) exact_variance_segments_kernel(VarianceSegmentArgs<T, Offset, O> args) {
  using primitives::ExactSum;
  constexpr unsigned kWarps = kReproThreads / 32;
  constexpr unsigned W1 = ExactSum<float>::kLimbs;
  constexpr unsigned W2 = ExactSum<double>::kLimbs;
  static_assert(ExactSum<float>::K == 1, "a lane holds one limb of the exact Sum's format");
  // Per warp, a segment's pass (the lanes' limbs and the squares' spill row), then its two rows of
  // limbs to be finished: 43 KB for the block (static shared memory stops at 48 KB).
  __shared__ union {
    struct {
      primitives::LaneLimbs lane_limbs;
      long long spill_row[W2];
    } pass;
    struct {
      long long sums[W1];
      long long squares[W2];
    } rows;
  } per_warp[kWarps];
  __shared__ unsigned spill_flags[kWarps];
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const std::size_t warps = args.warps;
  auto& mine = per_warp[warp];
  for_each_warp_part<kWarps>(args, [&](std::size_t s, const SegmentPart& part, std::size_t w) {
    const std::size_t n = segment_length(args.begin, args.end, s);
    const T* p = n > 0 ? args.in + args.begin[s] : args.in;
    const std::size_t t0 = static_cast<std::size_t>(part.first);
    const std::size_t t1 = n > 0 ? static_cast<std::size_t>(part.last) : t0;
    const bool aligned = reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    ExactSum<float> sums;
    ExactSum<double> squares;
    __syncwarp();  // every lane is done with the previous segment's rows before the pass clears them
    primitives::LaneExact lane_exact(mine.pass.lane_limbs, lane);
    add_moment_tiles(lane_exact, squares, p, n, t1, t0, 1, aligned, lane, mine.pass.spill_row, &spill_flags[warp]);
    lane_exact.into(sums);
    const unsigned special = sums.special | squares.special;
    if (!part.cut_before && !part.cut_after) {
      __syncwarp();  // every lane is done with the pass's limbs
      mine.rows.sums[lane] = sums.limb[0];
#pragma unroll
      for (unsigned k = 0; k < ExactSum<double>::K; ++k) mine.rows.squares[lane + 32 * k] = squares.limb[k];
      __syncwarp();
      store_variance_rows(args.out, s, mine.rows.sums, mine.rows.squares, special, n, args.correction, args.root, lane);
    } else {
      const std::size_t r = part.cut_before ? w : warps + w;
      unsigned long long* row1 = args.rows + r * primitives::kExactRowWords<float>;
      unsigned long long* row2 = args.square_rows() + r * primitives::kExactRowWords<double>;
      row1[lane] = static_cast<unsigned long long>(sums.limb[0]);
#pragma unroll
      for (unsigned k = 0; k < ExactSum<double>::K; ++k) row2[lane + 32 * k] = static_cast<unsigned long long>(squares.limb[k]);
      if (lane == 0) {
        row1[W1] = sums.special;
        row2[W2] = squares.special;
      }
    }
  });
}

// The cut segments' variances: both formats' rows added exactly and finished once.
template <class T, class Offset, class O>
__global__ void __launch_bounds__(kReproThreads) exact_variance_segments_join_kernel(VarianceSegmentArgs<T, Offset, O> args) {
  constexpr unsigned kWarps = kReproThreads / 32;
  constexpr unsigned kWords1 = primitives::kExactRowWords<float>;
  constexpr unsigned kWords2 = primitives::kExactRowWords<double>;
  __shared__ primitives::ExactShared<float, kWarps> sums;
  __shared__ primitives::ExactShared<double, kWarps> squares;
  primitives::wait_for_prior_grid();
  const std::size_t warps = args.warps;
  const unsigned long long* rows2 = args.square_rows();
  join_cut_segments<kWarps>(args.scan, args.count, warps, [&](std::size_t s, std::size_t from, unsigned reached) {
    const primitives::ExactTotal<float> s1 = primitives::gather_exact_rows<float, kWarps, true>(
        args.rows + (from + 1) * kWords1, reached, sums, args.rows + (warps + from) * kWords1);
    const primitives::ExactTotal<double> s2 = primitives::gather_exact_rows<double, kWarps, true>(
        rows2 + (from + 1) * kWords2, reached, squares, rows2 + (warps + from) * kWords2);
    if (s1.limbs != nullptr && threadIdx.x == 0) {
      args.out[s] = variance_of_sums<O>(s1.limbs, s2.limbs, s1.special | s2.special,
                                        segment_length(args.begin, args.end, s), args.correction, args.root);
    }
  });
}

}  // namespace fastreduce::engine
