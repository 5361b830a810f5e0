// The fast-mode kernels of axis and segmented reductions (paths: engine/axis_plan.hpp). Each
// output is reduced by one thread group (a group of lanes, a warp or a block) in an order fixed by
// the shape, the plan and the address modulo 16, so results are bitwise repeatable. Pieces of
// long rows or columns leave partials that a second kernel combines in index order (launched with
// programmatic dependent launch on sm_90, like the 1-D engine's combine). No block ever waits for
// another.
#pragma once

#include <cstdint>

#include "engine/axis_plan.hpp"
#include "fastreduce/fastreduce.cuh"
#include "primitives/block_reduce.cuh"
#include "primitives/grid_finish.cuh"
#include "primitives/vector.cuh"
#include "primitives/warp_reduce.cuh"

namespace fastreduce::engine {

using primitives::kFullMask;

// A thread's part of the reduction of p[0, n) by a group of Group threads (this one is `rank`):
// the elements before the first 16-byte boundary, then 16-byte vectors (Unroll in flight), then
// the elements after the last whole vector.
template <unsigned Group, unsigned Unroll, class A, class T, class Op>
__device__ __forceinline__ A range_partial(const T* p, std::size_t n, unsigned rank, Op op) {
  using primitives::load_vec;
  using primitives::reduce_vec;
  using primitives::to_acc;
  using primitives::Vec;
  constexpr unsigned V = primitives::kVecElems<T>;
  const std::uintptr_t misalignment = reinterpret_cast<std::uintptr_t>(p) % 16;
  std::size_t head = misalignment == 0 ? 0 : (16 - misalignment) / sizeof(T);
  head = head < n ? head : n;
  const std::size_t vectors = (n - head) / V;
  A acc = Op::template identity<A>();
  for (std::size_t k = rank; k < head; k += Group) acc = op(acc, to_acc<A>(p[k]));
  const Vec<T>* body = reinterpret_cast<const Vec<T>*>(p + head);
  std::size_t i = rank;
  for (; i + (Unroll - 1) * Group < vectors; i += Unroll * Group) {
    Vec<T> v[Unroll];
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) v[u] = load_vec(body + i + u * Group);
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) acc = op(acc, reduce_vec<A>(v[u], op));
  }
#pragma unroll
  for (unsigned u = 0; u + 1 < Unroll; ++u) {
    if (i + u * Group < vectors) acc = op(acc, reduce_vec<A>(load_vec(body + i + u * Group), op));
  }
  for (std::size_t k = head + vectors * V + rank; k < n; k += Group) acc = op(acc, to_acc<A>(p[k]));
  return acc;
}

// Rows of an axis layout whose elements are contiguous: row r is output r = o * inner + i.
template <class T>
struct AxisRows {
  const T* in;
  std::size_t length;
  std::size_t inner;
  std::int64_t outer_stride;
  std::int64_t inner_stride;
  __device__ __forceinline__ const T* row(std::size_t r) const {
    if (inner == 1) return in + static_cast<std::int64_t>(r) * outer_stride;
    return in + static_cast<std::int64_t>(r / inner) * outer_stride + static_cast<std::int64_t>(r % inner) * inner_stride;
  }
};

template <class A>
__global__ void __launch_bounds__(kAxisThreads) axis_identity_kernel(A* out, std::size_t count, A identity) {
  for (std::size_t q = std::size_t(blockIdx.x) * kAxisThreads + threadIdx.x; q < count;
       q += std::size_t(gridDim.x) * kAxisThreads) {
    out[q] = identity;
  }
}

template <class T, class A>
struct TileArgs {
  const T* in;
  std::size_t rows;
  std::size_t length;
  std::size_t rows_per_tile;
  std::size_t tiles;
  unsigned group;  // threads per row: a power of two up to 32
  A* out;
};

