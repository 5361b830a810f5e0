// Planning of axis and segmented reductions: host arithmetic only, tested on the CPU.
//
// A shape (outer, length, inner) with element strides is first resolved (default strides filled
// in, sizes and offsets checked), then given a path by where its reduced elements lie:
//   RowsTile     contiguous short rows: a block stages a tile of whole rows in shared memory with
//                16-byte loads, then groups of threads reduce a row each (rows up to 256 bytes,
//                1 KB for the statistics and other reductions that are not built-in ops);
//   RowsLanes    back-to-back rows of a 16-byte aligned input, each a power of two of 16-byte
//                vectors up to 64 (1 KB; 128 for reductions of one input other than the built-in
//                ops) or part of one vector (2 or 4 rows a vector), for commutative reductions
//                whose inputs fill 16-byte vectors (two inputs: both aligned): a warp reads 32
//                adjacent vectors at a time, four such runs in flight, and the lanes that hold
//                one row meet in shuffles;
//   RowsWarp     rows whose elements are contiguous (length_stride 1): a warp per row;
//   RowsBlock    long rows: a block per row, or per piece of a row (partials and a combine kernel)
//                when there are too few rows to fill the GPU;
//   Columns      inner-contiguous (inner_stride 1): each thread walks down a pack of adjacent
//                columns (a 16-byte vector where the layout allows, else one element), the
//                block's threads split the rows, and pieces of the columns go to several blocks
//                when there are too few columns to fill the GPU;
//   Strided      any other view: a warp per output;
//   Map          an axis of length 1 over adjacent outputs, for reductions that are not built-in
//                ops: a thread per output, each output its one element's projection (the
//                statistics' per-output arithmetic in double hides behind the loads here);
//   ReproRows / ReproColumns  reproducible floating-point sums (see axis_repro.cuh);
//   Ordered      ops that are not commutative (detail/ordered.cuh);
//   Flat         one output over contiguous elements: the 1-D engine.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fastreduce/detail/policy.hpp"
#include "fastreduce/fastreduce.cuh"

