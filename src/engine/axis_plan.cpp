#include "fastreduce/detail/axis_plan.hpp"

#include <algorithm>
#include <limits>

namespace fastreduce::engine {

namespace {
std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0); }

// Reproducible pieces: each warp adds 64 pieces of at most 2^32 per tile into a 64-bit limb, so at
// most 2^24 tiles per piece keep every limb below 2^63.
constexpr std::size_t kMaxPieceTiles = std::size_t(1) << 24;
// Mode::Exact's columns: per tile a column's limb may take a piece from every element's spill
// (32 * 128), from two failed chain joins per lane (32 * 4) and from the lane pairs' flushes (64):
// 4288 pieces of at most 2^32 - 1. 2^18 tiles per piece keep every limb below 2^63.
constexpr std::size_t kMaxExactPieceTiles = std::size_t(1) << 18;
static_assert(4288.0 * 4294967295.0 * double(kMaxExactPieceTiles) < 9223372036854775808.0);

// The columns kernel loops over its items (short columns: a block's 16 KB or so of rows). A grid
// of every item had the block scheduler start a block per item; at most kItemWaves times the
// resident blocks, each block loops over one to a few dozen (H200, 2^28 elements: float var and
// argmax down columns of 4 1.12x, var down columns of 3 1.14x; docs/notes.md, "The columns
// kernel's grid: 16 waves"). The rows-lanes kernel takes the same cap only where the reduction
// asks for it (axis_dispatch.cuh, lanes_loop): there it sped the moments up to 1.14x and the
// means up to 1.10x, but cost sums over rows of 4 and the dot product 2-3%.
constexpr std::size_t kItemWaves = 16;

std::size_t resident_blocks(int sms, int blocks_per_sm, unsigned max_blocks) {
  std::size_t capacity = std::max<std::size_t>(1, std::size_t(std::max(sms, 1)) * std::max(blocks_per_sm, 1));
  if (max_blocks > 0) capacity = std::min<std::size_t>(capacity, max_blocks);
  return capacity;
}

// Blocks launched for `items` work items of `per_block` each: all of them, or max_blocks (the
// kernels loop over the rest).
unsigned grid_for(std::size_t items, std::size_t per_block, unsigned max_blocks) {
  std::size_t grid = std::max<std::size_t>(1, ceil_div(items, per_block));
  grid = std::min<std::size_t>(grid, std::numeric_limits<int>::max());
  if (max_blocks > 0) grid = std::min<std::size_t>(grid, max_blocks);
  return static_cast<unsigned>(grid);
}

// grid_for's grid, and at most kItemWaves times the resident blocks.
unsigned waves_for(std::size_t items, std::size_t per_block, unsigned max_blocks, std::size_t resident) {
  return static_cast<unsigned>(std::min<std::size_t>(grid_for(items, per_block, max_blocks), kItemWaves * resident));
}

unsigned pow2_floor(std::size_t x) {
  unsigned p = 1;
  while (std::size_t(p) * 2 <= x && p < (1u << 30)) p *= 2;
  return p;
}

// Cuts `extent` into `chunks` pieces of a whole number of `granule`s (the last one shorter):
// sets the plan's piece size and count, and when there is more than one piece, the combine
// kernel and `piece_bytes` of temporary storage per piece.
void cut_into_pieces(AxisPlan& plan, std::size_t extent, std::size_t chunks, std::size_t granule,
                     std::size_t piece_bytes) {
  plan.chunk = ceil_div(ceil_div(extent, chunks), granule) * granule;
  plan.chunks = static_cast<unsigned>(ceil_div(extent, plan.chunk));
  plan.combine = plan.chunks > 1;
  if (plan.combine) plan.temp_bytes = plan.chunks * piece_bytes;
}