// Contiguous short rows: each block stages whole rows (a tile of at most kAxisPolicy.tile_bytes)
// in shared memory with 16-byte loads, then groups of `group` threads reduce a row each and the
// group's first thread writes it.
template <class T, class Op>
__global__ void __launch_bounds__(kAxisThreads) axis_tile_kernel(TileArgs<T, acc_t<T, Op>> args, Op op) {
  using A = acc_t<T, Op>;
  using primitives::Vec;
  constexpr unsigned V = primitives::kVecElems<T>;
  constexpr std::size_t kTileElems = kAxisPolicy.tile_bytes / sizeof(T);
  __shared__ Vec<T> staged[kTileElems / V + 2];
  const T* smem = reinterpret_cast<const T*>(staged);
  const std::uintptr_t misalignment = reinterpret_cast<std::uintptr_t>(args.in) % 16;
  const std::size_t head = misalignment == 0 ? 0 : (16 - misalignment) / sizeof(T);  // < V
  const unsigned group = args.group;
  const unsigned rank = threadIdx.x % group;
  for (std::size_t tile = blockIdx.x; tile < args.tiles; tile += gridDim.x) {
    const std::size_t r0 = tile * args.rows_per_tile;
    const std::size_t rows = args.rows - r0 < args.rows_per_tile ? args.rows - r0 : args.rows_per_tile;
    const std::size_t s = r0 * args.length;
    const std::size_t e = s + rows * args.length;
    // Shared element j holds element base + j, base the vector boundary at or below s (it may lie
    // before d_in: those slots are never read).
    const std::size_t off = (s + V - head) % V;
    const std::size_t first_vec = off == 0 ? s : s - off + V;                 // first boundary >= s
    const std::size_t end_vec = e >= first_vec ? first_vec + (e - first_vec) / V * V : first_vec;
    const std::size_t vectors = (end_vec - first_vec) / V;
    T* dst = reinterpret_cast<T*>(staged);
    const Vec<T>* src = reinterpret_cast<const Vec<T>*>(args.in + first_vec);
    Vec<T>* vdst = staged + (first_vec - s + off) / V;
    for (std::size_t j = threadIdx.x; j < vectors; j += kAxisThreads) vdst[j] = primitives::load_vec(src + j);
    const std::size_t lead = (first_vec < e ? first_vec : e) - s;  // elements before the first vector
    if (threadIdx.x < lead) dst[off + threadIdx.x] = args.in[s + threadIdx.x];
    const std::size_t trail_begin = end_vec > s + lead ? end_vec : s + lead;
    if (trail_begin + threadIdx.x < e) dst[off + trail_begin - s + threadIdx.x] = args.in[trail_begin + threadIdx.x];
    __syncthreads();  // the tile is staged
    const unsigned per_pass = kAxisThreads / group;
    // Rows of whole vectors that start on a vector in shared memory are read a vector at a time
    // (4- and 8-byte types: measured slower for 2-byte ones, whose vectors are 8 elements).
    const bool vector_rows = sizeof(T) >= 4 && off == 0 && args.length % V == 0;
    for (std::size_t first_row = 0; first_row < rows; first_row += per_pass) {
      const std::size_t r = first_row + threadIdx.x / group;
      A acc = Op::template identity<A>();
      if (r < rows && vector_rows) {
        const Vec<T>* row = staged + r * args.length / V;
        for (std::size_t j = rank; j < args.length / V; j += group) acc = op(acc, primitives::reduce_vec<A>(row[j], op));
      } else if (r < rows) {
        const T* row = smem + off + r * args.length;
        for (std::size_t k = rank; k < args.length; k += group) acc = op(acc, primitives::to_acc<A>(row[k]));
      }
      for (unsigned offset = group / 2; offset > 0; offset /= 2) acc = op(acc, primitives::shfl_xor(acc, offset));
      if (r < rows && rank == 0) args.out[r0 + r] = acc;
    }
    __syncthreads();  // every row is read before the next tile is staged
  }
}

template <class T, class A>
struct RowsArgs {
  AxisRows<T> rows;
  std::size_t items;  // rows * chunks
  unsigned chunks;
  std::size_t chunk;  // elements per piece (the whole row when chunks == 1)
  A* partials;        // chunks > 1: partials[row * chunks + piece]
  A* out;
};

