// The multi-rank reductions (fastreduce/nccl.cuh): a local engine pass, then the ranks' partials
// meet through the Transport. Instantiated per input type in multi_*.cu.
//
// Fast mode (and every op but the reproducible and exact floating-point Sum): the engine reduces the local
// shard (or slice) into a send buffer; an all-gather brings every rank's partials to every rank;
// one kernel combines them in rank order.
//
// Reproducible floating-point Sum: the single-GPU result is fixed by the tiles of kReproTile
// elements counted from the start of the whole array (engine/repro_path.cuh); a rank sums the
// tiles that *start* in its shard. A tile that a shard boundary cuts needs the elements after
// the boundary, which lie in the first kReproTile - 1 elements of the next shards (several, if
// they are short or empty). So:
//   1. every rank packs its element count and its first min(n_local, kReproTile) elements into a
//      slot; one all-gather gives every rank every slot;
//   2. a one-block kernel computes the rank's offset in the whole array from the counts, the
//      whole tiles in its shard (a region of its own memory) and assembles the cut tile, if any,
//      from its own tail and the next ranks' slots;
//   3. the engine's reproducible tile kernel sums the region and the cut tile into per-block rows
//      of exact limbs, which one block adds into the rank's row;
//   4. an all-reduce (integer sum) of the rows gives every rank the exact total, which one warp
//      rounds as the single-GPU finish does. Integer addition is exact and associative, so the
//      bits are those of the single-GPU sum for any ranks and shard sizes.
// The special-value flags (+inf, -inf, NaN seen) travel in the row's last word as three counts
// of 21 bits, so that the integer sum keeps them apart.
//
// Mode::Exact floating-point Sum: the result is the exact sum of the elements, rounded once, so
// it cannot depend on where the shards begin: no slot and no cut tile. A rank sums its shard with
// the engine's exact kernels into rows of limbs (1-D: a row per block; axis: pieces per output),
// adds them into one row per output, carried (every limb below the top within [-2^32, 2^32]: the
// all-reduce then adds one bounded row per rank, however long the shards), and the integer
// all-reduce and the rounding are those of the reproducible sum.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/detail/launch.cuh"
#include "fastreduce/detail/plan.hpp"
#include "fastreduce/detail/repro_path.cuh"
#include "fastreduce/detail/repro_pieces.hpp"
#include "fastreduce/nccl.cuh"
#include "fastreduce/detail/exact_sum.cuh"

namespace fastreduce::multi {

using engine::kReproThreads;
using engine::kReproTile;
using nccl::Transport;

inline constexpr std::size_t kAlign = 256;  // every region of the temporary storage starts on 256 bytes
inline constexpr std::size_t align_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Carves consecutive regions out of the temporary storage (or only counts them, with base null).
struct Carver {
  char* base;
  std::size_t used = 0;
  template <class U>
  U* take(std::size_t count) {
    U* p = base != nullptr ? reinterpret_cast<U*>(base + used) : nullptr;
    used += align_up(count * sizeof(U));
    return p;
  }
  // Once every region is taken: the size query (base null) stores the bytes in temp_bytes
  // (Query); a call's temp_bytes holds them (Ready) or not (Short).
  enum class Settled { Query, Short, Ready };
  Settled settle(std::size_t& temp_bytes) const {
    if (base == nullptr) {
      temp_bytes = used;
      return Settled::Query;
    }
    return temp_bytes < used ? Settled::Short : Settled::Ready;
  }
};
inline constexpr const char* kShortStorage = "temp_bytes is smaller than the size query gave";

// Blocks of 256 threads for `work` items, one item a thread, at most 4096 (grid-stride beyond).
inline unsigned blocks_for(std::size_t work) {
  return static_cast<unsigned>(std::clamp<std::size_t>((work + 255) / 256, 1, 4096));
}

// ---------------------------------------------------------------------------------------------
// Fast mode.

// out[q] = gathered[0][q] op gathered[1][q] op ... op gathered[ranks - 1][q], in rank order.
template <class A, class Op>
__global__ void rank_combine_kernel(const A* gathered, unsigned ranks, std::size_t outputs, A* out, Op op) {
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < outputs;
       q += std::size_t(gridDim.x) * blockDim.x) {
    A acc = gathered[q];
    for (unsigned r = 1; r < ranks; ++r) acc = op(acc, gathered[r * outputs + q]);
    out[q] = acc;
  }
}

// The NCCL reduction that gives an op's result exactly as the rank-order combine would (up to
// the order of a floating-point sum): sums of the types NCCL adds, and integer Min and Max
// (NCCL's floating-point Min and Max do not propagate NaN as ours do).
template <class A, class Op>
constexpr bool native_combine(Transport::Element& element, Transport::Combine& combine) {
  using E = Transport::Element;
  if constexpr (std::is_same_v<A, float>) element = E::Float;
  else if constexpr (std::is_same_v<A, double>) element = E::Double;
  else if constexpr (std::is_same_v<A, std::int32_t>) element = E::Int32;
  else if constexpr (std::is_same_v<A, std::uint32_t>) element = E::Uint32;
  else if constexpr (std::is_same_v<A, std::int64_t>) element = E::Int64;
  else if constexpr (std::is_same_v<A, std::uint64_t>) element = E::Uint64;
  else return false;
  if constexpr (std::is_same_v<Op, Sum>) {
    combine = Transport::Combine::Sum;
    return true;
  } else if constexpr (std::is_integral_v<A> && std::is_same_v<Op, Min>) {
    combine = Transport::Combine::Min;
    return true;
  } else if constexpr (std::is_integral_v<A> && std::is_same_v<Op, Max>) {
    combine = Transport::Combine::Max;
    return true;
  }
  return false;
}

// The ranks' partials send[0, outputs) into out on every rank: the transport's own reduction
// where it has one for this op, else an all-gather into `gathered` and the rank-order combine.
template <class A, class Op>
cudaError_t combine_ranks(Transport& transport, const A* send, A* gathered, std::size_t outputs, A* out, Op op,
                          cudaStream_t stream, const char** what) {
  Transport::Element element{};
  Transport::Combine combine{};
  if (native_combine<A, Op>(element, combine)) {
    const cudaError_t e = transport.all_reduce(send, out, outputs, element, combine, stream);
    if (e != cudaErrorNotSupported) {
      *what = "all-reduce of the partials";
      return e;
    }
  }
  if (cudaError_t e = transport.all_gather(send, gathered, outputs * sizeof(A), stream); e != cudaSuccess) {
    *what = "all-gather of the partials";
    return e;
  }
  *what = "launching the combine";
  const unsigned ranks = static_cast<unsigned>(transport.size());
  return engine::launch(rank_combine_kernel<A, Op>, blocks_for(outputs), outputs == 1 ? 32u : 256u, 0, stream, false,
                        static_cast<const A*>(gathered), ranks, outputs, out, op);
}