// Column packs per block: all of them up to kAxisThreads, halved (not below 8: 128 bytes of a row)
// while outer * blocks stays under twice the resident blocks.
std::size_t column_block_width(std::size_t packs, std::size_t outer, std::size_t resident) {
  std::size_t width = std::min<std::size_t>(packs, kAxisThreads);
  for (int halvings = 0; halvings < 5; ++halvings) {
    if (width <= 8 || outer * ceil_div(packs, width) >= 2 * resident) break;
    width /= 2;
  }
  return width;
}

// Pieces of `extent` (at least `min_piece` each) that give `base` items at least twice the
// resident blocks.
std::size_t pieces_for(std::size_t base, std::size_t extent, std::size_t min_piece, std::size_t resident) {
  if (base >= 2 * resident || extent == 0) return 1;
  const std::size_t want = ceil_div(2 * resident, base);
  return std::max<std::size_t>(1, std::min(want, ceil_div(extent, std::max<std::size_t>(min_piece, 1))));
}

// Pieces of each of `rows` rows, for a block a piece. pieces_for rounds 2 * resident / rows up;
// rounded down instead, the blocks stay within two waves of the resident ones. Of the two, the
// count whose last wave wastes less (fewer waves a piece's length), the smaller on a tie.
// Measured on an H100: 64 rows of 2^22 bfloat16 on 528 resident blocks ran 7% faster in 16
// pieces a row (1.94 waves) than in 17 (2.06); 1024 rows of 2^18 floats on 1056, 4% faster in 2
// (1.94) than in 3 (2.91). Rows between one and two waves' worth keep 2 pieces (1100 rows: 1.04
// waves of whole rows against 2.08 of halves).
std::size_t row_pieces_for(std::size_t rows, std::size_t length, std::size_t min_piece, std::size_t resident) {
  const std::size_t up = pieces_for(rows, length, min_piece, resident);
  const std::size_t down = std::max<std::size_t>(1, 2 * resident / rows);
  if (up <= down) return up;
  // ceil(rows * p / resident) / p, compared without division: waves(down) * up <= waves(up) * down.
  return ceil_div(rows * down, resident) * up <= ceil_div(rows * up, resident) * down ? down : up;
}
}  // namespace

const char* axis_path_name(AxisPath path) {
  switch (path) {
    case AxisPath::Nothing: return "nothing";
    case AxisPath::Identity: return "identity";
    case AxisPath::Flat: return "flat";
    case AxisPath::RowsTile: return "rows-tile";
    case AxisPath::RowsLanes: return "rows-lanes";
    case AxisPath::RowsWarp: return "rows-warp";
    case AxisPath::RowsBlock: return "rows-block";
    case AxisPath::Columns: return "columns";
    case AxisPath::ColumnsScalar: return "columns-scalar";
    case AxisPath::Strided: return "strided";
    case AxisPath::Map: return "map";
    case AxisPath::ReproRows: return "repro-rows";
    case AxisPath::ReproColumns: return "repro-columns";
    case AxisPath::Ordered: return "ordered";
  }
  return "?";
}

const char* resolve_axis(const Axis& axis, AxisLayout& layout) {
  layout.outer = axis.outer;
  layout.length = axis.length;
  layout.inner = axis.inner;
  using u128 = unsigned __int128;
  const u128 outputs = u128(axis.outer) * axis.inner;
  if (outputs > u128(std::numeric_limits<std::int64_t>::max())) return "outer * inner overflows";
  if (outputs * axis.length > u128(std::numeric_limits<std::int64_t>::max())) {
    return "outer * length * inner overflows";
  }
  constexpr std::ptrdiff_t kContiguous = Axis::kContiguous;
  layout.inner_stride = axis.inner_stride == kContiguous ? 1 : axis.inner_stride;
  layout.length_stride =
      axis.length_stride == kContiguous ? static_cast<std::int64_t>(axis.inner) : axis.length_stride;
  layout.outer_stride = axis.outer_stride == kContiguous ? static_cast<std::int64_t>(axis.inner * axis.length)
                                                         : axis.outer_stride;
  if (outputs == 0 || axis.length == 0) return nullptr;
  // The farthest element from d_in on either side must be addressable.
  using i128 = __int128;
  i128 reach = 0;
  const std::size_t extents[3] = {axis.outer, axis.length, axis.inner};
  const std::int64_t strides[3] = {layout.outer_stride, layout.length_stride, layout.inner_stride};
  for (int d = 0; d < 3; ++d) {
    const i128 s = strides[d] < 0 ? -i128(strides[d]) : i128(strides[d]);
    reach += s * i128(extents[d] - 1);
  }
  if (reach > i128(std::numeric_limits<std::int64_t>::max() / 16)) return "a stride puts elements out of reach";
  return nullptr;
}

