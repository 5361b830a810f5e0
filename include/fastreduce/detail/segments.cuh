// Segmented reductions in fast mode, balanced without a hint from the caller.
//
// Every segment is cut into pieces of kSegmentPiece elements (an empty one is one piece). An
// inclusive scan of the pieces per segment numbers all pieces; the grid's warps take equal runs of
// them, so a segment of 2^20 elements is spread over many warps and a million tiny segments over
// all of them. A warp reduces each segment's pieces in its run: a segment wholly inside the run is
// written out; the part of a segment cut by the run's start goes to the warp's head slot, the part
// cut by its end to its tail slot. A second kernel gives each cut segment to the warp where it
// starts, which combines its tail slot with the head slots of the following runs in run order.
// The result depends only on the input and the grid: bitwise repeatable. Up to kOneBlockScanMax
// segments the count and scan are one block's work, and the main kernel a dependent launch after
// it (programmatic dependent launch, on sm_90 and later).
#pragma once

#include <cstdint>

#include "fastreduce/detail/axis_fast.cuh"
#include "fastreduce/detail/segment_runs.hpp"

namespace fastreduce::engine {

template <class Offset>
__device__ __forceinline__ std::size_t segment_length(const Offset* begin, const Offset* end, std::size_t s) {
  const Offset b = begin[s], e = end[s];
  return e > b ? static_cast<std::size_t>(e - b) : 0;
}

// The pieces of segment s (at least 1).
template <class Offset>
__device__ __forceinline__ unsigned long long pieces_of(const Offset* begin, const Offset* end, std::size_t s) {
  const std::size_t n = segment_length(begin, end, s);
  return n == 0 ? 1 : n / kSegmentPiece + (n % kSegmentPiece != 0);
}

// pieces[s] = the pieces of segment s (at least 1); the scan then turns them into a running sum.
template <class Offset>
__global__ void __launch_bounds__(kAxisThreads) segment_pieces_kernel(const Offset* begin, const Offset* end,
                                                                      std::size_t count, unsigned long long* pieces) {
  for (std::size_t s = std::size_t(blockIdx.x) * kAxisThreads + threadIdx.x; s < count;
       s += std::size_t(gridDim.x) * kAxisThreads) {
    pieces[s] = pieces_of(begin, end, s);
  }
}

// Up to kOneBlockScanMax segments: their pieces counted and scanned by one block, one launch
// instead of the counting kernel and CUB's two (power-law segments, 2^24 floats in 249, on an
// H100: 43.6 -> 37.7 us). A thread takes at most 4 segments: at 65536 segments, 64 each, the
// block took 230 us.
inline constexpr std::size_t kOneBlockScanMax = 4096;
inline constexpr unsigned kScanThreads = 1024;
static_assert(kOneBlockScanMax <= 4 * kScanThreads, "at most four segments a thread");
static_assert(kScanThreads / 32 <= 32, "one warp scans the warps' totals");
// The sum of v over lanes 0..lane of the warp (Hillis-Steele: five shuffles up).
__device__ __forceinline__ unsigned long long warp_inclusive_sum(unsigned long long v, unsigned lane) {
#pragma unroll
  for (unsigned d = 1; d < 32; d *= 2) {
    const unsigned long long up = __shfl_up_sync(primitives::kFullMask, v, d);
    if (lane >= d) v += up;
  }
  return v;
}
// scan[s] = the pieces of segments 0..s (count <= kOneBlockScanMax): thread t counts a run of
// consecutive segments, the block scans the runs' totals, each thread writes its run.
template <class Offset>
__global__ void __launch_bounds__(kScanThreads) segment_scan_kernel(const Offset* begin, const Offset* end,
                                                                    std::size_t count, unsigned long long* scan) {
  __shared__ unsigned long long warp_totals[kScanThreads / 32];
  const std::size_t per = (count + kScanThreads - 1) / kScanThreads;
  const std::size_t s0 = std::size_t(threadIdx.x) * per;
  const std::size_t s1 = s0 + per < count ? s0 + per : count;
  unsigned long long mine = 0;
  for (std::size_t s = s0; s < s1; ++s) mine += pieces_of(begin, end, s);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned long long incl = warp_inclusive_sum(mine, lane);
  if (lane == 31) warp_totals[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const unsigned long long t = warp_inclusive_sum(lane < kScanThreads / 32 ? warp_totals[lane] : 0ull, lane);
    if (lane < kScanThreads / 32) warp_totals[lane] = t;
  }
  __syncthreads();
  unsigned long long run = incl - mine + (warp > 0 ? warp_totals[warp - 1] : 0);
  for (std::size_t s = s0; s < s1; ++s) {
    run += pieces_of(begin, end, s);
    scan[s] = run;
  }
}

// The first segment whose running piece count exceeds `piece` (count if none), found by a whole
// warp (every lane gets it): each round, lane l reads the scan at the end of the l-th of 32 equal
// parts of the range left, and the ballot keeps the first part whose end exceeds `piece`. log32 of
// the segments' count rounds of dependent loads (2 for 249 segments) instead of log2 (8). Both
// kernels of the segments search once per warp: on an H100, float Sum over 249 power-law segments
// of 2^24 36.7 -> 35.8 us, over 4096 rows of 4096 as segments 39.7 -> 36.4, over 65536 of 256
// 48.1 -> 44.6.
__device__ __forceinline__ std::size_t segment_of_piece(const unsigned long long* scan, std::size_t count,
                                                        unsigned long long piece, unsigned lane) {
  std::size_t lo = 0, hi = count;  // the answer lies in [lo, hi]; hi = count: none exceeds
  while (lo < hi) {
    const std::size_t step = (hi - lo + 31) / 32;
    const std::size_t end = lo + (lane + 1) * step - 1;  // the last segment of part `lane`
    // Parts past the range count as exceeding: the answer is at most hi.
    // Plain loads, which L1 may keep (every warp's first round reads the same 32 places): with
    // __ldcg the 249 power-law segments of 2^24 floats took 37.4 us against 35.8 on an H100.
    const bool exceeds = end >= hi || scan[end] > piece;
    const unsigned mask = __ballot_sync(primitives::kFullMask, exceeds);
    if (mask == 0) return hi;  // 32 parts end exactly at hi - 1, none exceeding
    const unsigned first = static_cast<unsigned>(__ffs(mask) - 1);
    const std::size_t part_end = lo + (first + 1) * step - 1;
    lo += first * step;
    hi = part_end < hi ? part_end : hi;
  }
  return lo;
}

// The part of segment s in a run: its pieces [first, last), counted from the segment's first
// piece, and whether the run's start or end cuts the segment there.
struct SegmentPart {
  unsigned long long first, last;
  bool cut_before, cut_after;
};
// f(s, part) for each segment that a (non-empty) run of pieces touches, in order; every lane of
// the warp calls it with the same arguments.
template <class F>
__device__ __forceinline__ void for_each_segment_part(const unsigned long long* scan, std::size_t count,
                                                      const PieceRun& run, unsigned lane, F&& f) {
  std::size_t s = segment_of_piece(scan, count, run.first, lane);
  unsigned long long piece = run.first;
  unsigned long long before = s > 0 ? __ldcg(scan + s - 1) : 0;  // pieces of the segments before s
  while (piece < run.last) {
    const unsigned long long through = __ldcg(scan + s);
    const unsigned long long stop = through < run.last ? through : run.last;
    f(s, SegmentPart{piece - before, stop - before, piece > before, stop < through});
    piece = stop;
    before = through;
    ++s;
  }
}

// The segment that starts in a (non-empty) run and continues past its end, if any: the one the
// join kernels finish from that run. `through`: the pieces of the segments up to it, itself
// included. Every lane of the warp calls it and gets the answer.
struct CutSegment {
  bool found;
  std::size_t segment;
  unsigned long long through;
};
__device__ __forceinline__ CutSegment segment_cut_after(const unsigned long long* scan, std::size_t count,
                                                        const PieceRun& run, unsigned lane) {
  const std::size_t s = segment_of_piece(scan, count, run.last - 1, lane);
  const unsigned long long through = __ldcg(scan + s);
  const unsigned long long before = s > 0 ? __ldcg(scan + s - 1) : 0;
  return {through > run.last && before >= run.first, s, through};  // cut after, and started here
}

template <class R, class Offset>
struct SegmentArgs {
  inputs_t<R> in;
  const Offset* begin;
  const Offset* end;
  std::size_t count;
  const unsigned long long* scan;  // inclusive running count of pieces
  typename R::Partial* slots;      // [0, workers): head slots; [workers, 2 workers): tail slots
  typename R::Out* out;
};

template <unsigned V, class R, class Offset>
__global__ void __launch_bounds__(kAxisThreads) segments_kernel(SegmentArgs<R, Offset> args, R red) {
  using Acc = typename R::Acc;
  primitives::wait_for_prior_grid();
  const std::size_t w = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  const unsigned long long total = __ldcg(args.scan + args.count - 1);
  const std::size_t workers = active_workers(total, std::size_t(gridDim.x) * kAxisWarps);
  const std::size_t slots = std::size_t(gridDim.x) * kAxisWarps;
  const PieceRun run = piece_run(total, w, workers);
  if (run.first >= run.last) return;
  for_each_segment_part(args.scan, args.count, run, lane, [&](std::size_t s, const SegmentPart& p) {
    const std::size_t n = segment_length(args.begin, args.end, s);
    const std::size_t from = static_cast<std::size_t>(p.first) * kSegmentPiece;
    std::size_t to = static_cast<std::size_t>(p.last) * kSegmentPiece;
    to = to < n ? to : n;
    const inputs_t<R> part = advance(args.in, static_cast<std::int64_t>(args.begin[s]) + static_cast<std::int64_t>(from));
    const R u = red.at(from < to ? part.x : nullptr);
    Acc acc = u.identity();
    if (from < to) acc = range_partial<32, 4, V>(u, part, to - from, lane, from);
    acc = primitives::warp_reduce(acc, combiner_of(u));
    if (lane == 0) {
      if (!p.cut_before && !p.cut_after) write_result(u, args.out, s, u.partial(acc));
      else if (p.cut_before) args.slots[w] = u.partial(acc);
      else args.slots[slots + w] = u.partial(acc);
    }
  });
}

// A warp per worker: a segment that starts in its run and continues past it is finished here,
// from its tail slot and the head slots of the runs it reaches (the warp's lanes take every 32nd
// of them, then a fixed butterfly joins the lanes: the order depends only on the runs).
template <class R>
__global__ void __launch_bounds__(kAxisThreads) segments_join_kernel(const unsigned long long* scan, std::size_t count,
                                                                     const typename R::Partial* slots, unsigned warps,
                                                                     typename R::Out* out, R r) {
  using P = typename R::Partial;
  primitives::wait_for_prior_grid();
  const std::size_t w = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  if (w >= warps || count == 0) return;
  const unsigned long long total = __ldcg(scan + count - 1);
  const std::size_t workers = active_workers(total, warps);
  const PieceRun run = piece_run(total, w, workers);
  if (run.first >= run.last) return;
  const CutSegment cut = segment_cut_after(scan, count, run, lane);
  if (!cut.found) return;
  const std::size_t s = cut.segment;
  const unsigned long long through = cut.through;
  P acc = r.partial_identity();
  for (std::size_t next = w + 1 + lane; next < workers; next += 32) {
    const PieceRun q = piece_run(total, next, workers);
    if (q.first >= through) break;
    if (q.first < q.last) acc = r.merge(acc, primitives::load_from_l2(slots + next));
  }
  acc = primitives::warp_reduce(acc, merger_of(r));
  if (lane == 0) write_result(r, out, s, r.merge(primitives::load_from_l2(slots + warps + w), acc));
}

}  // namespace fastreduce::engine