// Rows whose elements are contiguous: a warp (Group 32) or the block (Group kAxisThreads) per
// row or piece of a row.
template <unsigned Group, class T, class Op>
__global__ void __launch_bounds__(kAxisThreads) axis_rows_kernel(RowsArgs<T, acc_t<T, Op>> args, Op op) {
  using A = acc_t<T, Op>;
  constexpr unsigned kPerBlock = kAxisThreads / Group;
  __shared__ primitives::BlockReduceStorage<A, kAxisThreads> storage;
  const unsigned rank = threadIdx.x % Group;
  for (std::size_t item = std::size_t(blockIdx.x) * kPerBlock + threadIdx.x / Group; item < args.items;
       item += std::size_t(gridDim.x) * kPerBlock) {
    const std::size_t r = item / args.chunks;
    const std::size_t begin = (item % args.chunks) * args.chunk;
    const std::size_t end = begin + args.chunk < args.rows.length ? begin + args.chunk : args.rows.length;
    A acc = range_partial<Group, 4, A>(args.rows.row(r) + begin, end - begin, rank, op);
    if constexpr (Group == 32) {
      acc = primitives::warp_reduce(acc, op);
    } else {
      acc = primitives::block_reduce<kAxisThreads>(acc, op, storage);
    }
    if (rank == 0) {
      if (args.chunks == 1) args.out[r] = acc;
      else args.partials[item] = acc;
    }
    if constexpr (Group != 32) __syncthreads();  // warp 0 is done with `storage`
  }
}

// out[r] = op over the pieces of row r, in piece order: a warp per row.
template <class A, class Op>
__global__ void __launch_bounds__(kAxisThreads) combine_row_pieces_kernel(const A* partials, std::size_t rows,
                                                                          unsigned chunks, A* out, Op op) {
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t r = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32; r < rows;
       r += std::size_t(gridDim.x) * kAxisWarps) {
    A acc = Op::template identity<A>();
    for (unsigned c = lane; c < chunks; c += 32) acc = op(acc, primitives::load_from_l2(partials + r * chunks + c));
    acc = primitives::warp_reduce(acc, op);
    if (lane == 0) out[r] = acc;
  }
}

template <class T, class A>
struct ColumnsArgs {
  const T* in;
  std::size_t outer, length, inner;
  std::int64_t outer_stride, length_stride;
  unsigned width;  // packs of columns per block
  unsigned lanes;  // row lanes per block: thread t takes pack t % width, rows t / width + lanes * m
  std::size_t col_blocks;
  unsigned chunks;
  std::size_t chunk;  // rows per piece
  std::size_t items;  // outer * chunks * col_blocks
  A* partials;        // chunks > 1: partials[(o * chunks + piece) * inner + i]
  A* out;
};

template <unsigned Pack, class T>
__device__ __forceinline__ primitives::Vec<T> load_pack(const T* p) {
  if constexpr (Pack == 1) {
    primitives::Vec<T> v;
    v.elem[0] = *p;
    return v;
  } else {
    return primitives::load_vec(reinterpret_cast<const primitives::Vec<T>*>(p));
  }
}

// Inner-contiguous columns: thread t walks down a pack of Pack adjacent columns (a 16-byte
// vector, or one element), taking every lanes-th row of the block's piece; the row lanes' partials
// then meet in shared memory in lane order.
template <unsigned Pack, class T, class Op>
__global__ void __launch_bounds__(kAxisThreads) axis_columns_kernel(ColumnsArgs<T, acc_t<T, Op>> args, Op op) {
  using A = acc_t<T, Op>;
  __shared__ A stage[kAxisThreads * Pack];
  const unsigned w = threadIdx.x % args.width;
  const unsigned kk = threadIdx.x / args.width;
  const std::int64_t ls = args.length_stride;
  for (std::size_t item = blockIdx.x; item < args.items; item += gridDim.x) {
    const std::size_t cb = item % args.col_blocks;
    const std::size_t rest = item / args.col_blocks;
    const std::size_t piece = rest % args.chunks;
    const std::size_t o = rest / args.chunks;
    const std::size_t col = (cb * args.width + w) * Pack;
    A acc[Pack];
#pragma unroll
    for (unsigned e = 0; e < Pack; ++e) acc[e] = Op::template identity<A>();
    if (kk < args.lanes && col < args.inner) {
      const T* base = args.in + static_cast<std::int64_t>(o) * args.outer_stride + static_cast<std::int64_t>(col);
      const std::size_t k_end = piece * args.chunk + args.chunk < args.length ? piece * args.chunk + args.chunk : args.length;
      std::size_t k = piece * args.chunk + kk;
      const std::size_t step = args.lanes;
      for (; k + 3 * step < k_end; k += 4 * step) {
        primitives::Vec<T> v[4];
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) v[u] = load_pack<Pack>(base + static_cast<std::int64_t>(k + u * step) * ls);
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) {
#pragma unroll
          for (unsigned e = 0; e < Pack; ++e) acc[e] = op(acc[e], primitives::to_acc<A>(v[u].elem[e]));
        }
      }
      for (; k < k_end; k += step) {
        const primitives::Vec<T> v = load_pack<Pack>(base + static_cast<std::int64_t>(k) * ls);
#pragma unroll
        for (unsigned e = 0; e < Pack; ++e) acc[e] = op(acc[e], primitives::to_acc<A>(v.elem[e]));
      }
    }