AxisPath choose_axis_path(const AxisLayout& layout, std::size_t elem_size, bool reproducible_sum, int sms,
                          bool tile_ok, std::size_t tile_row_max, bool map_ok, LanesRows lanes) {
  const std::size_t outputs = layout.outputs();
  if (outputs == 0) return AxisPath::Nothing;
  if (layout.length == 0) return AxisPath::Identity;
  const bool rows_contiguous = layout.length_stride == 1 || layout.length == 1;
  if (layout.one_contiguous_output()) return AxisPath::Flat;
  if (reproducible_sum) return rows_contiguous ? AxisPath::ReproRows : AxisPath::ReproColumns;
  const std::size_t row_bytes = layout.length * elem_size;
  const bool contiguous_rows = layout.rows_back_to_back();
  if (map_ok && contiguous_rows && layout.length == 1) return AxisPath::Map;
  if (lanes.any() && rows_lanes_fit(layout, elem_size, lanes)) return AxisPath::RowsLanes;
  if (tile_ok && contiguous_rows && row_bytes <= tile_row_max) return AxisPath::RowsTile;
  if (layout.length_stride == 1) {
    const bool enough_rows = outputs >= std::size_t(std::max(sms, 1)) * kAxisWarps;
    return row_bytes <= kAxisPolicy.warp_row_max_bytes && enough_rows ? AxisPath::RowsWarp : AxisPath::RowsBlock;
  }
  if (layout.inner_stride == 1 || layout.inner == 1) return AxisPath::Columns;
  return AxisPath::Strided;
}

bool rows_lanes_fit(const AxisLayout& layout, std::size_t elem_size, LanesRows rows) {
  if (elem_size == 0 || elem_size > 16 || 16 % elem_size != 0 || layout.length == 0) return false;
  if (!layout.rows_back_to_back()) return false;
  const std::size_t row_bytes = layout.length * elem_size;
  if (row_bytes < 16) {  // 2 or 4 rows a vector
    if (row_bytes == 8) return rows.halves;
    if (row_bytes == 4) return rows.quarters;
    return false;
  }
  const std::size_t vectors = row_bytes / 16;
  if (row_bytes % 16 != 0) return false;
  if (vectors == 32 * kLanesUnroll) return rows.runs;
  if (vectors > 64 || (vectors & (vectors - 1)) != 0) return false;
  return rows.whole;
}

bool columns_vectorizable(const AxisLayout& layout, std::size_t elem_size, bool in_aligned) {
  if (elem_size > 8 || 16 % elem_size != 0) return false;
  const std::size_t v = 16 / elem_size;
  if (!in_aligned || (layout.inner_stride != 1 && layout.inner > 1)) return false;
  if (layout.inner % v != 0) return false;
  if (layout.length > 1 && layout.length_stride % std::int64_t(v) != 0) return false;
  if (layout.outer > 1 && layout.outer_stride % std::int64_t(v) != 0) return false;
  return true;
}

