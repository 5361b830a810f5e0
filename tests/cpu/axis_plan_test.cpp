// Planning of axis and segmented reductions (host arithmetic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/detail/segment_runs.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;

namespace {
eng::AxisLayout resolved(const fr::Axis& axis) {
  eng::AxisLayout layout{};
  EXPECT_EQ(eng::resolve_axis(axis, layout), nullptr);
  return layout;
}
eng::AxisPath path_of(const fr::Axis& axis, std::size_t elem = 4, bool repro = false) {
  return eng::choose_axis_path(resolved(axis), elem, repro, 132);
}
}  // namespace

TEST(AxisPlan, DefaultStridesAreTheContiguousLayout) {
  const auto l = resolved({.outer = 3, .length = 5, .inner = 7});
  EXPECT_EQ(l.inner_stride, 1);
  EXPECT_EQ(l.length_stride, 7);
  EXPECT_EQ(l.outer_stride, 35);
  EXPECT_EQ(l.outputs(), 21u);
  const auto v = resolved({.outer = 3, .length = 5, .outer_stride = 8});
  EXPECT_EQ(v.outer_stride, 8);
  EXPECT_EQ(v.length_stride, 1);
}

TEST(AxisPlan, OverflowingShapesAreRefused) {
  eng::AxisLayout l{};
  EXPECT_NE(eng::resolve_axis({.outer = std::size_t(1) << 40, .length = std::size_t(1) << 30}, l), nullptr);
  EXPECT_NE(eng::resolve_axis({.outer = std::size_t(1) << 62, .inner = 8}, l), nullptr);
  EXPECT_NE(eng::resolve_axis({.outer = 2, .length = 2, .outer_stride = std::ptrdiff_t(1) << 61}, l), nullptr);
  EXPECT_NE(eng::resolve_axis({.outer = 2, .length = 2, .outer_stride = -(std::ptrdiff_t(1) << 61)}, l), nullptr);
  EXPECT_EQ(eng::resolve_axis({.outer = 0, .length = std::size_t(1) << 62}, l), nullptr);  // nothing is read
}

TEST(AxisPlan, PathsByShape) {
  EXPECT_EQ(path_of({.outer = 0, .length = 9}), eng::AxisPath::Nothing);
  EXPECT_EQ(path_of({.outer = 5, .length = 0}), eng::AxisPath::Identity);
  EXPECT_EQ(path_of({.outer = 1, .length = 1000}), eng::AxisPath::Flat);
  EXPECT_EQ(path_of({.outer = 1, .length = 1000}, 4, true), eng::AxisPath::Flat);  // the 1-D bits by construction
  // Rows: short ones through shared memory (up to 256 bytes), then a warp, then blocks.
  EXPECT_EQ(path_of({.outer = 100000, .length = 64}), eng::AxisPath::RowsTile);
  EXPECT_EQ(path_of({.outer = 100000, .length = 65}), eng::AxisPath::RowsWarp);
  EXPECT_EQ(path_of({.outer = 100000, .length = 128}, 2), eng::AxisPath::RowsTile);
  EXPECT_EQ(path_of({.outer = 100000, .length = 4096}), eng::AxisPath::RowsWarp);
  EXPECT_EQ(path_of({.outer = 100000, .length = 4097}), eng::AxisPath::RowsBlock);
  EXPECT_EQ(path_of({.outer = 100, .length = 1000}), eng::AxisPath::RowsBlock);  // too few rows for a warp each
  // A row pitch is not the contiguous layout the tiles need.
  EXPECT_EQ(path_of({.outer = 100000, .length = 16, .outer_stride = 20}), eng::AxisPath::RowsWarp);
  // Columns, views.
  EXPECT_EQ(path_of({.length = 1000, .inner = 4}), eng::AxisPath::Columns);
  EXPECT_EQ(path_of({.outer = 3, .length = 1, .inner = 9}), eng::AxisPath::Columns);
  EXPECT_EQ(path_of({.outer = 3, .length = 10, .inner = 9, .inner_stride = 2}), eng::AxisPath::Strided);
  EXPECT_EQ(path_of({.outer = 50, .length = 10, .outer_stride = 1, .length_stride = 50}), eng::AxisPath::Columns);
  // Reproducible sums: rows with contiguous elements, everything else by columns.
  EXPECT_EQ(path_of({.outer = 100000, .length = 64}, 4, true), eng::AxisPath::ReproRows);
  EXPECT_EQ(path_of({.length = 1000, .inner = 4}, 4, true), eng::AxisPath::ReproColumns);
}