// ---------------------------------------------------------------------------------------------
// Reproducible floating-point Sum.

// A rank's slot: its element count, then its first min(n_local, kReproTile) elements.
template <class T>
inline constexpr std::size_t kSlotBytes = align_up(16 + kReproTile * sizeof(T));

template <class T>
__device__ __forceinline__ const T* slot_elements(const unsigned char* slot) {
  return reinterpret_cast<const T*>(slot + 16);
}

template <class T>
__global__ void pack_slot_kernel(const T* shard, std::size_t n_local, unsigned char* slot) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<unsigned long long*>(slot) = n_local;
  T* elements = reinterpret_cast<T*>(slot + 16);
  const std::size_t count = n_local < kReproTile ? n_local : kReproTile;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    elements[i] = shard[i];
  }
}

// What a rank sums: whole tiles of its own memory, and the cut tile assembled in `cut`.
template <class T>
struct ShardWork {
  const T* region;
  std::size_t region_n;  // a multiple of kReproTile
  std::size_t cut_n;     // elements of the cut tile (0: none), at most kReproTile
  bool too_large;        // the whole array has kReproMaxElements or more: the result is NaN
};

template <class T>
__global__ void __launch_bounds__(kReproThreads) locate_kernel(const unsigned char* slots, unsigned ranks, unsigned rank,
                                                               const T* shard, ShardWork<T>* work, T* cut) {
  constexpr std::size_t kSlot = kSlotBytes<T>;
  auto count_of = [&](unsigned r) { return *reinterpret_cast<const unsigned long long*>(slots + r * kSlot); };
  std::size_t offset = 0, total = 0;
  for (unsigned r = 0; r < ranks; ++r) {
    const std::size_t n = count_of(r);
    if (r < rank) offset += n;
    total += n;
  }
  const std::size_t n = count_of(rank);
  const std::size_t end = offset + n;
  const std::size_t first = (offset + kReproTile - 1) / kReproTile * kReproTile;  // the first tile start in the shard
  std::size_t region_n = 0, cut_begin = end, cut_n = 0;
  if (first < end) {
    region_n = (end - first) / kReproTile * kReproTile;
    cut_begin = first + region_n;
    if (cut_begin < end) cut_n = (cut_begin + kReproTile < total ? cut_begin + kReproTile : total) - cut_begin;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *work = {shard + (first < end ? first - offset : 0), region_n, cut_n, total >= engine::kReproMaxElements};
  }
  if (cut_n == 0) return;
  const std::size_t cut_end = cut_begin + cut_n;
  for (std::size_t g = cut_begin + threadIdx.x; g < end; g += blockDim.x) cut[g - cut_begin] = shard[g - offset];
  // The rest from the next ranks' slots: rank r holds [its offset, its offset + its count).
  std::size_t r_offset = end;
  for (unsigned r = rank + 1; r < ranks && r_offset < cut_end; ++r) {
    const std::size_t r_n = count_of(r);
    const std::size_t stop = r_offset + r_n < cut_end ? r_offset + r_n : cut_end;
    const T* elements = slot_elements<T>(slots + r * kSlot);
    for (std::size_t g = r_offset + threadIdx.x; g < stop; g += blockDim.x) cut[g - cut_begin] = elements[g - r_offset];
    r_offset += r_n;
  }
}

template <class T>
__global__ void __launch_bounds__(kReproThreads) shard_sum_kernel(const ShardWork<T>* work, const T* cut,
                                                                  unsigned long long* rows) {
  __shared__ engine::ReproShared<acc_t<T, Sum>> shared;
  const ShardWork<T> w = *work;
  const engine::ReproSpan<T> spans[2] = {
      {w.region, w.region_n, w.region_n / kReproTile, reinterpret_cast<std::uintptr_t>(w.region) % 16 == 0},
      {cut, w.cut_n, w.cut_n > 0 ? 1u : 0u, true}};
  engine::repro_block_row(spans, rows, shared);
}

// The flags word of a row as it travels through the integer all-reduce: three 21-bit counts.
__host__ __device__ constexpr unsigned long long encode_flags(unsigned special) {
  return ((special & primitives::kPlusInf) ? 1ull : 0ull) | ((special & primitives::kMinusInf) ? 1ull << 21 : 0ull) |
         ((special & primitives::kNaN) ? 1ull << 42 : 0ull);
}
__host__ __device__ constexpr unsigned decode_flags(unsigned long long counts) {
  constexpr unsigned long long kField = (1ull << 21) - 1;
  return ((counts & kField) != 0 ? unsigned(primitives::kPlusInf) : 0u) |
         (((counts >> 21) & kField) != 0 ? unsigned(primitives::kMinusInf) : 0u) |
         (((counts >> 42) & kField) != 0 ? unsigned(primitives::kNaN) : 0u);
}

// The row a rank sends when its own part failed after the other ranks may have entered the
// collective: zero limbs and one NaN count, so every rank's result is NaN (the count cannot carry
// into another flag's field below 2^21 ranks).
__global__ inline void nan_rows_kernel(std::int64_t* rows, std::size_t words, unsigned row_words) {
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < words; e += std::size_t(gridDim.x) * blockDim.x) {
    rows[e] = e % row_words == row_words - 1 ? static_cast<std::int64_t>(encode_flags(primitives::kNaN)) : 0;
  }
}

// Joins the all-reduce of `outputs` rows of kExactRowWords<A> words with NaN rows (their launch's
// or the collective's own error is not reported: the caller returns the failure that led here).
template <class A>
void join_with_nan_rows(Transport& transport, std::int64_t* rows, std::int64_t* totals, std::size_t outputs,
                        cudaStream_t stream) {
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  const std::size_t words = outputs * kWords;
  const unsigned blocks = static_cast<unsigned>(std::clamp<std::size_t>((words + 255) / 256, 1, 1024));
  (void)engine::launch(nan_rows_kernel, blocks, 256, 0, stream, false, rows, words, kWords);
  (void)transport.all_reduce_sum(rows, totals, words, stream);
}

// The reproducible sums' two collectives joined by a rank that failed before the first: an empty
// slot (count or length 0) in the all-gather, then NaN rows in the all-reduce.
template <class A>
void join_repro_with_nan_rows(Transport& transport, unsigned char* send, unsigned char* slots, std::size_t slot_bytes,
                              std::int64_t* rows, std::int64_t* totals, std::size_t outputs, cudaStream_t stream) {
  (void)cudaMemsetAsync(send, 0, 16, stream);
  (void)transport.all_gather(send, slots, slot_bytes, stream);
  join_with_nan_rows<A>(transport, rows, totals, outputs, stream);
}

