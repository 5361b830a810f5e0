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
  const std::size_t w = std::size_t(blockIdx.x) * kWarps + warp;
  const std::size_t warps = args.warps;
  const unsigned long long total = __ldcg(args.scan + args.count - 1);
  const std::size_t workers = active_workers(total, warps);
  const PieceRun run = piece_run(total, w, workers);
  if (run.first >= run.last) return;  // (no barrier of the block follows)
  for_each_segment_part(args.scan, args.count, run, lane, [&](std::size_t s, const SegmentPart& part) {
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
// segment that starts in that run and continues past it is then finished by the whole block, from
// the run's tail row and the head rows of the runs it reaches, added exactly and rounded once
// (Divide: divided by the segment's length, the mean; Term: the squares' or products' rows,
// finished as the 1-D exact L2 norm or dot product).
template <class T, class Offset, bool Divide = false, LaneTerm Term = LaneTerm::Element, class O = acc_t<T, Sum>>
__global__ void __launch_bounds__(kReproThreads) repro_segments_join_kernel(ReproSegmentArgs<T, Offset, O> args) {
  static_assert(Term == LaneTerm::Element || !Divide);
  using A = exact_acc_t<T, Term>;
  constexpr unsigned kWarps = kReproThreads / 32;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  __shared__ primitives::ExactShared<A, kWarps> shared;
  __shared__ std::size_t joins[kWarps][2];  // per warp's worker: the segment, and the last run it reaches (or none)
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  if (args.count == 0) return;
  constexpr std::size_t kNone = ~std::size_t(0);
  const unsigned long long total = __ldcg(args.scan + args.count - 1);
  const std::size_t warps = args.warps;
  const std::size_t workers = active_workers(total, warps);
  for (std::size_t first = std::size_t(blockIdx.x) * kWarps; first < workers; first += std::size_t(gridDim.x) * kWarps) {
    const std::size_t w = first + warp;
    std::size_t segment = kNone, last = 0;
    if (w < workers) {
      const CutSegment cut = segment_cut_after(args.scan, args.count, piece_run(total, w, workers), lane);
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
      const primitives::ExactTotal<A> sum = primitives::gather_exact_rows<A, kWarps, true>(
          args.rows + (from + 1) * kWords, static_cast<unsigned>(joins[i][1] - from), shared,
          args.rows + (warps + from) * kWords);
      if (sum.limbs != nullptr) {
        if constexpr (Term != LaneTerm::Element) {
          store_term_total<Term>(args.out, s, sum.limbs, sum.negative, sum.special, lane);
        } else {
          primitives::store_exact<T, A, Divide>(args.out, s, args.result, sum.limbs, sum.negative, sum.special, lane,
                                                segment_length(args.begin, args.end, s));
        }
      }
      __syncthreads();  // warp 0 is done with `shared` before the next rows are gathered
    }
    __syncthreads();  // every warp has read `joins` before the next runs' are written
  }
}

}  // namespace fastreduce::engine