AxisPlan plan_axis(AxisPath path, const AxisLayout& layout, std::size_t elem_size, std::size_t acc_size, int sms,
                   int blocks_per_sm, unsigned max_blocks, unsigned repro_words, bool exact_lanes,
                   bool lanes_loop) {
  AxisPlan plan{};
  plan.path = path;
  const std::size_t outputs = layout.outputs();
  const std::size_t resident = resident_blocks(sms, blocks_per_sm, max_blocks);
  const std::size_t v = std::max<std::size_t>(1, 16 / elem_size);  // elements a 16-byte vector (1: larger elements)
  switch (path) {
    case AxisPath::Nothing:
    case AxisPath::Flat:
    case AxisPath::Ordered:  // plan_ordered_axis
      break;
    case AxisPath::Identity:
      plan.items = outputs;
      plan.grid = grid_for(outputs, kAxisThreads, max_blocks);
      break;
    case AxisPath::RowsTile: {
      const std::size_t tile_elems = kAxisPolicy.tile_bytes / elem_size;
      plan.rows_per_tile = std::max<std::size_t>(1, tile_elems / layout.length);
      // Two vectors a thread (4- and 8-byte types, read by vectors), else 8 elements.
      const std::size_t per_thread = elem_size >= 4 ? 2 * v : 8;
      plan.group = std::min(32u, pow2_floor(std::max<std::size_t>(1, layout.length / per_thread)));
      plan.items = ceil_div(outputs, plan.rows_per_tile);
      plan.grid = grid_for(plan.items, 1, max_blocks);
      break;
    }
    case AxisPath::RowsLanes: {
      // Warps take runs of 32 * kLanesUnroll vectors; rows that end inside a last partial vector
      // (rows of part of a vector) are the first block's.
      const std::size_t row_bytes = layout.length * elem_size;
      plan.group = row_bytes >= 16 ? static_cast<unsigned>(row_bytes / 16) : 1u;
      plan.rows_per_tile = row_bytes >= 16 ? 1 : 16 / row_bytes;
      plan.chunk = outputs * layout.length / v;  // whole vectors
      plan.items = ceil_div(plan.chunk, std::size_t(32) * kLanesUnroll);
      plan.grid = lanes_loop ? waves_for(plan.items, kAxisWarps, max_blocks, resident)
                             : grid_for(plan.items, kAxisWarps, max_blocks);
      break;
    }
    case AxisPath::RowsWarp:
      plan.items = outputs;
      plan.grid = grid_for(outputs, kAxisWarps, max_blocks);
      break;
    case AxisPath::RowsBlock: {
      const std::size_t min_piece = std::max<std::size_t>(kAxisPolicy.row_piece_min_bytes / elem_size, v);
      cut_into_pieces(plan, layout.length, row_pieces_for(outputs, layout.length, min_piece, resident), v,
                      outputs * acc_size);
      plan.items = outputs * plan.chunks;
      plan.grid = grid_for(plan.items, 1, max_blocks);
      break;
    }
    case AxisPath::Columns:
    case AxisPath::ColumnsScalar: {
      // Blocks across the columns first (narrower blocks, down to 8 packs = 128 bytes of a row),
      // pieces of the columns only when that is not enough to fill the GPU twice over. The pieces
      // come from the vector geometry, so that temp_bytes does not depend on the address.
      const std::size_t packs_v = ceil_div(layout.inner, v);
      const std::size_t width_v = column_block_width(packs_v, layout.outer, resident);
      const std::size_t lanes_v = kAxisThreads / width_v;
      const std::size_t blocks_v = ceil_div(packs_v, width_v);
      cut_into_pieces(plan, layout.length,
                      pieces_for(layout.outer * blocks_v, layout.length, lanes_v * kAxisPolicy.column_piece_min_rows,
                                 resident),
                      1, layout.outer * layout.inner * acc_size);
      const std::size_t packs = path == AxisPath::Columns ? layout.inner / v : layout.inner;
      plan.group = static_cast<unsigned>(column_block_width(packs, layout.outer, resident));
      plan.lanes = kAxisThreads / plan.group;
      plan.col_blocks = ceil_div(packs, plan.group);
      plan.items = layout.outer * plan.col_blocks * plan.chunks;
      plan.grid = waves_for(plan.items, 1, max_blocks, resident);
      break;
    }
    case AxisPath::Strided:
      plan.items = outputs;
      plan.grid = grid_for(outputs, kAxisWarps, max_blocks);
      break;
    case AxisPath::Map:
      plan.items = outputs;
      plan.grid = grid_for(outputs, std::size_t(kAxisThreads) * kMapOutputsPerThread, max_blocks);
      break;
    case AxisPath::ReproRows: {
      const std::size_t tiles = ceil_div(layout.length, kReproTile);
      if (tiles <= kAxisPolicy.repro_warp_row_max_tiles) {
        plan.group = 1;
        plan.chunk = tiles;
        plan.items = outputs;
        plan.grid = grid_for(outputs, kAxisWarps, max_blocks);
        break;
      }
      plan.group = kAxisWarps;
      const std::size_t chunks = pieces_for(outputs, tiles, kAxisWarps, resident);
      cut_into_pieces(plan, tiles, std::max(chunks, ceil_div(tiles, kMaxPieceTiles)), 1, outputs * repro_words * 8);
      plan.items = outputs * plan.chunks;
      plan.grid = grid_for(plan.items, 1, max_blocks);
      break;
    }
    case AxisPath::ReproColumns: {
      const std::size_t tiles = ceil_div(layout.length, kReproTile);
      // Outputs per block: 32, or for fewer than 32 columns the next power of two above them.
      plan.group = layout.inner > 1 && layout.inner < 32 ? 2 * pow2_floor(layout.inner - 1) : 32u;
      plan.col_blocks = ceil_div(outputs, plan.group);
      const std::size_t chunks = pieces_for(plan.col_blocks, tiles, 1, resident);
      const std::size_t max_tiles = exact_lanes ? kMaxExactPieceTiles : kMaxPieceTiles;
      cut_into_pieces(plan, tiles, std::max(chunks, ceil_div(tiles, max_tiles)), 1, outputs * repro_words * 8);
      plan.items = plan.col_blocks * plan.chunks;
      plan.grid = grid_for(plan.items, 1, max_blocks);
      break;
    }
  }
  plan.temp_bytes = std::max<std::size_t>(plan.temp_bytes, 16);
  return plan;
}