// One block: the rank's row = the limb-wise sum of the grid's rows (not carried: the all-reduce
// adds further rows and the finish normalises once), flags as counts.
template <class A>
__global__ void __launch_bounds__(kReproThreads) rank_row_kernel(const unsigned long long* rows, unsigned count,
                                                                 std::int64_t* row) {
  constexpr unsigned W = primitives::ExactSum<A>::kLimbs;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  for (unsigned j = threadIdx.x; j <= W; j += blockDim.x) {
    unsigned long long sum = 0;
    unsigned special = 0;
    for (unsigned b = 0; b < count; ++b) {
      const unsigned long long word = rows[std::size_t(b) * kWords + j];
      if (j < W) sum += word;
      else special |= static_cast<unsigned>(word);
    }
    row[j] = static_cast<std::int64_t>(j < W ? sum : encode_flags(special));
  }
}

// One warp: rounds the ranks' summed row into *out (NaN when the array was too large; `work`
// null: Mode::Exact, whose ranks check their own shards).
template <class A, class T>
__global__ void __launch_bounds__(32) finish_row_kernel(const std::int64_t* row, const ShardWork<T>* work, A* out) {
  constexpr unsigned W = primitives::ExactSum<A>::kLimbs;
  __shared__ long long limbs[W];
  const unsigned lane = threadIdx.x;
  for (unsigned j = lane; j < W; j += 32) limbs[j] = row[j];
  const unsigned special = decode_flags(static_cast<unsigned long long>(row[W]));
  __syncwarp();
  const A value = primitives::finish_limb_row<A>(limbs, special, lane);
  if (lane == 0) *out = work != nullptr && work->too_large ? A(__builtin_nan("")) : value;
}

// The checks of a rank's own shard (`length` elements along the summed axis) and output, which the
// reproducible and exact sums report after joining the collectives; the error's text in *what.
template <class T, class A>
cudaError_t check_own_arguments(const T* d_shard, std::size_t length, const A* d_out, const char* too_long,
                                const char** what) {
  auto failed = [&](cudaError_t e, const char* text) {
    *what = text;
    return e;
  };
  if (length >= engine::kReproMaxElements) return failed(cudaErrorNotSupported, too_long);
  if (length > 0 && d_shard == nullptr) return failed(cudaErrorInvalidValue, "d_shard is null");
  if (reinterpret_cast<std::uintptr_t>(d_shard) % alignof(T) != 0) return failed(cudaErrorMisalignedAddress, "d_shard is misaligned");
  if (reinterpret_cast<std::uintptr_t>(d_out) % alignof(A) != 0) return failed(cudaErrorMisalignedAddress, "d_out is misaligned");
  return cudaSuccess;
}

// Returns an error, with its text in *message when message is not null.
struct Failure {
  const char** message;
  cudaError_t operator()(cudaError_t e, const char* text) const {
    if (message != nullptr) *message = text;
    return e;
  }
};

inline bool valid_transport(const Transport& t) { return t.size() >= 1 && t.rank() >= 0 && t.rank() < t.size(); }

// ---------------------------------------------------------------------------------------------
// Reproducible floating-point axis sums. As the 1-D sum, per output: a rank sums the tiles that
// start in its slice (their exact rows come from the engine's reproducible axis kernels, made to
// store per-output pieces of limbs instead of rounding), the tile a slice boundary cuts is
// completed from the next ranks' first kReproTile - 1 slices (all-gathered slots), and the
// ranks' per-output rows meet in an integer all-reduce. The region of whole tiles and the cut
// tile follow from `first` (the rank's offset in the whole axis, known on the host); the other
// ranks' lengths are read on the device from the slots, and checked against their `first`.

// A rank's slot: its length and first, then its first min(length, kReproTile - 1) slices of
// every output, slice-major: element (j, q) at j * outputs + q.
template <class T>
std::size_t axis_slot_bytes(std::size_t outputs) {
  return align_up(16 + (kReproTile - 1) * outputs * sizeof(T));
}

template <class T>
__device__ __forceinline__ T layout_element(const T* in, const engine::AxisLayout& L, std::size_t q, std::size_t j) {
  return in[static_cast<std::int64_t>(q / L.inner) * L.outer_stride + static_cast<std::int64_t>(j) * L.length_stride +
            static_cast<std::int64_t>(q % L.inner) * L.inner_stride];
}

template <class T>
__global__ void pack_axis_slot_kernel(const T* shard, engine::AxisLayout L, std::size_t first, unsigned char* slot) {
  auto* header = reinterpret_cast<unsigned long long*>(slot);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    header[0] = L.length;
    header[1] = first;
  }
  T* elements = reinterpret_cast<T*>(slot + 16);
  const std::size_t outputs = L.outer * L.inner;
  const std::size_t count = (L.length < kReproTile - 1 ? L.length : kReproTile - 1) * outputs;
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < count; e += std::size_t(gridDim.x) * blockDim.x) {
    elements[e] = layout_element(shard, L, e % outputs, e / outputs);
  }
}

// The cut tile, slices [cut_begin, cut_begin + cut_slices) of the whole axis, into `cut`
// (slice-major, as a slot): this rank's own slices, then the next ranks' slots, then +0.0 past the
// whole axis's end (as the single-GPU sum reads it). Block 0 also checks every rank's first
// against the lengths before it (*consistent = 0 if any disagrees).
template <class T>
__global__ void assemble_cut_kernel(const unsigned char* slots, std::size_t slot_bytes, unsigned ranks, unsigned rank,
                                    const T* shard, engine::AxisLayout L, std::size_t first, std::size_t cut_begin,
                                    std::size_t cut_slices, T* cut, unsigned* consistent) {
  const std::size_t outputs = L.outer * L.inner;
  auto header = [&](unsigned r, unsigned word) {
    return reinterpret_cast<const unsigned long long*>(slots + std::size_t(r) * slot_bytes)[word];
  };
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    std::size_t offset = 0;
    bool ok = true;
    for (unsigned r = 0; r < ranks; ++r) {
      ok = ok && header(r, 1) == offset;
      offset += header(r, 0);
    }
    if (!ok) *consistent = 0;
  }
  const std::size_t end = first + L.length;
  const std::size_t count = cut_slices * outputs;
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < count; e += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t q = e % outputs, g = cut_begin + e / outputs;
    T value = T(0.0f);
    if (g < end) {
      value = layout_element(shard, L, q, g - first);
    } else {
      std::size_t r_first = end;
      for (unsigned r = rank + 1; r < ranks; ++r) {
        const std::size_t r_length = header(r, 0);
        if (g < r_first + r_length) {
          value = reinterpret_cast<const T*>(slots + std::size_t(r) * slot_bytes + 16)[(g - r_first) * outputs + q];
          break;
        }
        r_first += r_length;
      }
    }
    cut[e] = value;
  }
}