namespace fastreduce::engine {

enum class AxisPath : unsigned char {
  Nothing,   // no outputs: nothing is launched
  Identity,  // length 0: the identity into every output
  Flat,
  RowsTile,
  RowsLanes,
  RowsWarp,
  RowsBlock,
  Columns,
  ColumnsScalar,
  Strided,
  Map,       // length 1, adjacent outputs: a thread per output
  ReproRows,
  ReproColumns,
  Ordered,   // an op that is not commutative: groups of `group` threads per output, in index order
};
const char* axis_path_name(AxisPath path);

// An Axis with every stride resolved.
struct AxisLayout {
  std::size_t outer = 1, length = 0, inner = 1;
  std::int64_t outer_stride = 0, length_stride = 0, inner_stride = 0;
  [[nodiscard]] std::size_t outputs() const { return outer * inner; }
  // One output over contiguous elements (or a single one): the 1-D engine's (AxisPath::Flat).
  [[nodiscard]] bool one_contiguous_output() const {
    return outputs() == 1 && (length_stride == 1 || length <= 1);
  }
  // Rows one after another: output q is elements [q * length, (q + 1) * length).
  [[nodiscard]] bool rows_back_to_back() const {
    return inner == 1 && (length_stride == 1 || length == 1) &&
           (outer == 1 || outer_stride == static_cast<std::int64_t>(length));
  }
};

// Fills in the contiguous strides and checks that the element count and every element's offset
// fit in 64 bits. Returns null, or the message of what is wrong.
const char* resolve_axis(const Axis& axis, AxisLayout& layout);

// Axis kernels: every block has kAxisThreads threads.
inline constexpr unsigned kAxisThreads = 256;
inline constexpr unsigned kAxisWarps = kAxisThreads / 32;
// RowsLanes: runs of 32 vectors a warp loads before it reduces any (loads in flight).
inline constexpr unsigned kLanesUnroll = 4;
// Map: outputs a thread loads before it computes any (loads in flight).
inline constexpr unsigned kMapOutputsPerThread = 4;

// Where the paths change (fast mode), in bytes of a row.
struct AxisPolicy {
  std::size_t tile_row_max_bytes;  // contiguous rows up to this: RowsTile
  std::size_t tile_row_max_bytes_family;  // ... for reductions other than the built-in ops, whose
                                          // larger states make a warp per row latency-bound
  std::size_t tile_bytes;          // a RowsTile block's tile
  std::size_t warp_row_max_bytes;  // rows up to this: RowsWarp (with enough rows to fill the GPU)
  std::size_t row_piece_min_bytes; // the smallest piece of a row worth a block of its own
  std::size_t column_piece_min_rows;  // rows per row lane: the smallest piece of a column
  std::size_t repro_warp_row_max_tiles;  // reproducible rows up to this many tiles: a warp per row
};
inline constexpr AxisPolicy kAxisPolicy{
    .tile_row_max_bytes = 256,
    .tile_row_max_bytes_family = 1024,
    .tile_bytes = 16384,
    .warp_row_max_bytes = 16384,
    .row_piece_min_bytes = 32768,
    .column_piece_min_rows = 32,
    .repro_warp_row_max_tiles = 4,
};

// An axis of length 1 whose outputs are adjacent elements (columns of one row, say) is the same
// reduction as rows of one element: each output is one element, output q at d_in + q. The layout
// is rewritten so (the tile path, whatever the axis was called); any other layout is returned as is.
inline AxisLayout length_one_as_rows(const AxisLayout& l) {
  if (l.length != 1 || l.outputs() <= 1) return l;
  const bool adjacent = (l.inner == 1 && l.outer_stride == 1) || (l.outer == 1 && l.inner_stride == 1) ||
                        (l.inner_stride == 1 && l.outer_stride == static_cast<std::int64_t>(l.inner));
  if (!adjacent) return l;
  AxisLayout rows{};
  rows.outer = l.outputs();
  rows.length = 1;
  rows.inner = 1;
  rows.outer_stride = 1;
  rows.length_stride = 1;
  rows.inner_stride = 1;
  return rows;
}

// The rows RowsLanes takes for a reduction (its inputs 16-byte aligned).
struct LanesRows {
  bool whole = false;     // rows of 1 to 64 whole 16-byte vectors (a power of two)
  bool halves = false;    // 2 rows a vector
  bool quarters = false;  // 4 rows a vector
  bool runs = false;      // rows of 128 vectors: a warp's run of 32 x kLanesUnroll vectors each
  static constexpr LanesRows all() { return {true, true, true, true}; }
  constexpr bool any() const { return whole || halves || quarters || runs; }
};

// RowsLanes takes the layout (when its inputs are 16-byte aligned): rows back to back whose bytes
// are 16 times a power of two up to 128 (vectors a row), or 2 or 4 rows to a 16-byte vector, of
// the kinds in `rows`.
bool rows_lanes_fit(const AxisLayout& layout, std::size_t elem_size, LanesRows rows = LanesRows::all());

// tile_ok: the reduction can take RowsTile (one input of a type that fills 16-byte vectors);
// tile_row_max: the longest row in bytes that takes it; map_ok: the reduction takes Map; lanes:
// the rows it takes RowsLanes for (a commutative reduction whose inputs are 16-byte aligned).
AxisPath choose_axis_path(const AxisLayout& layout, std::size_t elem_size, bool reproducible_sum, int sms,
                          bool tile_ok = true, std::size_t tile_row_max = kAxisPolicy.tile_row_max_bytes,
                          bool map_ok = false, LanesRows lanes = {});

struct AxisPlan {
  AxisPath path = AxisPath::Nothing;
  unsigned grid = 0;            // blocks of the main kernel (its loops stride over the work items)
  std::size_t items = 0;        // work items: rows or tiles of rows, row pieces, column blocks x pieces;
                                // RowsLanes: runs of 32 * kLanesUnroll vectors (a warp's each)
  unsigned chunks = 1;          // pieces of each row or column; > 1: partials and a second kernel
  std::size_t chunk = 0;        // elements (rows), rows (columns) or tiles (reproducible) per piece;
                                // RowsLanes: whole 16-byte vectors of all the rows
  unsigned group = 1;           // RowsTile: threads per row; RowsLanes: vectors per row (1: a
                                // vector holds rows_per_tile rows); ReproRows: warps per row;
                                // Columns: column packs per block; ReproColumns: outputs per warp
  unsigned lanes = 1;           // Columns: row lanes per block
  std::size_t col_blocks = 0;   // Columns, ReproColumns: blocks across the outputs
  std::size_t rows_per_tile = 0;  // RowsTile; RowsLanes: rows per vector (1: a row is `group` vectors)
  std::size_t temp_bytes = 16;  // never 0; does not depend on the input's address
  bool combine = false;         // a second kernel combines the pieces
};

// Plans `path` for the layout. blocks_per_sm: of the path's main kernel; in_aligned: d_in is
// 16-byte aligned (Columns needs it for vectors); repro_words: 8-byte words of an exact
// accumulator row (reproducible paths); exact_lanes: Mode::Exact's lanes, which may spill a piece
// per element into a column's limbs (shorter pieces keep the limbs below 2^63); lanes_loop:
// RowsLanes launches at most 16 waves of its resident blocks, which loop over the warps' runs
// (else a block per kAxisWarps runs).
AxisPlan plan_axis(AxisPath path, const AxisLayout& layout, std::size_t elem_size, std::size_t acc_size,
                   int sms, int blocks_per_sm, unsigned max_blocks, unsigned repro_words, bool exact_lanes = false,
                   bool lanes_loop = false);

// The ordered path's group of threads per output (1, a warp or a block of kOrderedThreads) for
// `outputs` outputs of `length` elements each; inner_contiguous: adjacent outputs are adjacent
// elements (a thread per output reads them together).
unsigned ordered_group(std::size_t outputs, std::size_t length, bool inner_contiguous);
AxisPlan plan_ordered_axis(std::size_t outputs, std::size_t length, bool inner_contiguous, int sms, int blocks_per_sm,
                           unsigned max_blocks);

// Columns can use 16-byte vectors: inner-contiguous, and every row of every outer slice starts
// on a 16-byte boundary when d_in does.
bool columns_vectorizable(const AxisLayout& layout, std::size_t elem_size, bool in_aligned);

// Segmented reductions: segments are cut into pieces of kSegmentPiece elements (an empty segment
// is one piece); warps take equal runs of pieces, and a second kernel joins the segments cut by
// the runs' boundaries.
inline constexpr std::size_t kSegmentPiece = 4096;
struct SegmentPlan {
  unsigned grid = 0;             // blocks of kAxisThreads: grid * kAxisWarps workers
  std::size_t pieces_offset = 0; // temp: pieces per segment (8 bytes each)
  std::size_t scan_offset = 0;   // temp: their inclusive scan (8 bytes each)
  std::size_t scan_temp_offset = 0;  // temp: the scan's own storage
  std::size_t slots_offset = 0;  // temp: two partials per worker
  std::size_t temp_bytes = 16;
};
SegmentPlan plan_segments(std::size_t num_segments, std::size_t acc_size, std::size_t scan_temp_bytes, int sms,
                          int blocks_per_sm, unsigned max_blocks);

}  // namespace fastreduce::engine