unsigned ordered_group(std::size_t outputs, std::size_t length, bool inner_contiguous) {
  if (inner_contiguous && outputs >= 8192) return 1;
  if (length >= 8192 && outputs <= 4096) return kOrderedThreads;
  return 32;
}

AxisPlan plan_ordered_axis(std::size_t outputs, std::size_t length, bool inner_contiguous, int sms, int blocks_per_sm,
                           unsigned max_blocks) {
  AxisPlan plan{};
  plan.path = AxisPath::Ordered;
  plan.group = ordered_group(outputs, length, inner_contiguous);
  plan.items = outputs;
  const std::size_t per_block = kOrderedThreads / plan.group;
  plan.grid = static_cast<unsigned>(
      std::clamp<std::size_t>(ceil_div(outputs, per_block), 1, resident_blocks(sms, blocks_per_sm, max_blocks)));
  return plan;
}

SegmentPlan plan_segments(std::size_t num_segments, std::size_t acc_size, std::size_t scan_temp_bytes, int sms,
                          int blocks_per_sm, unsigned max_blocks) {
  SegmentPlan plan{};
  plan.grid = static_cast<unsigned>(resident_blocks(sms, blocks_per_sm, max_blocks));
  auto round16 = [](std::size_t bytes) { return ceil_div(bytes, 16) * 16; };
  plan.pieces_offset = 0;
  plan.scan_offset = round16(num_segments * 8);
  plan.scan_temp_offset = plan.scan_offset + round16(num_segments * 8);
  plan.slots_offset = plan.scan_temp_offset + round16(scan_temp_bytes);
  const std::size_t workers = std::size_t(plan.grid) * kAxisWarps;
  plan.temp_bytes = std::max<std::size_t>(16, plan.slots_offset + round16(2 * workers * acc_size));
  return plan;
}

}  // namespace fastreduce::engine