// rows[q] = the limb-wise sum of output q's pieces of both launches, flags as counts.
template <class A>
__global__ void __launch_bounds__(kReproThreads) sum_pieces_kernel(const unsigned long long* a, unsigned a_chunks,
                                                                   const unsigned long long* b, unsigned b_chunks,
                                                                   std::size_t outputs, std::int64_t* rows) {
  constexpr unsigned W = primitives::ExactSum<A>::kLimbs;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  const std::size_t words = outputs * kWords;
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < words; e += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t q = e / kWords;
    const unsigned j = static_cast<unsigned>(e % kWords);
    unsigned long long sum = 0;
    unsigned special = 0;
    for (unsigned c = 0; c < a_chunks + b_chunks; ++c) {
      const unsigned long long word =
          c < a_chunks ? a[(q * a_chunks + c) * kWords + j] : b[(q * b_chunks + (c - a_chunks)) * kWords + j];
      if (j < W) sum += word;
      else special |= static_cast<unsigned>(word);
    }
    rows[e] = static_cast<std::int64_t>(j < W ? sum : encode_flags(special));
  }
}

// A warp per output: rounds the ranks' summed row (NaN where the ranks' first disagree;
// `consistent` null: Mode::Exact, which needs no `first`).
template <class A>
__global__ void __launch_bounds__(kReproThreads) finish_rows_kernel(const std::int64_t* rows, std::size_t outputs,
                                                                    const unsigned* consistent, A* out) {
  constexpr unsigned W = primitives::ExactSum<A>::kLimbs;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  constexpr unsigned kWarps = kReproThreads / 32;
  __shared__ long long limbs[kWarps][W];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::size_t q = std::size_t(blockIdx.x) * kWarps + warp; q < outputs; q += std::size_t(gridDim.x) * kWarps) {
    const std::int64_t* row = rows + q * kWords;
    for (unsigned j = lane; j < W; j += 32) limbs[warp][j] = row[j];
    __syncwarp();
    const A value = primitives::finish_limb_row<A>(limbs[warp], decode_flags(static_cast<unsigned long long>(row[W])), lane);
    if (lane == 0) out[q] = consistent == nullptr || *consistent != 0 ? value : A(__builtin_nan(""));
    __syncwarp();
  }
}

__global__ inline void set_word_kernel(unsigned* word, unsigned value) { *word = value; }

template <class T>
cudaError_t reduce_axis_repro(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                              const engine::AxisLayout& L, acc_t<T, Sum>* d_out, cudaStream_t stream,
                              const Options& opt, std::size_t first, const Failure& fail) {
  using A = acc_t<T, Sum>;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  const unsigned ranks = static_cast<unsigned>(transport.size());
  const std::size_t outputs = L.outputs();
  if (first == nccl::kUnknownFirst) return fail(cudaErrorInvalidValue, "Mode::Reproducible axis sums need `first`");
  if (first + L.length < first || first + L.length >= engine::kReproMaxElements) {
    return fail(cudaErrorNotSupported, "Mode::Reproducible sums at most 2^40 elements per output");
  }
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return fail(e, "cudaGetDevice");
  // The tiles that start in this slice: whole ones [tile0, cut_begin), and the cut one.
  const std::size_t end = first + L.length;
  const std::size_t tile0 = (first + kReproTile - 1) / kReproTile * kReproTile;
  std::size_t region_length = 0, cut_begin = end;
  if (tile0 < end) {
    region_length = (end - tile0) / kReproTile * kReproTile;
    cut_begin = tile0 + region_length;
  }
  const bool has_cut = cut_begin < end;
  engine::AxisLayout region = L;
  region.length = region_length;
  const engine::AxisLayout cut_layout{.outer = L.outer, .length = has_cut ? kReproTile : 0, .inner = L.inner,
                                      .outer_stride = static_cast<std::int64_t>(L.inner),
                                      .length_stride = static_cast<std::int64_t>(outputs), .inner_stride = 1};
  engine::PiecesPlan region_launch, cut_launch;
  if (cudaError_t e = engine::plan_repro_pieces<T>(region, opt, device, region_launch); e != cudaSuccess) {
    return fail(e, "no kernel image for this GPU (reproducible axis sum)");
  }
  if (cudaError_t e = engine::plan_repro_pieces<T>(cut_layout, opt, device, cut_launch); e != cudaSuccess) {
    return fail(e, "no kernel image for this GPU (reproducible axis sum)");
  }
  const std::size_t slot_bytes = axis_slot_bytes<T>(outputs);
  Carver c{static_cast<char*>(d_temp)};
  auto* region_pieces = c.take<unsigned long long>(region_launch.pieces() * kWords);
  auto* cut_pieces = c.take<unsigned long long>(cut_launch.pieces() * kWords);
  auto* send = c.take<unsigned char>(slot_bytes);
  auto* slots = c.take<unsigned char>(slot_bytes * ranks);
  T* cut = c.take<T>(has_cut ? kReproTile * outputs : 0);
  auto* rows = c.take<std::int64_t>(outputs * kWords);
  auto* totals = c.take<std::int64_t>(outputs * kWords);
  auto* consistent = c.take<unsigned>(1);
  if (const Carver::Settled settled = c.settle(temp_bytes); settled != Carver::Settled::Ready) {
    return settled == Carver::Settled::Query ? cudaSuccess : fail(cudaErrorInvalidValue, kShortStorage);
  }
  const char* what = "launching the slot kernel";
  cudaError_t status = check_own_arguments(d_shard, L.length, d_out, "Mode::Reproducible sums at most 2^40 elements per output", &what);
  if (status == cudaSuccess) status = engine::launch(set_word_kernel, 1, 1, 0, stream, false, consistent, 1u);
  if (status == cudaSuccess) {
    status = engine::launch(pack_axis_slot_kernel<T>, blocks_for((kReproTile - 1) * outputs), 256, 0, stream, false, d_shard,
                            L, first, send);
  }
  if (status != cudaSuccess) {  // the other ranks still get both collectives (NaN)
    join_repro_with_nan_rows<A>(transport, send, slots, slot_bytes, rows, totals, outputs, stream);
    return fail(status, what);
  }
  if (cudaError_t e = transport.all_gather(send, slots, slot_bytes, stream); e != cudaSuccess) {
    return fail(e, "all-gather of the slices' first tiles");
  }
  const T* region_in = d_shard + static_cast<std::int64_t>(tile0 > first ? tile0 - first : 0) * L.length_stride;
  status = engine::launch_repro_pieces<T>(region_launch, region_in, region_pieces, stream);
  if (status == cudaSuccess) {
    status = engine::launch(assemble_cut_kernel<T>, has_cut ? blocks_for(kReproTile * outputs) : 1u, 256, 0, stream, false,
                            static_cast<const unsigned char*>(slots), slot_bytes, ranks,
                            static_cast<unsigned>(transport.rank()), d_shard, L, first, cut_begin,
                            has_cut ? kReproTile : std::size_t(0), cut, consistent);
  }
  if (status == cudaSuccess) {
    status = engine::launch_repro_pieces<T>(cut_launch, static_cast<const T*>(cut), cut_pieces, stream);
  }
  if (status == cudaSuccess) {
    status = engine::launch(sum_pieces_kernel<A>, blocks_for(outputs * kWords), kReproThreads, 0, stream, false,
                            static_cast<const unsigned long long*>(region_pieces),
                            region_launch.chunks(),
                            static_cast<const unsigned long long*>(cut_pieces),
                            cut_launch.chunks(), outputs, rows);
  }
  if (status != cudaSuccess) {  // as the 1-D sum: the other ranks still get their all-reduce (NaN)
    join_with_nan_rows<A>(transport, rows, totals, outputs, stream);
    return fail(status, "launching the local pass");
  }
  if (cudaError_t e = transport.all_reduce_sum(rows, totals, outputs * kWords, stream); e != cudaSuccess) {
    return fail(e, "all-reduce of the exact accumulators");
  }
  status = engine::launch(finish_rows_kernel<A>, blocks_for(outputs * 32) , kReproThreads, 0, stream, false,
                          static_cast<const std::int64_t*>(totals), outputs, static_cast<const unsigned*>(consistent), d_out);
  return status == cudaSuccess ? cudaSuccess : fail(status, "launching the finish");
}