#pragma unroll
    for (unsigned e = 0; e < Pack; ++e) stage[threadIdx.x * Pack + e] = acc[e];
    __syncthreads();  // every lane's partials are staged
    const unsigned columns = args.width * Pack;
    for (unsigned j = threadIdx.x; j < columns; j += kAxisThreads) {
      const std::size_t i = cb * columns + j;
      if (i >= args.inner) break;
      A v = Op::template identity<A>();
      for (unsigned l = 0; l < args.lanes; ++l) v = op(v, stage[l * columns + j]);
      if (args.chunks == 1) args.out[o * args.inner + i] = v;
      else args.partials[(o * args.chunks + piece) * args.inner + i] = v;
    }
    __syncthreads();  // `stage` is read before the next item writes it
  }
}

// out[o * inner + i] = op over the pieces of that column. A block per 32 outputs (its lanes): the
// warps take every kAxisWarps-th piece, then their partials meet in warp order. The order depends
// only on the piece count, so results are repeatable.
template <class A, class Op>
__global__ void __launch_bounds__(kAxisThreads) combine_column_pieces_kernel(const A* partials, std::size_t outer,
                                                                             std::size_t inner, unsigned chunks,
                                                                             A* out, Op op) {
  __shared__ A stage[kAxisWarps][32];
  primitives::wait_for_prior_grid();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  for (std::size_t first = std::size_t(blockIdx.x) * 32; first < outer * inner; first += std::size_t(gridDim.x) * 32) {
    const std::size_t q = first + lane;
    A acc = Op::template identity<A>();
    if (q < outer * inner) {
      const A* column = partials + (q / inner) * chunks * inner + q % inner;
      unsigned c = warp;
      for (; c + 3 * kAxisWarps < chunks; c += 4 * kAxisWarps) {
        A v[4];
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) v[u] = primitives::load_from_l2(column + std::size_t(c + u * kAxisWarps) * inner);
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) acc = op(acc, v[u]);
      }
      for (; c < chunks; c += kAxisWarps) acc = op(acc, primitives::load_from_l2(column + std::size_t(c) * inner));
    }
    stage[warp][lane] = acc;
    __syncthreads();  // every warp's partial is staged
    if (warp == 0 && q < outer * inner) {
      A total = stage[0][lane];
      for (unsigned w = 1; w < kAxisWarps; ++w) total = op(total, stage[w][lane]);
      out[q] = total;
    }
    __syncthreads();  // `stage` is read before the next round writes it
  }
}

template <class T, class A>
struct StridedArgs {
  const T* in;
  std::size_t outputs, length, inner;
  std::int64_t outer_stride, length_stride, inner_stride;
  A* out;
};

// Any other view: a warp per output, its lanes striding along the reduced axis.
template <class T, class Op>
__global__ void __launch_bounds__(kAxisThreads) axis_strided_kernel(StridedArgs<T, acc_t<T, Op>> args, Op op) {
  using A = acc_t<T, Op>;
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t q = std::size_t(blockIdx.x) * kAxisWarps + threadIdx.x / 32; q < args.outputs;
       q += std::size_t(gridDim.x) * kAxisWarps) {
    const T* base = args.in + static_cast<std::int64_t>(q / args.inner) * args.outer_stride +
                    static_cast<std::int64_t>(q % args.inner) * args.inner_stride;
    A acc = Op::template identity<A>();
    for (std::size_t k = lane; k < args.length; k += 32) {
      acc = op(acc, primitives::to_acc<A>(base[static_cast<std::int64_t>(k) * args.length_stride]));
    }
    acc = primitives::warp_reduce(acc, op);
    if (lane == 0) args.out[q] = acc;
  }
}

}  // namespace fastreduce::engine