TEST(AxisPlan, LengthOneOverAdjacentOutputsIsRowsOfOne) {
  // Columns of one row, rows of one element, slices of columns: output q is element q.
  for (const fr::Axis& a : {fr::Axis{.outer = 1, .length = 1, .inner = 1000}, fr::Axis{.outer = 1000, .length = 1},
                            fr::Axis{.outer = 3, .length = 1, .inner = 9},
                            fr::Axis{.outer = 1, .length = 1, .inner = 50, .outer_stride = 7},  // one slice
                            fr::Axis{.outer = 50, .length = 1, .inner = 1, .inner_stride = 5}}) {
    const auto l = eng::length_one_as_rows(resolved(a));
    EXPECT_EQ(l.outer, a.outer * a.inner);
    EXPECT_EQ(l.length, 1u);
    EXPECT_EQ(l.inner, 1u);
    EXPECT_EQ(l.outer_stride, 1);
    EXPECT_EQ(eng::choose_axis_path(l, 4, false, 132), eng::AxisPath::RowsTile);
    EXPECT_EQ(eng::choose_axis_path(l, 4, false, 132, true, eng::kAxisPolicy.tile_row_max_bytes, true),
              eng::AxisPath::Map);
  }
  // Outputs that are not adjacent elements, or longer axes: the layout as it was.
  for (const fr::Axis& a : {fr::Axis{.outer = 3, .length = 1, .inner = 9, .outer_stride = 10},
                            fr::Axis{.outer = 100, .length = 1, .outer_stride = 2},
                            fr::Axis{.length = 1, .inner = 9, .inner_stride = -1},
                            fr::Axis{.outer = 9, .length = 1, .outer_stride = -1},
                            fr::Axis{.outer = 3, .length = 1, .inner = 9, .outer_stride = 9 * 2, .inner_stride = 1},
                            fr::Axis{.outer = 3, .length = 2, .inner = 9}, fr::Axis{.outer = 1, .length = 1}}) {
    const auto r = resolved(a);
    const auto l = eng::length_one_as_rows(r);
    EXPECT_EQ(l.outer, r.outer);
    EXPECT_EQ(l.length, r.length);
    EXPECT_EQ(l.inner, r.inner);
    EXPECT_EQ(l.outer_stride, r.outer_stride);
    EXPECT_EQ(l.length_stride, r.length_stride);
    EXPECT_EQ(l.inner_stride, r.inner_stride);
  }
  // Map only where asked for, and only for length 1.
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 1000, .length = 2}), 4, false, 132, true,
                                  eng::kAxisPolicy.tile_row_max_bytes, true),
            eng::AxisPath::RowsTile);
}

TEST(AxisPlan, ReductionsOtherThanBuiltInOpsTileRowsUpTo1KB) {
  const std::size_t family = eng::kAxisPolicy.tile_row_max_bytes_family;
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 100000, .length = 256}), 4, false, 132), eng::AxisPath::RowsWarp);
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 100000, .length = 256}), 4, false, 132, true, family),
            eng::AxisPath::RowsTile);
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 100000, .length = 257}), 4, false, 132, true, family),
            eng::AxisPath::RowsWarp);
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 100000, .length = 128}), 8, false, 132, true, family),
            eng::AxisPath::RowsTile);
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 100000, .length = 256}), 4, false, 132, false, family),
            eng::AxisPath::RowsWarp);  // a reduction the tiles cannot stage
}