// ---------------------------------------------------------------------------------------------
// Mode::Exact floating-point sums.

// The engine's exact 1-D pass over the shard: each block's row of limbs at rows + blockIdx.x *
// kExactRowWords (elements past n read as +0.0).
template <class T>
__global__ void __launch_bounds__(kReproThreads) shard_exact_kernel(const T* shard, std::size_t n, bool aligned,
                                                                    unsigned long long* rows) {
  __shared__ engine::ReproShared<acc_t<T, Sum>> shared;
  const engine::ReproSpan<T> spans[1] = {{shard, n, (n + kReproTile - 1) / kReproTile, aligned}};
  engine::repro_block_row<T, 1, true>(spans, rows, shared);
}

// One block: the rank's row = the exact total of the grid's rows, carried (limbs of at most 32
// bits, each with the total's sign), flags as counts.
template <class A>
__global__ void __launch_bounds__(kReproThreads) rank_exact_row_kernel(const unsigned long long* rows, unsigned count,
                                                                       std::int64_t* row) {
  constexpr unsigned W = primitives::ExactSum<A>::kLimbs;
  __shared__ engine::ReproShared<A> shared;
  const primitives::ExactTotal<A> total = primitives::gather_exact_rows<A, kReproThreads / 32>(rows, count, shared);
  if (total.limbs == nullptr) return;  // warps other than 0
  const unsigned lane = threadIdx.x % 32;
  for (unsigned j = lane; j < W; j += 32) {
    const auto limb = static_cast<std::int64_t>(total.limbs[j]);
    row[j] = total.negative ? -limb : limb;
  }
  if (lane == 0) row[W] = static_cast<std::int64_t>(encode_flags(total.special));
}

// A warp per output: output q's row = the limb-wise sum of its `chunks` pieces, carried (every
// limb below the top within [-1, 2^32]), flags as counts.
template <class A>
__global__ void __launch_bounds__(kReproThreads) carry_pieces_kernel(const unsigned long long* pieces, unsigned chunks,
                                                                     std::size_t outputs, std::int64_t* rows) {
  constexpr unsigned W = primitives::ExactSum<A>::kLimbs;
  constexpr unsigned K = primitives::ExactSum<A>::K;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  constexpr unsigned kWarps = kReproThreads / 32;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::size_t q = std::size_t(blockIdx.x) * kWarps + warp; q < outputs; q += std::size_t(gridDim.x) * kWarps) {
    primitives::ExactSum<A> sum;
    unsigned special = 0;
    for (unsigned c = 0; c < chunks; ++c) {
      const unsigned long long* piece = pieces + (q * chunks + c) * kWords;
#pragma unroll
      for (unsigned k = 0; k < K; ++k) sum.limb[k] += static_cast<long long>(piece[lane + 32 * k]);
      if (lane == 0) special |= static_cast<unsigned>(piece[W]);
    }
    sum.carry(lane);
    std::int64_t* row = rows + q * kWords;
#pragma unroll
    for (unsigned k = 0; k < K; ++k) row[lane + 32 * k] = sum.limb[k];
    if (lane == 0) row[W] = static_cast<std::int64_t>(encode_flags(special));
  }
}

// The grid of Kernel, which sums n elements into a row of limbs per block, on this device.
template <class T, auto Kernel>
cudaError_t rows_grid(std::size_t n, const Options& opt, unsigned& grid) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  engine::KernelFacts facts{};
  if (cudaError_t e = engine::kernel_facts<Kernel, kReproThreads>(device, facts); e != cudaSuccess) return e;
  grid = engine::plan_reproducible(n, engine::multiprocessors(device), facts.blocks_per_sm, opt.max_blocks,
                                   primitives::kExactRowWords<acc_t<T, Sum>>)
             .grid;
  return cudaSuccess;
}

