// Reproducible axis sums: every output bitwise equal to the 1-D reproducible reduce
// (engine/repro_path.cuh) of its own elements alone. (Segments: repro_segments.cuh.)
//
// The 1-D sum's bits are fixed by the length of what is summed: tile t of kReproTile elements,
// lane l of 32 taking the vectors l, l + 32, ... of it (element by element, even and odd elements
// in two TwoSum chains); each lane's partial (float-valued sums) or each tile's butterfly of the
// lane partials (double sums) meets the others in an exact fixed-point accumulator, rounded once.
// Which thread computes a lane's partial, and in what order the exact additions happen, cannot
// change a bit. So:
//   - rows with contiguous elements are summed by the 1-D code itself, a warp (or
//     the 8 warps of a block, for long rows) per row, pieces of very long rows in several blocks;
//   - any other layout (columns) lets thread u of a warp take output u and compute lane l's
//     partial of a tile for it: the warp's loads then read adjacent columns of one row. Lane
//     partials of float-valued sums go into the output's exact accumulator in shared memory with
//     integer atomics; double sums stage the 32 lane partials of a tile and replay the 1-D
//     butterfly in its order before their exact addition.
#pragma once

#include <cstdint>

#include "fastreduce/detail/axis_fast.cuh"
#include "fastreduce/detail/repro_path.cuh"
#include "fastreduce/detail/exact_sum.cuh"