// RowsLanes (inputs 16-byte aligned): back-to-back rows of 1 to 64 whole vectors (a power of two),
// of 128 (a warp's run each), or 2 or 4 rows a vector, of the kinds the reduction takes.
TEST(AxisPlan, RowsLanesTakeRowsOfWholeVectorsOrOfPartOfOne) {
  auto fits = [](const fr::Axis& a, std::size_t elem) { return eng::rows_lanes_fit(resolved(a), elem); };
  for (std::size_t length : {1, 2, 4, 8, 16, 32, 64, 128, 256}) EXPECT_TRUE(fits({.outer = 7, .length = length}, 4)) << length;
  for (std::size_t length : {3, 5, 6, 12, 24, 96, 129, 384, 1000, 1024}) {
    EXPECT_FALSE(fits({.outer = 7, .length = length}, 4)) << length;
  }
  EXPECT_TRUE(fits({.outer = 7, .length = 512}, 2));    // 1 KB: 64 vectors, two a lane
  EXPECT_TRUE(fits({.outer = 7, .length = 1024}, 2));   // 128 vectors: a run a row
  EXPECT_TRUE(fits({.outer = 7, .length = 512}, 4));
  EXPECT_TRUE(fits({.outer = 7, .length = 256}, 8));
  EXPECT_FALSE(fits({.outer = 7, .length = 2048}, 2));  // 256 vectors: a warp per row
  // The built-in ops' kinds: no rows of 128 vectors (a warp a row).
  const eng::LanesRows builtin{.whole = true, .halves = true, .quarters = true};
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 512}), 4, builtin));
  EXPECT_TRUE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 256}), 4, builtin));
  const eng::LanesRows runs{.runs = true};
  EXPECT_TRUE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 512}), 4, runs));
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 256}), 4, runs));  // 64 vectors: whole
  EXPECT_TRUE(fits({.outer = 7, .length = 2}, 2));      // four rows a vector
  EXPECT_FALSE(fits({.outer = 7, .length = 1}, 2));     // eight: not taken
  EXPECT_FALSE(fits({.outer = 7, .length = 2}, 1));
  EXPECT_TRUE(fits({.outer = 7, .length = 4}, 1));
  EXPECT_TRUE(fits({.outer = 7, .length = 1}, 8));
  EXPECT_TRUE(fits({.outer = 7, .length = 64}, 8));     // 512 bytes
  EXPECT_FALSE(fits({.outer = 7, .length = 16}, 3));    // elements that do not fill a vector
  EXPECT_FALSE(fits({.outer = 7, .length = 0}, 4));
  // Only rows back to back: no pitch, no columns.
  EXPECT_FALSE(fits({.outer = 7, .length = 16, .outer_stride = 20}, 4));
  EXPECT_FALSE(fits({.outer = 7, .length = 16, .outer_stride = -16}, 4));
  EXPECT_FALSE(fits({.outer = 2, .length = 16, .inner = 3}, 4));
  EXPECT_FALSE(fits({.outer = 7, .length = 16, .length_stride = 2}, 4));
  EXPECT_TRUE(fits({.outer = 1, .length = 16}, 4));

  // Some kinds of row only: whole vectors and halves of one (not quarters), or halves alone.
  const eng::LanesRows some{.whole = true, .halves = true};
  auto fits_some = [&](const fr::Axis& a, std::size_t elem) { return eng::rows_lanes_fit(resolved(a), elem, some); };
  for (std::size_t length : {4, 8, 16, 32, 64, 128, 256}) EXPECT_TRUE(fits_some({.outer = 7, .length = length}, 4)) << length;
  EXPECT_TRUE(fits_some({.outer = 7, .length = 2}, 4));   // halves
  EXPECT_FALSE(fits_some({.outer = 7, .length = 2}, 2));  // quarters
  EXPECT_TRUE(fits_some({.outer = 7, .length = 8}, 2));
  const eng::LanesRows halves{.halves = true};
  EXPECT_TRUE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 2}), 4, halves));
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 4}), 4, halves));   // a whole vector
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 4}), 4, {}));  // none
  const eng::LanesRows whole{.whole = true};  // (the arg-extremes' kinds)
  EXPECT_TRUE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 4}), 4, whole));
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 2}), 4, whole));  // halves
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 2}), 2, whole));  // quarters
  const eng::LanesRows quarters{.quarters = true};
  EXPECT_TRUE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 2}), 2, quarters));
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 2}), 4, quarters));
  EXPECT_FALSE(eng::rows_lanes_fit(resolved({.outer = 7, .length = 8}), 2, quarters));
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 100000, .length = 32}), 4, false, 132, true,
                                  eng::kAxisPolicy.tile_row_max_bytes_family, false, halves),
            eng::AxisPath::RowsTile);
  EXPECT_EQ(eng::choose_axis_path(resolved({.outer = 100000, .length = 256}), 4, false, 132, true,
                                  eng::kAxisPolicy.tile_row_max_bytes_family, false, some),
            eng::AxisPath::RowsLanes);

  // The path, where the reduction takes it: before the tiles, after the 1-D and exact forms.
  auto lanes_path = [](const fr::Axis& a, std::size_t elem, bool repro = false) {
    return eng::choose_axis_path(resolved(a), elem, repro, 132, true, eng::kAxisPolicy.tile_row_max_bytes, false,
                                 eng::LanesRows::all());
  };
  EXPECT_EQ(lanes_path({.outer = 100000, .length = 16}, 4), eng::AxisPath::RowsLanes);
  EXPECT_EQ(path_of({.outer = 100000, .length = 16}), eng::AxisPath::RowsTile);  // (not asked for)
  EXPECT_EQ(lanes_path({.outer = 100000, .length = 256}, 4), eng::AxisPath::RowsLanes);
  EXPECT_EQ(lanes_path({.outer = 100, .length = 256}, 4), eng::AxisPath::RowsLanes);  // (a block a row without)
  EXPECT_EQ(lanes_path({.outer = 100000, .length = 1}, 2), eng::AxisPath::RowsTile);  // eight rows a vector
  EXPECT_EQ(lanes_path({.outer = 100000, .length = 1000}, 4), eng::AxisPath::RowsWarp);
  EXPECT_EQ(lanes_path({.outer = 100000, .length = 16, .outer_stride = 20}, 4), eng::AxisPath::RowsWarp);
  EXPECT_EQ(lanes_path({.outer = 100000, .length = 16}, 4, true), eng::AxisPath::ReproRows);
  EXPECT_EQ(lanes_path({.outer = 1, .length = 16}, 4), eng::AxisPath::Flat);

  // The plan: lanes a row or rows a vector, whole vectors, a warp per run of 32 * kLanesUnroll.
  const std::size_t run = 32 * eng::kLanesUnroll;
  const auto wide = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = 100003, .length = 64}), 2, 4, 132, 8, 0, 0);
  EXPECT_EQ(wide.group, 8u);
  EXPECT_EQ(wide.rows_per_tile, 1u);
  EXPECT_EQ(wide.chunk, 100003u * 8);
  EXPECT_EQ(wide.items, (100003u * 8 + run - 1) / run);
  EXPECT_EQ(wide.grid, (wide.items + eng::kAxisWarps - 1) / eng::kAxisWarps);
  EXPECT_FALSE(wide.combine);
  const auto narrow = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = 2053, .length = 1}), 4, 4, 132, 8, 0, 0);
  EXPECT_EQ(narrow.group, 1u);
  EXPECT_EQ(narrow.rows_per_tile, 4u);
  EXPECT_EQ(narrow.chunk, 513u);  // the last row is past the whole vectors
  EXPECT_EQ(narrow.items, 5u);
  EXPECT_EQ(narrow.grid, 1u);
  const auto two = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = 1000, .length = 256}), 4, 4, 132, 8, 0, 0);
  EXPECT_EQ(two.group, 64u);  // two vectors a lane
  EXPECT_EQ(two.chunk, 64000u);
  const auto per_run = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = 1000, .length = 512}), 4, 4, 132, 8, 0, 0);
  EXPECT_EQ(per_run.group, 128u);  // a warp's run a row: the kernel takes vectors / 128 rows
  EXPECT_EQ(per_run.rows_per_tile, 1u);
  EXPECT_EQ(per_run.chunk, 128000u);
  EXPECT_EQ(per_run.items, 1000u);
  EXPECT_EQ(per_run.grid, (1000u + eng::kAxisWarps - 1) / eng::kAxisWarps);
  const auto tiny = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = 3, .length = 1}), 4, 4, 132, 8, 0, 0);
  EXPECT_EQ(tiny.chunk, 0u);  // three rows in part of one vector: all of them the first block's
  EXPECT_EQ(tiny.grid, 1u);
  EXPECT_EQ(eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = std::size_t(1) << 28, .length = 16}), 4, 4,
                           132, 8, 100, 0).grid, 100u);  // max_blocks
  EXPECT_STREQ(eng::axis_path_name(eng::AxisPath::RowsLanes), "rows-lanes");
}