// The exact 1-D sum. An error in the rank's own shard or output, found once the storage is
// checked, still joins the all-reduce (with a row that makes every rank's result NaN), so that no
// rank waits for this one. Errors of the size query (no kernel image, the device) and of the
// storage return at once, on this rank alone.
template <class T>
cudaError_t reduce_exact(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                         std::size_t n_local, acc_t<T, Sum>* d_out, cudaStream_t stream, const Options& opt,
                         const Failure& fail) {
  using A = acc_t<T, Sum>;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  unsigned grid = 1;
  if (cudaError_t e = rows_grid<T, shard_exact_kernel<T>>(std::min(n_local, engine::kReproMaxElements - 1), opt, grid);
      e != cudaSuccess) {
    return fail(e, "no kernel image for this GPU (exact sum)");
  }
  Carver c{static_cast<char*>(d_temp)};
  auto* rows = c.take<unsigned long long>(std::size_t(grid) * kWords);
  auto* row = c.take<std::int64_t>(kWords);
  auto* total = c.take<std::int64_t>(kWords);
  if (const Carver::Settled settled = c.settle(temp_bytes); settled != Carver::Settled::Ready) {
    return settled == Carver::Settled::Query ? cudaSuccess : fail(cudaErrorInvalidValue, kShortStorage);
  }
  const char* what = "launching the local pass";
  cudaError_t status = check_own_arguments(d_shard, n_local, d_out, "Mode::Exact sums at most 2^40 elements per rank", &what);
  if (status == cudaSuccess) {
    status = engine::launch(shard_exact_kernel<T>, grid, kReproThreads, 0, stream, false, d_shard, n_local,
                            reinterpret_cast<std::uintptr_t>(d_shard) % 16 == 0, rows);
  }
  if (status == cudaSuccess) {
    status = engine::launch(rank_exact_row_kernel<A>, 1, kReproThreads, 0, stream, false,
                            static_cast<const unsigned long long*>(rows), grid, row);
  }
  if (status != cudaSuccess) {
    join_with_nan_rows<A>(transport, row, total, 1, stream);
    return fail(status, what);
  }
  if (cudaError_t e = transport.all_reduce_sum(row, total, kWords, stream); e != cudaSuccess) {
    return fail(e, "all-reduce of the exact accumulators");
  }
  status = engine::launch(finish_row_kernel<A, T>, 1, 32, 0, stream, false, static_cast<const std::int64_t*>(total),
                          static_cast<const ShardWork<T>*>(nullptr), d_out);
  return status == cudaSuccess ? cudaSuccess : fail(status, "launching the finish");
}

// The exact axis sum: the engine's exact pieces of the rank's slice, carried per output, the
// all-reduce, the rounding. No `first`: an exact sum does not depend on where a slice begins.
template <class T>
cudaError_t reduce_axis_exact(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                              const engine::AxisLayout& L, acc_t<T, Sum>* d_out, cudaStream_t stream,
                              const Options& opt, const Failure& fail) {
  using A = acc_t<T, Sum>;
  constexpr unsigned kWords = primitives::kExactRowWords<A>;
  const std::size_t outputs = L.outputs();
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return fail(e, "cudaGetDevice");
  engine::AxisLayout planned = L;
  if (planned.length >= engine::kReproMaxElements) planned.length = 0;  // refused below, after the size query
  engine::PiecesPlan plan;
  if (cudaError_t e = engine::plan_repro_pieces<T>(planned, opt, device, plan); e != cudaSuccess) {
    return fail(e, "no kernel image for this GPU (exact axis sum)");
  }
  Carver c{static_cast<char*>(d_temp)};
  auto* pieces = c.take<unsigned long long>(plan.pieces() * kWords);
  auto* rows = c.take<std::int64_t>(outputs * kWords);
  auto* totals = c.take<std::int64_t>(outputs * kWords);
  if (const Carver::Settled settled = c.settle(temp_bytes); settled != Carver::Settled::Ready) {
    return settled == Carver::Settled::Query ? cudaSuccess : fail(cudaErrorInvalidValue, kShortStorage);
  }
  const char* what = "launching the local pass";
  cudaError_t status =
      check_own_arguments(d_shard, L.length, d_out, "Mode::Exact sums at most 2^40 elements per output and rank", &what);
  if (status == cudaSuccess) status = engine::launch_repro_pieces<T>(plan, d_shard, pieces, stream);
  if (status == cudaSuccess) {
    status = engine::launch(carry_pieces_kernel<A>, blocks_for(outputs * 32), kReproThreads, 0, stream, false,
                            static_cast<const unsigned long long*>(pieces), plan.chunks(), outputs, rows);
  }
  if (status != cudaSuccess) {  // the other ranks still get their all-reduce (NaN)
    join_with_nan_rows<A>(transport, rows, totals, outputs, stream);
    return fail(status, what);
  }
  if (cudaError_t e = transport.all_reduce_sum(rows, totals, outputs * kWords, stream); e != cudaSuccess) {
    return fail(e, "all-reduce of the exact accumulators");
  }
  status = engine::launch(finish_rows_kernel<A>, blocks_for(outputs * 32), kReproThreads, 0, stream, false,
                          static_cast<const std::int64_t*>(totals), outputs, static_cast<const unsigned*>(nullptr), d_out);
  return status == cudaSuccess ? cudaSuccess : fail(status, "launching the finish");
}

// ---------------------------------------------------------------------------------------------
// The entry points.

template <class T, class Op>
inline constexpr bool kReproSum = std::is_floating_point_v<acc_t<T, Op>> && std::is_same_v<Op, Sum>;

// A rank's own reductions take the caller's options without Options::finish_counter: one word
// given to every rank (LocalGroup's ranks run at once) would be shared by reductions that overlap.
inline Options rank_options(Options opt) {
  opt.finish_counter = nullptr;
  return opt;
}