namespace fastreduce::engine {

template <class T>
struct RowView {
  const T* p;
  std::size_t n;
  const T* p2 = nullptr;  // the second input's row (a sum of products), else null
};

// The rows of an axis layout, as views; in2: a second input of the same layout (the dot
// product), or null.
template <class T>
struct AxisRowViews {
  AxisRows<T> rows;
  const T* in2 = nullptr;
  __device__ __forceinline__ RowView<T> operator()(std::size_t r) const {
    const std::int64_t offset = rows.offsets(r);
    return {rows.in + offset, rows.offsets.length, in2 != nullptr ? in2 + offset : nullptr};
  }
};

// O: the type of out (the sums' accumulator, whose narrow result `result` says; or the L2 norm's
// and dot product's result type).
template <class Rows, class O>
struct ReproRowsArgs {
  Rows rows;
  std::size_t items;  // rows * chunks
  unsigned chunks;
  std::size_t tiles_per_chunk;
  unsigned long long* pieces;  // not null: a row of kExactRowWords words (the accumulator's) per item, else out is written
  O* out;
  primitives::ResultType result;  // the type of out's elements (ResultType::Acc: O)
};

// The output type of the exact axis kernels: the sum's accumulator, or O for the squares and
// products (LaneTerm::Square, LaneTerm::Product), which store their own finish (store_term_row).
template <class T, LaneTerm Term, class O>
using exact_out_t = std::conditional_t<Term == LaneTerm::Element, acc_t<T, Sum>, O>;

// WarpsPerRow warps sum a row (or a piece of it) with the 1-D code: their tiles round the warps.
// Exact: Mode::Exact's lanes. Op: the sum, the sum of the elements' magnitudes (the L1 norm) or
// the sum divided by the row's length (the mean). Term: the sum of the elements' squares (the L2
// norm, O its result type) or of their products with the second input's (the dot product), on
// Mode::Exact's double lanes as the 1-D exact_terms_kernel, finished as it is.
template <unsigned WarpsPerRow, class T, class Rows, bool Exact = false, primitives::ExactOp Op = primitives::ExactOp::Sum,
          LaneTerm Term = LaneTerm::Element, class O = acc_t<T, Sum>>
__global__ void __launch_bounds__(kReproThreads) repro_rows_kernel(ReproRowsArgs<Rows, exact_out_t<T, Term, O>> args) {
  static_assert(Term == LaneTerm::Element || (Exact && Op == primitives::ExactOp::Sum),
                "squares and products take Mode::Exact's lanes");
  using A = exact_acc_t<T, Term>;
  constexpr bool Abs = primitives::kMagnitudesOf<Op>;
  using primitives::ExactSum;
  constexpr unsigned kWarps = kReproThreads / 32;
  constexpr unsigned kGroups = kWarps / WarpsPerRow;
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned K = ExactSum<A>::K;
  __shared__ long long slots[kWarps][W];
  __shared__ unsigned specials[kWarps];
  __shared__ primitives::LaneLimbs lane_limbs[std::is_same_v<A, float> ? kWarps : 1];
  // Mode::Exact, doubles: each warp's row of handed-on leftovers (WarpSpillRow)
  constexpr bool kSpillRows = Exact && std::is_same_v<A, double>;
  __shared__ long long spill_rows[kSpillRows ? kWarps : 1][kSpillRows ? W : 1];
  __shared__ unsigned spill_flags[kWarps];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned rank = warp % WarpsPerRow;
  auto barrier = [] {
    if constexpr (WarpsPerRow == 1) __syncwarp();
    else __syncthreads();
  };
  for (std::size_t base = std::size_t(blockIdx.x) * kGroups; base < args.items;
       base += std::size_t(gridDim.x) * kGroups) {
    const std::size_t item = base + warp / WarpsPerRow;
    const bool valid = item < args.items;
    ExactSum<A> exact;
    std::size_t r = 0, length = 0;
    if (valid) {
      r = item / args.chunks;
      const RowView<T> row = args.rows(r);
      length = row.n;
      const std::size_t tiles = row.n / kReproTile + (row.n % kReproTile != 0);
      const std::size_t t0 = (item % args.chunks) * args.tiles_per_chunk;
      const std::size_t t1 = t0 + args.tiles_per_chunk < tiles ? t0 + args.tiles_per_chunk : tiles;
      const bool aligned = reinterpret_cast<std::uintptr_t>(row.p) % 16 == 0 &&
                           (Term != LaneTerm::Product || reinterpret_cast<std::uintptr_t>(row.p2) % 16 == 0);
      if constexpr (std::is_same_v<A, float>) {
        primitives::LaneExact lane_exact(lane_limbs[warp], lane);
        add_float_tiles<T, Exact, Abs>(lane_exact, row.p, row.n, t1, t0 + rank, WarpsPerRow, aligned, lane);
        lane_exact.into(exact);
      } else {
        add_double_tiles<Exact, Abs, Term>(exact, row.p, row.n, t1, t0 + rank, WarpsPerRow, aligned, lane,
                                           spill_rows[kSpillRows ? warp : 0], &spill_flags[warp], row.p2);
      }
    }
#pragma unroll
    for (unsigned k = 0; k < K; ++k) slots[warp][lane + 32 * k] = exact.limb[k];
    if (lane == 0) specials[warp] = exact.special;
    barrier();  // the group's accumulators are in shared memory
    if (valid && rank == 0) {
      unsigned special = specials[warp];
#pragma unroll
      for (unsigned k = 0; k < K; ++k) {
        long long sum = slots[warp][lane + 32 * k];
        for (unsigned g = 1; g < WarpsPerRow; ++g) sum += slots[warp + g][lane + 32 * k];
        slots[warp][lane + 32 * k] = sum;
      }
      for (unsigned g = 1; g < WarpsPerRow; ++g) special |= specials[warp + g];
      __syncwarp();
      if (args.pieces == nullptr) {
        if constexpr (Term != LaneTerm::Element) {
          store_term_row<Term>(args.out, r, slots[warp], special, lane);
        } else {
          primitives::store_limb_row<T, primitives::kDividesBy<Op>>(args.out, r, args.result, slots[warp], special, lane,
                                                                   length);
        }
      } else {
        unsigned long long* piece = args.pieces + item * primitives::kExactRowWords<A>;
#pragma unroll
        for (unsigned k = 0; k < K; ++k) piece[lane + 32 * k] = static_cast<unsigned long long>(slots[warp][lane + 32 * k]);
        if (lane == 0) piece[W] = special;
      }
    }
    barrier();  // the slots are read before the next item writes them
  }
}

// One warp: the pieces' rows of output q (`chunks` rows of kExactRowWords<A> words each) added into
// `slots` (the warp's row of signed limbs in shared memory); returns their flags (every lane).
template <class A>
__device__ __forceinline__ unsigned add_pieces(const unsigned long long* pieces, std::size_t q, unsigned chunks,
                                               long long* slots, unsigned lane) {
  constexpr unsigned W = primitives::ExactSum<A>::kLimbs;
  constexpr unsigned K = primitives::ExactSum<A>::K;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  long long acc[K] = {};
  unsigned special = 0;
  for (unsigned c = 0; c < chunks; ++c) {
    const unsigned long long* row = pieces + (q * chunks + c) * kWords;
#pragma unroll
    for (unsigned k = 0; k < K; ++k) acc[k] += static_cast<long long>(__ldcg(row + lane + 32 * k));
    if (lane == 0) special |= static_cast<unsigned>(__ldcg(row + W));
  }
#pragma unroll
  for (unsigned k = 0; k < K; ++k) slots[lane + 32 * k] = acc[k];
  __syncwarp();
  return __shfl_sync(primitives::kFullMask, special, 0);
}

// One warp per output: the exact sum of its pieces' rows, rounded once (Divide: divided by
// `divisor`, the mean). Term: rows of squares or products (A double), finished as the 1-D exact
// L2 norm or dot product into O.
template <class A, bool Divide = false, LaneTerm Term = LaneTerm::Element, class O = A>
__global__ void __launch_bounds__(kReproThreads) repro_pieces_finish_kernel(const unsigned long long* pieces,
                                                                            std::size_t outputs, unsigned chunks,
                                                                            O* out, primitives::ResultType result,
                                                                            std::uint64_t divisor) {
  static_assert(Term == LaneTerm::Element ? std::is_same_v<A, O> : std::is_same_v<A, double> && !Divide);
  constexpr unsigned kWarps = kReproThreads / 32;
  __shared__ long long slots[kWarps][primitives::ExactSum<A>::kLimbs];
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  for (std::size_t q = std::size_t(blockIdx.x) * kWarps + warp; q < outputs; q += std::size_t(gridDim.x) * kWarps) {
    const unsigned special = add_pieces<A>(pieces, q, chunks, slots[warp], lane);
    if constexpr (Term != LaneTerm::Element) {
      store_term_row<Term>(out, q, slots[warp], special, lane);
    } else {
      primitives::store_limb_row<primitives::AnyNarrow, Divide>(out, q, result, slots[warp], special, lane, divisor);
    }
    __syncwarp();
  }
}

// The variance and standard deviation along axes past the exact check's (exact_axis.cuh): each
// output's pieces of the exact Sum (sums, float format) and of the squares' exact sum (squares,
// double format), from the two passes of the sums' and the squares' axis kernels, each added as
// repro_pieces_finish_kernel adds them; the output is variance_of_sums of the two, as the 1-D
// exact variance's. A warp an output.
template <class O>
struct VariancePiecesArgs {
  const unsigned long long* sums;
  unsigned sum_chunks;
  const unsigned long long* squares;
  unsigned square_chunks;
  std::size_t outputs;
  std::uint64_t length;
  std::int64_t correction;
  bool root;
  O* out;
};
template <class O>
__global__ void __launch_bounds__(kReproThreads) repro_variance_finish_kernel(VariancePiecesArgs<O> args) {
  constexpr unsigned kWarps = kReproThreads / 32;
  __shared__ long long sums[kWarps][primitives::ExactSum<float>::kLimbs];
  __shared__ long long squares[kWarps][primitives::ExactSum<double>::kLimbs];
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  for (std::size_t q = std::size_t(blockIdx.x) * kWarps + warp; q < args.outputs; q += std::size_t(gridDim.x) * kWarps) {
    unsigned special = add_pieces<float>(args.sums, q, args.sum_chunks, sums[warp], lane);
    special |= add_pieces<double>(args.squares, q, args.square_chunks, squares[warp], lane);
    store_variance_rows(args.out, q, sums[warp], squares[warp], special, args.length, args.correction, args.root, lane);
    __syncwarp();
  }
}

template <class T, class A>
struct ReproColumnsArgs {
  const T* in;
  const T* in2;  // a second input of the same layout (LaneTerm::Product), else null
  std::size_t outputs, length, inner;
  std::int64_t outer_stride, length_stride, inner_stride;
  unsigned width;  // outputs per block (a power of two up to 32): lane u % width of a warp takes output u
  std::size_t col_blocks;
  unsigned chunks;
  std::size_t tiles_per_chunk;
  std::size_t items;  // col_blocks * chunks
  unsigned long long* pieces;  // not null: per output and piece, a row of kExactRowWords words, else out is written
  A* out;                      // (A: the type of out, as ReproRowsArgs's O)
  primitives::ResultType result;  // the type of out's elements (ResultType::Acc: A)
};

// Element k of an output's column, as the 1-D sum reads it: +0.0 past the end.
template <class T>
__device__ __forceinline__ T column_element(const T* base, std::int64_t stride, std::size_t k, std::size_t n) {
  return k < n ? base[static_cast<std::int64_t>(k) * stride] : T(0.0f);
}

// Exact: Mode::Exact's lanes. Their spills go into the output's limbs with the same atomics; a
// double tile's lane pairs then meet in any order (the exact sum has no order), flushed into the
// limbs where an addition would round. Op: the sum, the sum of the elements' magnitudes (the L1
// norm) or the sum divided by the column's length (the mean). Term: the squares (the L2 norm, O
// its result type) or the products with in2's elements (the dot product), on the double lanes
// (each term exact in double), finished as the 1-D exact L2 norm and dot product.
template <class T, bool Exact = false, primitives::ExactOp Op = primitives::ExactOp::Sum,
          LaneTerm Term = LaneTerm::Element, class O = acc_t<T, Sum>>
__global__ void __launch_bounds__(kReproThreads) repro_columns_kernel(ReproColumnsArgs<T, exact_out_t<T, Term, O>> args) {
  static_assert(Term == LaneTerm::Element || (Exact && Op == primitives::ExactOp::Sum),
                "squares and products take Mode::Exact's lanes");
  using A = exact_acc_t<T, Term>;
  constexpr bool Abs = primitives::kMagnitudesOf<Op>;
  using primitives::ExactSum;
  constexpr unsigned kWarps = kReproThreads / 32;
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned V = primitives::kVecElems<T>;
  constexpr unsigned kLaneVecs = kReproTile / V / 32;  // vectors of a tile per 1-D lane
  constexpr bool kFloatValued = std::is_same_v<A, float>;
  __shared__ long long limbs[32][W + 1];  // per output of the block; padded against bank conflicts
  __shared__ unsigned specials[32];
  // double: [1-D lane][output], a lane's partial (Exact: an exact pair, sum and error)
  __shared__ DoubleDouble staged[kFloatValued ? 1 : 32][32];
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned width = args.width;
  const unsigned u = lane % width;
  const unsigned sub = lane / width;       // which of the warp's 32 / width 1-D lanes
  const unsigned subs = 32 / width;
  const std::size_t tiles = args.length / kReproTile + (args.length % kReproTile != 0);
  for (std::size_t item = blockIdx.x; item < args.items; item += gridDim.x) {
    const std::size_t cb = item % args.col_blocks;
    const std::size_t piece = item / args.col_blocks;
    const std::size_t q = cb * width + u;
    const bool valid = q < args.outputs;
    const std::int64_t offset = static_cast<std::int64_t>(q / args.inner) * args.outer_stride +
                                static_cast<std::int64_t>(q % args.inner) * args.inner_stride;
    const T* base = args.in + offset;
    const T* base2 = Term == LaneTerm::Product ? args.in2 + offset : base;
    const std::size_t t0 = piece * args.tiles_per_chunk;
    const std::size_t t1 = t0 + args.tiles_per_chunk < tiles ? t0 + args.tiles_per_chunk : tiles;
    for (unsigned j = threadIdx.x; j < 32 * (W + 1); j += kReproThreads) limbs[j / (W + 1)][j % (W + 1)] = 0;
    if (threadIdx.x < 32) specials[threadIdx.x] = 0;
    __syncthreads();  // the accumulators are zero
    if constexpr (kFloatValued) {
      // Thread (warp, sub) takes the (tile, 1-D lane) pairs p = (m * kWarps + warp) * subs + sub.
      const std::size_t pairs = (t1 - t0) * 32;
      for (std::size_t p = std::size_t(warp) * subs + sub; p < pairs; p += std::size_t(kWarps) * subs) {
        const std::size_t tile_base = (t0 + p / 32) * kReproTile;
        const unsigned l = static_cast<unsigned>(p % 32);
        std::conditional_t<Exact, ExactFloatLane, FloatLane> lanes[2];
        auto spill = [&](double x) { primitives::atomic_add_exact<A>(limbs[u], &specials[u], x); };  // valid only
        constexpr unsigned kBatchVecs = kLaneVecs < 8 ? kLaneVecs : 8;
#pragma unroll 1
        for (unsigned j0 = 0; j0 < kLaneVecs; j0 += kBatchVecs) {
          T x[kBatchVecs][V];
#pragma unroll
          for (unsigned j = 0; j < kBatchVecs; ++j) {
#pragma unroll
            for (unsigned c = 0; c < V; ++c) {
              const std::size_t k = tile_base + (std::size_t(j0 + j) * 32 + l) * V + c;
              x[j][c] = valid ? column_element(base, args.length_stride, k, args.length) : T(0.0f);
            }
          }
          // Magnitudes once the batch's loads are all issued (a mask between a load and the next
          // one serialised them: 4.5x the time for bfloat16 columns of 4096 on an H100).
          if constexpr (Abs) {
#pragma unroll
            for (unsigned j = 0; j < kBatchVecs; ++j) {
#pragma unroll
              for (unsigned c = 0; c < V; ++c) x[j][c] = primitives::magnitude(x[j][c]);
            }
          }
          if constexpr (Exact) {
            // As the 1-D sum's hot loop: exact additions only, and a batch with one that was not
            // summed again with spills, loaded again (an invalid thread reads zeros: always exact).
            const ExactFloatLane saved[2] = {lanes[0], lanes[1]};
            bool exact = true;
#pragma unroll
            for (unsigned j = 0; j < kBatchVecs; ++j) {
#pragma unroll
              for (unsigned c = 0; c < V; ++c) exact = lanes[c % 2].try_add(primitives::to_acc<float>(x[j][c])) & exact;
            }
            if (!exact) {
              lanes[0] = saved[0];
              lanes[1] = saved[1];
#pragma unroll 1
              for (unsigned j = 0; j < kBatchVecs; ++j) {
#pragma unroll
                for (unsigned c = 0; c < V; ++c) {
                  const std::size_t k = tile_base + (std::size_t(j0 + j) * 32 + l) * V + c;
                  const T x = valid ? column_element(base, args.length_stride, k, args.length) : T(0.0f);
                  lanes[c % 2].add(primitives::to_acc<float>(primitives::magnitude_if<Abs>(x)), spill);
                }
              }
            }
          } else {
#pragma unroll
            for (unsigned j = 0; j < kBatchVecs; ++j) {
#pragma unroll
              for (unsigned c = 0; c < V; ++c) lanes[c % 2].add(primitives::to_acc<float>(x[j][c]));
            }
          }
        }
        if constexpr (Exact) {
          if (valid) {
            spill(lanes[0].sum);
            spill(lanes[1].sum);
          }
        } else if (valid) {
          const LanePartial partial = lane_partial(lanes);
          // As the 1-D sum's LaneExact::add: a non-finite sum only sets its flag.
          primitives::atomic_add_exact<A>(limbs[u], &specials[u], partial.sum);
          if (isfinite(partial.sum) && isfinite(partial.error)) {
            primitives::atomic_add_exact<A>(limbs[u], &specials[u], partial.error);
          }
        }
      }
    } else {
      // Double sums: per tile, the 32 lane partials of each output are staged, then replayed
      // through the 1-D butterfly (at offset d, lane i combines i and i + d, lower lane first).
      for (std::size_t t = t0; t < t1; ++t) {
        for (unsigned l = warp * subs + sub; l < 32; l += kWarps * subs) {
          std::conditional_t<Exact, ExactDoubleLane, DoubleLane> lanes[2];
          auto element = [&](unsigned j, unsigned c) {
            const std::size_t k = t * kReproTile + (std::size_t(j) * 32 + l) * V + c;
            const T x = valid ? column_element(base, args.length_stride, k, args.length) : T(0.0f);
            if constexpr (Term == LaneTerm::Element) {
              return primitives::to_acc<double>(primitives::magnitude_if<Abs>(x));
            } else if constexpr (Term == LaneTerm::Square) {
              return lane_value<Term>(x, x);
            } else {
              return lane_value<Term>(x, valid ? column_element(base2, args.length_stride, k, args.length) : T(0.0f));
            }
          };
          if constexpr (Exact) {
            // Groups of 4 vectors as the float sums' batches: exact additions only, and a group
            // with one that was not summed again, its leftovers into the limbs (an invalid thread
            // reads zeros: always exact).
            constexpr unsigned kGroup = 4;
            static_assert(kLaneVecs % kGroup == 0);
#pragma unroll 1
            for (unsigned j0 = 0; j0 < kLaneVecs; j0 += kGroup) {
              const ExactDoubleLane saved[2] = {lanes[0], lanes[1]};
              bool exact = true;
#pragma unroll
              for (unsigned j = 0; j < kGroup; ++j) {
#pragma unroll
                for (unsigned c = 0; c < V; ++c) exact = lanes[c % 2].try_add(element(j0 + j, c)) & exact;
              }
              if (!exact) {
                lanes[0] = saved[0];
                lanes[1] = saved[1];
#pragma unroll 1
                for (unsigned j = 0; j < kGroup; ++j) {
#pragma unroll
                  for (unsigned c = 0; c < V; ++c) {
                    const double left = lanes[c % 2].add(element(j0 + j, c));
                    if (left != 0.0) primitives::atomic_add_exact<A>(limbs[u], &specials[u], left);
                  }
                }
              }
            }
          } else {
#pragma unroll 4
            for (unsigned j = 0; j < kLaneVecs; ++j) {
#pragma unroll
              for (unsigned c = 0; c < V; ++c) lanes[c % 2].add(element(j, c));
            }
          }
          if constexpr (Exact) {
            primitives::ExactPair pair = exact_pair_add({lanes[0].sum, lanes[0].error, true},
                                                        {lanes[1].sum, lanes[1].error, true});
            if (!pair.ok) {  // the chains go into the limbs as they are
              if (valid) {
                for (const auto& chain : lanes) {
                  primitives::atomic_add_exact<A>(limbs[u], &specials[u], chain.sum);
                  primitives::atomic_add_exact<A>(limbs[u], &specials[u], chain.error);
                }
              }
              pair = {0.0, 0.0, true};
            }
            staged[l][u] = {pair.sum, pair.error};
          } else {
            staged[l][u] = dd_add(lanes[0].total(), lanes[1].total());
          }
        }
        __syncthreads();  // the tile's lane partials are staged
        if (warp == 0 && lane < width && valid) {
          if constexpr (Exact) {
            auto pair_of = [&](unsigned i) { return primitives::ExactPair{staged[i][u].hi, staged[i][u].lo, true}; };
            primitives::ExactPair total = pair_of(0);
            for (unsigned i = 1; i < 32; ++i) {
              const primitives::ExactPair next = exact_pair_add(total, pair_of(i));
              if (next.ok) {
                total = next;
              } else {  // what is summed so far is exact: into the limbs, and start again
                primitives::atomic_add_exact<A>(limbs[u], &specials[u], total.sum);
                primitives::atomic_add_exact<A>(limbs[u], &specials[u], total.error);
                total = pair_of(i);
              }
            }
            primitives::atomic_add_exact<A>(limbs[u], &specials[u], total.sum);
            primitives::atomic_add_exact<A>(limbs[u], &specials[u], total.error);
          } else {
            for (unsigned d = 16; d > 0; d /= 2) {
              for (unsigned i = 0; i < d; ++i) staged[i][u] = dd_add(staged[i][u], staged[i + d][u]);
            }
            const DoubleDouble total = staged[0][u];
            primitives::atomic_add_exact<A>(limbs[u], &specials[u], total.hi);
            if (isfinite(total.hi)) primitives::atomic_add_exact<A>(limbs[u], &specials[u], total.lo);
          }
        }
        __syncthreads();  // the staged partials are used before the next tile's are written
      }
    }
    __syncthreads();  // every exact addition is done
    for (unsigned v = warp; v < width; v += kWarps) {
      const std::size_t qv = cb * width + v;
      if (qv >= args.outputs) break;
      if (args.pieces == nullptr) {
        if constexpr (Term != LaneTerm::Element) {
          store_term_row<Term>(args.out, qv, limbs[v], specials[v], lane);
        } else {
          primitives::store_limb_row<T, primitives::kDividesBy<Op>>(args.out, qv, args.result, limbs[v], specials[v],
                                                                   lane, args.length);
        }
      } else {
        // The piece's limbs, carried into 32-bit magnitudes with their sign applied, so that any
        // number of pieces add up without overflow.
        long long* row = limbs[v];
        unsigned lowest = W - 1, highest = 0;
#pragma unroll
        for (unsigned k = 0; k < W / 32; ++k) {
          const unsigned mask = __ballot_sync(primitives::kFullMask, row[lane + 32 * k] != 0);
          if (mask != 0) {
            highest = 32 * k + 31 - __clz(mask);
            lowest = lowest < 32 * k ? lowest : 32 * k + __ffs(mask) - 1;
          }
        }
        if (lowest > highest) lowest = 0;
        __syncwarp();
        bool negative = false;
        if (lane == 0) negative = primitives::normalize_limbs<W>(reinterpret_cast<unsigned long long*>(row), lowest, highest);
        __syncwarp();
        negative = __shfl_sync(primitives::kFullMask, negative, 0);
        unsigned long long* out_row = args.pieces + (qv * args.chunks + piece) * primitives::kExactRowWords<A>;
        for (unsigned j = lane; j < W; j += 32) {
          const long long m = row[j];
          out_row[j] = static_cast<unsigned long long>(negative ? -m : m);
        }
        if (lane == 0) out_row[W] = specials[v];
      }
    }
    __syncthreads();  // the accumulators are read before the next item zeroes them
  }
}

}  // namespace fastreduce::engine