TEST(AxisPlan, ColumnsLoopOverAFewWaves) {
  // 2^28 floats down columns of 4, a kernel of 4 blocks an SM on 132 SMs: 65536 items of 256 packs
  // each, 16 waves of 528 blocks looping over them.
  const auto cols = eng::plan_axis(eng::AxisPath::Columns, resolved({.length = 4, .inner = std::size_t(1) << 26}), 4,
                                   12, 132, 4, 0, 0);
  EXPECT_EQ(cols.group, eng::kAxisThreads);
  EXPECT_EQ(cols.items, (std::size_t(1) << 24) / eng::kAxisThreads);
  EXPECT_EQ(cols.grid, 16u * 132 * 4);
  EXPECT_EQ(eng::plan_axis(eng::AxisPath::ColumnsScalar, resolved({.length = 3, .inner = (std::size_t(1) << 28) / 3}),
                           4, 12, 132, 4, 0, 0).grid, 16u * 132 * 4);
  // Fewer items than that: a block each; max_blocks still caps the grid.
  const auto few = eng::plan_axis(eng::AxisPath::Columns, resolved({.length = 4, .inner = 4096}), 4, 12, 132, 4, 0, 0);
  EXPECT_EQ(few.grid, few.items);
  EXPECT_EQ(eng::plan_axis(eng::AxisPath::Columns, resolved({.length = 4, .inner = std::size_t(1) << 26}), 4, 12, 132,
                           4, 100, 0).grid, 100u);
  EXPECT_EQ(few.items, 128u);
  // Items of a whole block of packs (kAxisThreads packs of 4 floats): 16 waves exactly, and an
  // item more. Pieces of columns are items too.
  const std::size_t block_floats = 4 * std::size_t(eng::kAxisThreads);
  const auto at_cap = eng::plan_axis(eng::AxisPath::Columns, resolved({.length = 4, .inner = 16 * 528 * block_floats}),
                                     4, 12, 132, 4, 0, 0);
  EXPECT_EQ(at_cap.items, 16u * 528);
  EXPECT_EQ(at_cap.grid, 16u * 528);
  const auto over = eng::plan_axis(eng::AxisPath::Columns,
                                   resolved({.length = 4, .inner = (16 * 528 + 1) * block_floats}), 4, 12, 132, 4, 0, 0);
  EXPECT_EQ(over.items, 16u * 528 + 1);
  EXPECT_EQ(over.grid, 16u * 528);
  const auto pieced = eng::plan_axis(eng::AxisPath::Columns, resolved({.length = std::size_t(1) << 24, .inner = 1024}),
                                     4, 12, 132, 4, 0, 0);
  EXPECT_GT(pieced.chunks, 1u);
  EXPECT_EQ(pieced.items, pieced.col_blocks * pieced.chunks);
  EXPECT_EQ(pieced.grid, std::min<std::size_t>(pieced.items, 16u * 528));
  // The rows-lanes kernel keeps a grid of every item (a cap cost sums over rows of 4 and the dot
  // product 2-3%) unless the reduction asks for the loop: 2^26 rows of 4 floats are 2^19 runs of
  // a warp, 2^16 blocks of kAxisWarps runs, or 16 waves of 8 blocks an SM on 132 SMs.
  const auto rows = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = std::size_t(1) << 26, .length = 4}), 4,
                                   4, 132, 8, 0, 0);
  EXPECT_EQ(rows.items, (std::size_t(1) << 26) / (32 * eng::kLanesUnroll));
  EXPECT_EQ(rows.grid, rows.items / eng::kAxisWarps);
  const auto looped = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = std::size_t(1) << 26, .length = 4}),
                                     4, 48, 132, 8, 0, 0, false, true);
  EXPECT_EQ(looped.items, rows.items);
  EXPECT_EQ(looped.grid, 16u * 132 * 8);
  EXPECT_EQ(eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = std::size_t(1) << 26, .length = 4}), 4, 48,
                           132, 8, 1000, 0, false, true).grid, 1000u);
  // Fewer runs than 16 waves: a block per kAxisWarps runs either way.
  const auto short_rows = eng::plan_axis(eng::AxisPath::RowsLanes, resolved({.outer = 4096, .length = 64}), 4, 48, 132,
                                         8, 0, 0, false, true);
  EXPECT_EQ(short_rows.grid, (4096u * 64 / 4 / (32 * eng::kLanesUnroll) + eng::kAxisWarps - 1) / eng::kAxisWarps);
  const auto warps = eng::plan_axis(eng::AxisPath::RowsWarp, resolved({.outer = std::size_t(1) << 22, .length = 1024}),
                                    4, 4, 132, 8, 0, 0);
  EXPECT_EQ(warps.grid, (std::size_t(1) << 22) / eng::kAxisWarps);
}