template <class T, class Op>
cudaError_t reduce_async_impl(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                              std::size_t n_local, acc_t<T, Op>* d_out, Op op, cudaStream_t stream,
                              const Options& options, const char** message) {
  const Options opt = rank_options(options);
  using A = acc_t<T, Op>;
  const unsigned ranks = static_cast<unsigned>(transport.size());
  const Failure fail{message};
  if (!valid_transport(transport)) return fail(cudaErrorInvalidValue, "the transport's rank and size");
  if (d_temp != nullptr && d_out == nullptr) return fail(cudaErrorInvalidValue, "d_out is null");
  if (d_temp != nullptr && reinterpret_cast<std::uintptr_t>(d_temp) % 16 != 0) {
    return fail(cudaErrorMisalignedAddress, "d_temp is not 16-byte aligned");
  }
  if constexpr (kReproSum<T, Op>) {
    // Same on every rank (every rank passes the same Options): no rank is left in a collective.
    if (opt.mode == Mode::Exact) {
      return reduce_exact<T>(d_temp, temp_bytes, transport, d_shard, n_local, d_out, stream, opt, fail);
    }
    if (opt.mode == Mode::Reproducible) {
      unsigned grid = 1;
      // At most the shard's whole tiles plus one cut tile.
      if (cudaError_t e = rows_grid<T, shard_sum_kernel<T>>(std::min(n_local, engine::kReproMaxElements - 1) + kReproTile, opt, grid);
          e != cudaSuccess) {
        return fail(e, "no kernel image for this GPU (reproducible sum)");
      }
      constexpr unsigned kWords = primitives::kExactRowWords<A>;
      Carver c{static_cast<char*>(d_temp)};
      auto* rows = c.take<unsigned long long>(std::size_t(grid) * kWords);
      auto* send = c.take<unsigned char>(kSlotBytes<T>);
      auto* slots = c.take<unsigned char>(kSlotBytes<T> * ranks);
      auto* work = c.take<ShardWork<T>>(1);
      auto* cut = c.take<T>(kReproTile);
      auto* row = c.take<std::int64_t>(kWords);
      auto* total = c.take<std::int64_t>(kWords);
      if (const Carver::Settled settled = c.settle(temp_bytes); settled != Carver::Settled::Ready) {
        return settled == Carver::Settled::Query ? cudaSuccess : fail(cudaErrorInvalidValue, kShortStorage);
      }
      const char* what = "launching the slot kernel";
      cudaError_t status =
          check_own_arguments(d_shard, n_local, d_out, "Mode::Reproducible sums at most 2^40 elements", &what);
      if (status == cudaSuccess) {
        const unsigned pack_blocks =
            static_cast<unsigned>(std::min<std::size_t>((std::min(n_local, kReproTile) + 255) / 256, 16));
        status = engine::launch(pack_slot_kernel<T>, std::max(pack_blocks, 1u), 256, 0, stream, false, d_shard, n_local, send);
      }
      if (status != cudaSuccess) {  // the other ranks still get both collectives (NaN)
        join_repro_with_nan_rows<A>(transport, send, slots, kSlotBytes<T>, row, total, 1, stream);
        return fail(status, what);
      }
      if (cudaError_t e = transport.all_gather(send, slots, kSlotBytes<T>, stream); e != cudaSuccess) {
        return fail(e, "all-gather of the shards' first tiles");
      }
      const auto* gathered_slots = static_cast<const unsigned char*>(slots);
      status = engine::launch(locate_kernel<T>, 1, kReproThreads, 0, stream, false, gathered_slots, ranks,
                              static_cast<unsigned>(transport.rank()), d_shard, work, cut);
      if (status == cudaSuccess) {
        status = engine::launch(shard_sum_kernel<T>, grid, kReproThreads, 0, stream, false,
                                static_cast<const ShardWork<T>*>(work), static_cast<const T*>(cut), rows);
      }
      if (status == cudaSuccess) {
        status = engine::launch(rank_row_kernel<A>, 1, kReproThreads, 0, stream, false,
                                static_cast<const unsigned long long*>(rows), grid, row);
      }
      if (status != cudaSuccess) {
        // The other ranks are past the all-gather: join them in the all-reduce with a row whose
        // flags make every rank's result NaN, then report the failure.
        join_with_nan_rows<A>(transport, row, total, 1, stream);
        return fail(status, "launching the local pass");
      }
      if (cudaError_t e = transport.all_reduce_sum(row, total, kWords, stream); e != cudaSuccess) {
        return fail(e, "all-reduce of the exact accumulators");
      }
      if (cudaError_t e = engine::launch(finish_row_kernel<A, T>, 1, 32, 0, stream, false,
                                         static_cast<const std::int64_t*>(total), static_cast<const ShardWork<T>*>(work),
                                         d_out);
          e != cudaSuccess) {
        return fail(e, "launching the finish");
      }
      return cudaSuccess;
    }
  }
  // Every other op and mode: the engine's pass, then the partials in rank order.
  std::size_t local_bytes = 0;
  if (cudaError_t e = fastreduce::detail::reduce_async<T, Op>(nullptr, local_bytes, d_shard, nullptr, n_local, op,
                                                               stream, opt);
      e != cudaSuccess) {
    return fail(e, "the local reduction's size query");
  }
  Carver c{static_cast<char*>(d_temp)};
  void* local = c.take<unsigned char>(local_bytes);
  A* send = c.take<A>(1);
  A* gathered = c.take<A>(ranks);
  if (const Carver::Settled settled = c.settle(temp_bytes); settled != Carver::Settled::Ready) {
    return settled == Carver::Settled::Query ? cudaSuccess : fail(cudaErrorInvalidValue, kShortStorage);
  }
  if (reinterpret_cast<std::uintptr_t>(d_out) % alignof(A) != 0) return fail(cudaErrorMisalignedAddress, "d_out is misaligned");
  if (cudaError_t e = fastreduce::detail::reduce_async<T, Op>(local, local_bytes, d_shard, send, n_local, op, stream, opt);
      e != cudaSuccess) {
    return fail(e, "the local reduction (d_shard, n_local)");
  }
  const char* what = nullptr;
  if (cudaError_t e = combine_ranks<A, Op>(transport, send, gathered, 1, d_out, op, stream, &what); e != cudaSuccess) {
    return fail(e, what);
  }
  return cudaSuccess;
}

template <class T, class Op>
cudaError_t reduce_axis_async_impl(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                                   const Axis& local, acc_t<T, Op>* d_out, Op op, cudaStream_t stream,
                                   const Options& options, std::size_t first, const char** message) {
  const Options opt = rank_options(options);
  using A = acc_t<T, Op>;
  const unsigned ranks = static_cast<unsigned>(transport.size());
  const Failure fail{message};
  if (!valid_transport(transport)) return fail(cudaErrorInvalidValue, "the transport's rank and size");
  std::size_t outputs = 0;
  if (__builtin_mul_overflow(local.outer, local.inner, &outputs)) return fail(cudaErrorInvalidValue, "outer * inner overflows");
  if constexpr (kReproSum<T, Op>) {
    // Same on every rank (every rank passes the same Options): no rank is left in a collective.
    if (opt.mode == Mode::Reproducible || opt.mode == Mode::Exact) {
      engine::AxisLayout layout{};
      if (const char* error = engine::resolve_axis(local, layout); error != nullptr) return fail(cudaErrorInvalidValue, error);
      if (d_temp != nullptr && reinterpret_cast<std::uintptr_t>(d_temp) % 16 != 0) {
        return fail(cudaErrorMisalignedAddress, "d_temp is not 16-byte aligned");
      }
      if (d_temp != nullptr && outputs > 0 && d_out == nullptr) return fail(cudaErrorInvalidValue, "d_out is null");
      if (outputs == 0) {  // the same on every rank: no collective
        if (d_temp == nullptr) temp_bytes = 16;
        return cudaSuccess;
      }
      if (opt.mode == Mode::Exact) {
        return reduce_axis_exact<T>(d_temp, temp_bytes, transport, d_shard, layout, d_out, stream, opt, fail);
      }
      return reduce_axis_repro<T>(d_temp, temp_bytes, transport, d_shard, layout, d_out, stream, opt, first, fail);
    }
  }
  std::size_t local_bytes = 0;
  if (cudaError_t e = fastreduce::detail::reduce_axis_async<T, Op>(nullptr, local_bytes, d_shard, nullptr, local, op,
                                                                    stream, opt);
      e != cudaSuccess) {
    return fail(e, "the local axis reduction's size query");
  }
  Carver c{static_cast<char*>(d_temp)};
  void* local_temp = c.take<unsigned char>(local_bytes);
  A* send = c.take<A>(outputs);
  A* gathered = c.take<A>(outputs * ranks);
  if (d_temp == nullptr) {
    temp_bytes = c.used;
    return cudaSuccess;
  }
  if (reinterpret_cast<std::uintptr_t>(d_temp) % 16 != 0) return fail(cudaErrorMisalignedAddress, "d_temp is not 16-byte aligned");
  if (temp_bytes < c.used) return fail(cudaErrorInvalidValue, "temp_bytes is smaller than the size query gave");
  if (outputs == 0) return cudaSuccess;  // the same on every rank: no collective
  if (d_out == nullptr) return fail(cudaErrorInvalidValue, "d_out is null");
  if (reinterpret_cast<std::uintptr_t>(d_out) % alignof(A) != 0) return fail(cudaErrorMisalignedAddress, "d_out is misaligned");
  if (cudaError_t e = fastreduce::detail::reduce_axis_async<T, Op>(local_temp, local_bytes, d_shard, send, local, op,
                                                                    stream, opt);
      e != cudaSuccess) {
    return fail(e, "the local axis reduction (d_shard, local)");
  }
  const char* what = nullptr;
  if (cudaError_t e = combine_ranks<A, Op>(transport, send, gathered, outputs, d_out, op, stream, &what); e != cudaSuccess) {
    return fail(e, what);
  }
  return cudaSuccess;
}