TEST(AxisPlan, VectorsNeedAlignedRowsOfColumns) {
  EXPECT_TRUE(eng::columns_vectorizable(resolved({.length = 10, .inner = 8}), 4, true));
  EXPECT_FALSE(eng::columns_vectorizable(resolved({.length = 10, .inner = 8}), 4, false));
  EXPECT_FALSE(eng::columns_vectorizable(resolved({.length = 10, .inner = 6}), 4, true));
  EXPECT_TRUE(eng::columns_vectorizable(resolved({.length = 10, .inner = 8}), 2, true));
  EXPECT_FALSE(eng::columns_vectorizable(resolved({.length = 10, .inner = 8, .length_stride = 10}), 4, true));
  EXPECT_FALSE(eng::columns_vectorizable(resolved({.outer = 2, .length = 3, .inner = 8, .outer_stride = 26}), 4, true));
}

TEST(AxisPlan, FewLongRowsAndColumnsArePieced) {
  // 4 rows of 2^24 floats: pieces so that the grid fills 132 SMs.
  const auto rows = eng::plan_axis(eng::AxisPath::RowsBlock, resolved({.outer = 4, .length = std::size_t(1) << 24}), 4,
                                   4, 132, 8, 0, 0);
  EXPECT_GT(rows.chunks, 1u);
  EXPECT_TRUE(rows.combine);
  EXPECT_GE(std::size_t(rows.chunks) * rows.chunk, std::size_t(1) << 24);
  EXPECT_LT(std::size_t(rows.chunks - 1) * rows.chunk, std::size_t(1) << 24);
  EXPECT_EQ(rows.temp_bytes, 4u * rows.chunks * 4u);
  EXPECT_GE(rows.items, 2u * 132 * 8);
  // Pieces whose last wave wastes least: 64 rows of 2^22 bfloat16 on 132 SMs x 4 blocks take 16
  // pieces a row (1024 blocks), not 17 (1088: 2.06 waves of 528) ...
  const auto cut = eng::plan_axis(eng::AxisPath::RowsBlock, resolved({.outer = 64, .length = std::size_t(1) << 22}), 2,
                                  4, 132, 4, 0, 0);
  EXPECT_EQ(cut.chunks, 16u);
  EXPECT_EQ(cut.items, 1024u);
  EXPECT_EQ(std::size_t(cut.chunks) * cut.chunk, std::size_t(1) << 22);
  // ... 256 rows of 2^20 floats on 132 x 8 take 8 (2048 blocks), not 9, and 1024 rows of 2^18
  // take 2, not 3; 16 rows of 2^20 floats take 128 (pieces of at least 32 KB).
  const auto pieces = [](std::size_t rows, std::size_t length) {
    return eng::plan_axis(eng::AxisPath::RowsBlock, resolved({.outer = rows, .length = length}), 4, 4, 132, 8, 0, 0).chunks;
  };
  EXPECT_EQ(pieces(256, std::size_t(1) << 20), 8u);
  EXPECT_EQ(pieces(1024, std::size_t(1) << 18), 2u);
  EXPECT_EQ(pieces(16, std::size_t(1) << 20), 128u);
  EXPECT_EQ(pieces(3000, 5000), 1u);
  // Between one and two waves' worth of rows: 2 pieces (2.08 waves of halves), not whole rows.
  EXPECT_EQ(pieces(1100, std::size_t(1) << 18), 2u);
  // Many rows: one piece each.
  const auto many = eng::plan_axis(eng::AxisPath::RowsBlock, resolved({.outer = 100000, .length = 5000}), 4, 4, 132, 8, 0, 0);
  EXPECT_EQ(many.chunks, 1u);
  EXPECT_FALSE(many.combine);
  // Columns: the same pieces whether vectors are possible or not (temp_bytes must not depend on the address).
  const auto layout = resolved({.length = std::size_t(1) << 22, .inner = 8});
  const auto vec = eng::plan_axis(eng::AxisPath::Columns, layout, 4, 4, 132, 8, 0, 0);
  const auto scalar = eng::plan_axis(eng::AxisPath::ColumnsScalar, layout, 4, 4, 132, 8, 0, 0);
  EXPECT_GT(vec.chunks, 1u);
  EXPECT_EQ(vec.chunks, scalar.chunks);
  EXPECT_EQ(vec.temp_bytes, scalar.temp_bytes);
  EXPECT_EQ(vec.group * 4u, 8u);
  EXPECT_EQ(scalar.group, 8u);
  // max_blocks caps the grid.
  EXPECT_LE(eng::plan_axis(eng::AxisPath::RowsWarp, resolved({.outer = 100000, .length = 100}), 4, 4, 132, 8, 5, 0).grid, 5u);
}

TEST(AxisPlan, ReproduciblePiecesKeepLimbsInRange) {
  // 2^39 elements in one output: at most 2^24 tiles per piece.
  const auto p = eng::plan_axis(eng::AxisPath::ReproRows, resolved({.outer = 2, .length = std::size_t(1) << 39}), 4, 4,
                                132, 4, 0, 33);
  EXPECT_LE(p.chunk, std::size_t(1) << 24);
  EXPECT_EQ(p.temp_bytes, 2u * p.chunks * 33u * 8u);
  const auto warp = eng::plan_axis(eng::AxisPath::ReproRows, resolved({.outer = 1000, .length = 4096}), 4, 4, 132, 4, 0, 33);
  EXPECT_EQ(warp.group, 1u);
  EXPECT_EQ(warp.chunks, 1u);
}

TEST(AxisPlan, ExactColumnPiecesAreShorter) {
  // Mode::Exact's lanes may spill a piece per element into a column's limbs: pieces of at most
  // 2^18 tiles (reproducible lanes: 2^24). 64 columns of 2^34 elements: 2^22 tiles each.
  const auto layout = resolved({.length = std::size_t(1) << 34, .inner = 64});
  const auto exact = eng::plan_axis(eng::AxisPath::ReproColumns, layout, 4, 4, 1, 1, 0, 33, true);  // one SM: no pieces for occupancy
  const auto repro = eng::plan_axis(eng::AxisPath::ReproColumns, layout, 4, 4, 1, 1, 0, 33, false);
  EXPECT_LE(exact.chunk, std::size_t(1) << 18);
  EXPECT_GT(repro.chunk, std::size_t(1) << 18);
  EXPECT_LE(repro.chunk, std::size_t(1) << 24);
  EXPECT_TRUE(exact.combine);
  EXPECT_GE(std::size_t(exact.chunks) * exact.chunk, std::size_t(1) << 22);
  EXPECT_EQ(exact.temp_bytes, 64u * exact.chunks * 33u * 8u);
}