template <class T, class Op>
acc_t<T, Op> reduce_blocking(Transport& transport, const T* d_shard, std::size_t n_local, Op op, const Options& opt,
                             cudaStream_t stream) {
  using A = acc_t<T, Op>;
  const char* message = nullptr;
  auto fail = [&](cudaError_t status, const char* what) {
    std::string text = std::string("fastreduce::nccl::reduce: ") + what + ": " +
                       (message != nullptr ? message : cudaGetErrorString(status));
    const std::string detail = transport.last_error();
    if (!detail.empty()) text += " [" + detail + "]";
    throw Error(status, text);
  };
  std::size_t temp_bytes = 0;
  if (cudaError_t e = reduce_async_impl<T, Op>(nullptr, temp_bytes, transport, d_shard, n_local, nullptr, op, stream, opt,
                                               &message);
      e != cudaSuccess) {
    fail(e, "size query");
  }
  // Storage of this call alone, stream-ordered (not the engine's cache: its lock, held across the
  // collectives, would stop other ranks that share the stream, LocalGroup's in one process).
  void* temp = nullptr;
  check(cudaMallocAsync(&temp, temp_bytes + kAlign, stream), "fastreduce::nccl::reduce: cudaMallocAsync");
  A* d_out = reinterpret_cast<A*>(static_cast<char*>(temp) + align_up(temp_bytes));
  message = nullptr;
  const cudaError_t launched = reduce_async_impl<T, Op>(temp, temp_bytes, transport, d_shard, n_local, d_out, op, stream,
                                                        opt, &message);
  A result{};
  const cudaError_t copied =
      launched == cudaSuccess ? cudaMemcpyAsync(&result, d_out, sizeof(A), cudaMemcpyDeviceToHost, stream) : cudaSuccess;
  const cudaError_t freed = cudaFreeAsync(temp, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  if (launched != cudaSuccess) fail(launched, "arguments");
  check(copied, "fastreduce::nccl::reduce: copying the result");
  check(freed, "fastreduce::nccl::reduce: cudaFreeAsync");
  check(synced, "fastreduce::nccl::reduce: kernels and collectives");
  return result;
}

}  // namespace fastreduce::multi

namespace fastreduce::nccl::detail {

template <class T, class Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                         std::size_t n_local, acc_t<T, Op>* d_out, Op op, cudaStream_t stream, const Options& opt) {
  return multi::reduce_async_impl<T, Op>(d_temp, temp_bytes, transport, d_shard, n_local, d_out, op, stream, opt, nullptr);
}

template <class T, class Op>
acc_t<T, Op> reduce(Transport& transport, const T* d_shard, std::size_t n_local, Op op, const Options& opt,
                    cudaStream_t stream) {
  return multi::reduce_blocking<T, Op>(transport, d_shard, n_local, op, opt, stream);
}

template <class T, class Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                              const Axis& local, acc_t<T, Op>* d_out, Op op, cudaStream_t stream, const Options& opt,
                              std::size_t first) {
  return multi::reduce_axis_async_impl<T, Op>(d_temp, temp_bytes, transport, d_shard, local, d_out, op, stream, opt,
                                              first, nullptr);
}

}  // namespace fastreduce::nccl::detail

#define FASTREDUCE_INSTANTIATE_NCCL(T, Op)                                                                           \
  template cudaError_t fastreduce::nccl::detail::reduce_async<T, Op>(                                               \
      void*, std::size_t&, fastreduce::nccl::Transport&, const T*, std::size_t, fastreduce::acc_t<T, Op>*, Op,       \
      cudaStream_t, const fastreduce::Options&);                                                                     \
  template fastreduce::acc_t<T, Op> fastreduce::nccl::detail::reduce<T, Op>(                                        \
      fastreduce::nccl::Transport&, const T*, std::size_t, Op, const fastreduce::Options&, cudaStream_t);            \
  template cudaError_t fastreduce::nccl::detail::reduce_axis_async<T, Op>(                                          \
      void*, std::size_t&, fastreduce::nccl::Transport&, const T*, const fastreduce::Axis&,                          \
      fastreduce::acc_t<T, Op>*, Op, cudaStream_t, const fastreduce::Options&, std::size_t);

#define FASTREDUCE_INSTANTIATE_NCCL_INTEGER(T) \
  FASTREDUCE_INSTANTIATE_NCCL(T, Sum)          \
  FASTREDUCE_INSTANTIATE_NCCL(T, Prod)         \
  FASTREDUCE_INSTANTIATE_NCCL(T, Min)          \
  FASTREDUCE_INSTANTIATE_NCCL(T, Max)          \
  FASTREDUCE_INSTANTIATE_NCCL(T, BitAnd)       \
  FASTREDUCE_INSTANTIATE_NCCL(T, BitOr)        \
  FASTREDUCE_INSTANTIATE_NCCL(T, BitXor)

#define FASTREDUCE_INSTANTIATE_NCCL_FLOATING(T) \
  FASTREDUCE_INSTANTIATE_NCCL(T, Sum)           \
  FASTREDUCE_INSTANTIATE_NCCL(T, Prod)          \
  FASTREDUCE_INSTANTIATE_NCCL(T, Min)           \
  FASTREDUCE_INSTANTIATE_NCCL(T, Max)