TEST(AxisPlan, SegmentsTemporaryStorage) {
  const auto p = eng::plan_segments(1000, 4, 1234, 132, 8, 0);
  EXPECT_EQ(p.grid, 132u * 8u);
  EXPECT_GE(p.scan_offset, 1000u * 8u);
  EXPECT_GE(p.scan_temp_offset, p.scan_offset + 1000u * 8u);
  EXPECT_GE(p.slots_offset, p.scan_temp_offset + 1234u);
  EXPECT_GE(p.temp_bytes, p.slots_offset + 2u * 132u * 8u * 8u * 4u);
  EXPECT_EQ(p.slots_offset % 16, 0u);
  EXPECT_EQ(eng::plan_segments(1000, 4, 1234, 132, 8, 7).grid, 7u);
}

TEST(AxisPlan, OrderedGroups) {
  EXPECT_EQ(eng::ordered_group(100000, 64, true), 1u);          // a thread per output of adjacent outputs
  EXPECT_EQ(eng::ordered_group(100, 100000, false), eng::kOrderedThreads);  // few long rows: a block each
  EXPECT_EQ(eng::ordered_group(100000, 64, false), 32u);
  const auto p = eng::plan_ordered_axis(1000, 100000, false, 132, 4, 0);
  EXPECT_EQ(p.path, eng::AxisPath::Ordered);
  EXPECT_EQ(p.group, eng::kOrderedThreads);
  EXPECT_EQ(p.grid, 528u);
  EXPECT_EQ(eng::plan_ordered_axis(1000, 100000, false, 132, 4, 9).grid, 9u);
}

// RowsTile only where the reduction can stage its input in 16-byte vectors.
TEST(AxisPlan, TileOnlyWhereTheReductionStagesVectors) {
  const auto l = resolved({.outer = 100000, .length = 16});
  EXPECT_EQ(eng::choose_axis_path(l, 4, false, 132, true), eng::AxisPath::RowsTile);
  EXPECT_EQ(eng::choose_axis_path(l, 4, false, 132, false), eng::AxisPath::RowsWarp);
}

// Segmented reductions: the warps' runs of pieces (segment_runs.hpp), and the cut segments'
// heads, tails and joins as repro_segments.cuh's kernels index them, modelled on the host.
namespace {
std::uint64_t runs_seed() {
  if (const char* s = std::getenv("FASTREDUCE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
}
}  // namespace

TEST(SegmentRuns, RunsCutThePiecesInOrderAndEachPieceHasOneWorker) {
  const std::uint64_t seed = runs_seed();
  SCOPED_TRACE("FASTREDUCE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 3000; ++trial) {
    const unsigned long long total = trial % 3 == 0 ? 1 + rng() % 40 : 1 + rng() % (trial % 3 == 1 ? 100000 : (1ull << 38));
    const std::size_t warps = 1 + rng() % (trial % 2 == 0 ? 64 : 20000);
    const std::size_t workers = eng::active_workers(total, warps);
    ASSERT_GE(workers, 1u);
    ASSERT_LE(workers, warps);
    for (std::size_t w = 0; w < workers; w += 1 + (workers > 300 ? rng() % (workers / 100) : 0)) {
      const eng::PieceRun run = eng::piece_run(total, w, workers);
      if (w == 0) ASSERT_EQ(run.first, 0u);
      ASSERT_LT(run.first, run.last) << "total " << total << ", worker " << w << " of " << workers;
      if (w + 1 == workers) ASSERT_EQ(run.last, total);
      ASSERT_EQ(eng::piece_run(total, w + 1, workers).first, run.last);
      const unsigned long long inside = run.first + rng() % (run.last - run.first);
      for (unsigned long long p : {run.first, run.last - 1, inside}) {
        ASSERT_EQ(eng::worker_of_piece(total, workers, p), w) << "total " << total << ", piece " << p;
      }
    }
    ASSERT_EQ(eng::piece_run(total, workers, workers).first, total);  // past the last worker: empty
  }
}

TEST(SegmentRuns, HeadsTailsAndJoinsCoverEverySegmentOnce) {
  const std::uint64_t seed = runs_seed();
  SCOPED_TRACE("FASTREDUCE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 400; ++trial) {
    // Pieces per segment: mostly one, some a few, some many (a segment over many runs).
    const std::size_t count = 1 + rng() % (trial % 4 == 0 ? 5 : 3000);
    std::vector<unsigned long long> scan(count);
    unsigned long long total = 0;
    for (std::size_t s = 0; s < count; ++s) {
      const unsigned r = rng() % 100;
      total += r < 70 ? 1 : r < 95 ? 1 + rng() % 8 : 1 + rng() % 5000;
      scan[s] = total;
    }
    const std::size_t warps = 1 + rng() % (trial % 2 == 0 ? 24 : 4000);
    const std::size_t workers = eng::active_workers(total, warps);
    struct Row {
      std::size_t segment = ~std::size_t(0);
      unsigned long long pieces = 0;
    };
    std::vector<Row> heads(workers), tails(workers);
    std::vector<unsigned long long> written(count, 0);  // pieces in each segment's one output
    std::vector<int> outputs(count, 0);
    // The main kernel: each worker walks the segments of its run (for_each_segment_part).
    for (std::size_t w = 0; w < workers; ++w) {
      const eng::PieceRun run = eng::piece_run(total, w, workers);
      std::size_t s = static_cast<std::size_t>(std::upper_bound(scan.begin(), scan.end(), run.first) - scan.begin());
      unsigned long long piece = run.first, before = s > 0 ? scan[s - 1] : 0;
      while (piece < run.last) {
        const unsigned long long through = scan[s];
        const unsigned long long stop = std::min(through, run.last);
        const bool cut_before = piece > before, cut_after = stop < through;
        if (!cut_before && !cut_after) {
          written[s] += stop - piece;
          ++outputs[s];
        } else {
          Row& row = cut_before ? heads[w] : tails[w];
          ASSERT_EQ(row.segment, ~std::size_t(0)) << "a worker's head or tail row written twice";
          row = {s, stop - piece};
        }
        piece = stop;
        before = through;
        ++s;
      }
    }
    // The join: a segment cut after the run where it starts takes that run's tail row and the
    // head rows of runs w + 1 .. worker_of_piece(its last piece).
    for (std::size_t w = 0; w < workers; ++w) {
      const eng::PieceRun run = eng::piece_run(total, w, workers);
      const std::size_t s = static_cast<std::size_t>(std::upper_bound(scan.begin(), scan.end(), run.last - 1) - scan.begin());
      const unsigned long long through = scan[s], before = s > 0 ? scan[s - 1] : 0;
      if (through <= run.last || before < run.first) continue;
      const std::size_t last = eng::worker_of_piece(total, workers, through - 1);
      ASSERT_GT(last, w);
      ASSERT_EQ(tails[w].segment, s);
      unsigned long long pieces = tails[w].pieces;
      for (std::size_t h = w + 1; h <= last; ++h) {
        ASSERT_EQ(heads[h].segment, s) << "segment " << s << ": run " << h << "'s head row";
        pieces += heads[h].pieces;
      }
      written[s] += pieces;
      ++outputs[s];
    }
    for (std::size_t s = 0; s < count; ++s) {
      ASSERT_EQ(outputs[s], 1) << "segment " << s << " of " << count << ", " << workers << " workers";
      ASSERT_EQ(written[s], scan[s] - (s > 0 ? scan[s - 1] : 0)) << "segment " << s;
    }
  }
}
