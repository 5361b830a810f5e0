// Axis and segmented reductions: every path and the boundaries between them, strided views,
// segments, bad input, and batch invariance of reproducible sums.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/fastreduce.cuh"
#include "gpu_test.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;
using fr::bench::Distribution;
using namespace fastreduce::testing;

namespace {

// Every path an axis reduction took in this process (checked by PathsCovered).
std::set<eng::AxisPath>& paths_seen() {
  static std::set<eng::AxisPath> seen;
  return seen;
}

std::string shape_text(const fr::Axis& a) {
  auto s = [](std::ptrdiff_t v) { return v == fr::Axis::kContiguous ? std::string("c") : std::to_string(v); };
  return "outer=" + std::to_string(a.outer) + " length=" + std::to_string(a.length) + " inner=" + std::to_string(a.inner) +
         " strides=(" + s(a.outer_stride) + "," + s(a.length_stride) + "," + s(a.inner_stride) + ")";
}

// Resolved strides, as the library resolves them.
eng::AxisLayout layout_of(const fr::Axis& axis) {
  eng::AxisLayout layout{};
  EXPECT_EQ(eng::resolve_axis(axis, layout), nullptr);
  return layout;
}

// Offsets (in elements, from d_in) of the lowest and highest element an axis reads.
std::pair<std::int64_t, std::int64_t> reach(const eng::AxisLayout& l) {
  std::int64_t lo = 0, hi = 0;
  const std::size_t extents[3] = {l.outer, l.length, l.inner};
  const std::int64_t strides[3] = {l.outer_stride, l.length_stride, l.inner_stride};
  for (int d = 0; d < 3; ++d) {
    if (extents[d] == 0) return {0, 0};
    const std::int64_t far = strides[d] * std::int64_t(extents[d] - 1);
    (far < 0 ? lo : hi) += far;
  }
  return {lo, hi};
}

// The elements of output q, in order (an array: std::vector<bool> has no data()).
template <class T>
std::unique_ptr<T[]> gather(const std::vector<T>& host, std::int64_t origin, const eng::AxisLayout& l, std::size_t q) {
  std::unique_ptr<T[]> v(new T[std::max<std::size_t>(l.length, 1)]);
  const std::int64_t base = origin + std::int64_t(q / l.inner) * l.outer_stride + std::int64_t(q % l.inner) * l.inner_stride;
  for (std::size_t k = 0; k < l.length; ++k) v[k] = host[base + std::int64_t(k) * l.length_stride];
  return v;
}

template <class T, class Op>
std::vector<fr::acc_t<T, Op>> run_axis(const T* d_in, const fr::Axis& axis, const fr::Options& opt = {}) {
  using A = fr::acc_t<T, Op>;
  const std::size_t outputs = axis.outer * axis.inner;
  std::size_t bytes = 0;
  EXPECT_EQ((fr::reduce_axis_async<T, Op>(nullptr, bytes, d_in, nullptr, axis, Op{}, 0, opt)), cudaSuccess)
      << shape_text(axis);
  EXPECT_GT(bytes, 0u);
  DeviceBuffer<char> temp(bytes);
  temp.poison();  // the storage may hold anything before a call
  DeviceBuffer<A> out(outputs + 1);
  out.poison();
  EXPECT_EQ((fr::reduce_axis_async<T, Op>(temp.get(), bytes, d_in, out.get(), axis, Op{}, 0, opt)), cudaSuccess)
      << shape_text(axis);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << shape_text(axis);
  eng::AxisPlan plan{};
  EXPECT_EQ((eng::describe_axis<fr::storage_t<T>, Op>(reinterpret_cast<const fr::storage_t<T>*>(d_in), axis, opt, plan)),
            cudaSuccess);
  paths_seen().insert(plan.path);
  const A sentinel = read_back(out.get() + outputs);  // the slot past the outputs is never written (raw bytes)
  A poison{};
  std::memset(&poison, 0xA5, sizeof(A));
  EXPECT_TRUE(same_bits(sentinel, poison)) << "wrote past the outputs: " << shape_text(axis);
  return fr::bench::to_host(out.get(), outputs);
}

// Runs `axis` over fresh data of distribution `dist` placed `shift` elements past an allocation
// (misaligned bases) and compares every output with the CPU reference: bitwise where the data
// make the result exact (integers, min/max, small whole numbers), else within the error bound
// of a summation of `length` elements.
template <class T, class Op>
void check_axis(const fr::Axis& axis, Distribution dist, std::size_t shift = 0, const fr::Options& opt = {}) {
  using A = fr::acc_t<T, Op>;
  const eng::AxisLayout l = layout_of(axis);
  const auto [lo, hi] = reach(l);
  const std::size_t count = std::size_t(hi - lo) + 1 + shift;
  DeviceBuffer<T> buffer(count);
  ASSERT_NE(buffer.get(), nullptr);
  ASSERT_EQ(fr::bench::fill_random(buffer.get(), count, test_seed(), dist), cudaSuccess);
  const std::int64_t origin = std::int64_t(shift) - lo;
  const T* d_in = buffer.get() + origin;
  const auto got = run_axis<T, Op>(d_in, axis, opt);
  const auto host = fr::bench::to_host(buffer.get(), count);
  const bool exact = !std::is_floating_point_v<A> || !std::is_same_v<Op, fr::Sum> ||
                     dist == Distribution::SmallIntegers || dist == Distribution::SignedSmallIntegers;
  std::size_t bad = 0;
  for (std::size_t q = 0; q < l.outputs() && bad < 5; ++q) {
    const auto elements = gather(host, origin, l, q);
    if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, fr::Sum>) {
      const long double want = fr::reference::compensated_sum(elements.get(), l.length);
      const long double bound =
          exact ? 0.0L
                : (l.length + 40) * std::numeric_limits<A>::epsilon() *
                      fr::reference::absolute_sum(elements.get(), l.length);
      if (!(std::fabs(static_cast<long double>(got[q]) - want) <= bound)) {
        ++bad;
        ADD_FAILURE() << shape_text(axis) << " shift=" << shift << " output " << q << ": got " << double(got[q])
                      << " want " << double(want);
      }
    } else {
      const A want = static_cast<A>(fr::reference::reduce(elements.get(), l.length, Op{}));
      if (!same_bits(got[q], want)) {
        ++bad;
        ADD_FAILURE() << shape_text(axis) << " shift=" << shift << " op=" << Op::name << " output " << q << ": got "
                      << double(got[q]) << " want " << double(want);
      }
    }
  }
}

fr::Axis rows(std::size_t outer, std::size_t length) { return {.outer = outer, .length = length}; }
fr::Axis columns(std::size_t length, std::size_t inner, std::size_t outer = 1) {
  return {.outer = outer, .length = length, .inner = inner};
}

// The shapes every type and op is checked on: both sides of every path boundary.
std::vector<fr::Axis> shapes() {
  std::vector<fr::Axis> list;
  const std::vector<std::size_t> lengths =
      quick() ? std::vector<std::size_t>{0, 1, 2, 31, 33, 64, 65, 128, 4097}
              : std::vector<std::size_t>{0,  1,  2,   4,   8,   16,  31,   32,   33,   63,   64,
                                         65, 127, 128, 256, 257, 512, 1000, 4096, 4097, 10007};
  for (std::size_t length : lengths) {
    for (std::size_t outer : {std::size_t(1), std::size_t(3), std::size_t(2053)}) list.push_back(rows(outer, length));
  }
  list.push_back(rows(7, quick() ? 70001 : 300007));  // long rows, pieces
  const std::vector<std::size_t> inners = quick() ? std::vector<std::size_t>{2, 3, 8, 40}
                                                  : std::vector<std::size_t>{2, 3, 4, 8, 17, 32, 40, 1024, 1031, 4100};
  for (std::size_t inner : inners) {
    for (std::size_t length : {std::size_t(1), std::size_t(2), std::size_t(33), std::size_t(1000)}) {
      list.push_back(columns(length, inner));
    }
  }
  list.push_back(columns(quick() ? 20011 : 200003, 4));  // few columns, long: pieces and a combine
  list.push_back(columns(quick() ? 3001 : 30011, 64));
  list.push_back(columns(33, 17, 3));                    // 3-D
  list.push_back(columns(5, 129, 31));
  return list;
}

template <class T, class Op>
void check_shapes(Distribution dist) {
  FASTREDUCE_REQUIRE_GPU();
  for (const fr::Axis& axis : shapes()) {
    check_axis<T, Op>(axis, dist);
    if (sizeof(T) < 16) check_axis<T, Op>(axis, dist, 1);  // a base off the 16-byte boundary
  }
}

}  // namespace

TEST(Axis, FloatSumIsExactOnWholeNumbers) { check_shapes<float, fr::Sum>(Distribution::SignedSmallIntegers); }
TEST(Axis, FloatSumOfRandomDataIsWithinTheBound) { check_shapes<float, fr::Sum>(Distribution::Signed); }
TEST(Axis, FloatMax) { check_shapes<float, fr::Max>(Distribution::Signed); }
TEST(Axis, DoubleSum) { check_shapes<double, fr::Sum>(Distribution::SignedSmallIntegers); }
TEST(Axis, DoubleMin) { check_shapes<double, fr::Min>(Distribution::Signed); }
TEST(Axis, Bfloat16Sum) { check_shapes<__nv_bfloat16, fr::Sum>(Distribution::SignedSmallIntegers); }
TEST(Axis, Bfloat16Max) { check_shapes<__nv_bfloat16, fr::Max>(Distribution::Signed); }
TEST(Axis, HalfSum) { check_shapes<__half, fr::Sum>(Distribution::SmallIntegers); }
TEST(Axis, Int32Sum) { check_shapes<std::int32_t, fr::Sum>(Distribution::Signed); }
TEST(Axis, Int64Prod) { check_shapes<std::int64_t, fr::Prod>(Distribution::NearOne); }
TEST(Axis, Uint8Sum) { check_shapes<std::uint8_t, fr::Sum>(Distribution::Signed); }
TEST(Axis, Int16Xor) { check_shapes<std::int16_t, fr::BitXor>(Distribution::Signed); }
TEST(Axis, Uint32Min) { check_shapes<std::uint32_t, fr::Min>(Distribution::Signed); }
TEST(Axis, BoolSumCountsTrueValues) { check_shapes<bool, fr::Sum>(Distribution::Signed); }
TEST(Axis, BoolAnd) { check_shapes<bool, fr::BitAnd>(Distribution::Signed); }

// Rows as one array of vectors (AxisPath::RowsLanes) on a grid far smaller than their runs of 32
// vectors, so that each warp takes many: every lane count and rows of part of a vector, whole and
// with rows past the last whole vector; each shape's path is checked, and off the 16-byte boundary
// (or eight rows to a vector) the same shapes take the other paths.
template <class T, class Op>
void check_lanes(std::size_t outer, std::size_t length, Distribution dist, std::size_t shift, const fr::Options& opt) {
  const fr::Axis axis = rows(outer, length);
  check_axis<T, Op>(axis, dist, shift, opt);
  DeviceBuffer<T> probe(32);  // (planning reads the address only)
  eng::AxisPlan plan{};
  ASSERT_EQ((eng::describe_axis<fr::storage_t<T>, Op>(reinterpret_cast<const fr::storage_t<T>*>(probe.get() + shift),
                                                       axis, opt, plan)),
            cudaSuccess);
  const std::size_t row_bytes = length * sizeof(T);
  const bool lanes = shift == 0 && row_bytes * 4 >= 16 && row_bytes <= 1024;  // (the lengths below are powers of two)
  EXPECT_EQ(plan.path == eng::AxisPath::RowsLanes, lanes)
      << shape_text(axis) << " of " << sizeof(T) << "-byte elements, shift " << shift << ": "
      << eng::axis_path_name(plan.path);
}

TEST(Axis, RowsLanesOnFewBlocks) {
  FASTREDUCE_REQUIRE_GPU();
  fr::Options few{};
  few.max_blocks = 3;
  for (std::size_t length : {1, 2, 4, 8, 16, 64, 128, 256}) {
    for (std::size_t outer : {std::size_t(5), std::size_t(100003)}) {
      check_lanes<float, fr::Sum>(outer, length, Distribution::SignedSmallIntegers, 0, few);
      check_lanes<float, fr::Max>(outer, length, Distribution::Signed, 0, few);
      check_lanes<__nv_bfloat16, fr::Sum>(outer, 2 * length, Distribution::SignedSmallIntegers, 0, few);
      check_lanes<__nv_bfloat16, fr::Min>(outer, length, Distribution::Signed, 0, few);
      check_lanes<double, fr::Sum>(outer, (length + 3) / 4, Distribution::SignedSmallIntegers, 0, few);
      check_lanes<std::int8_t, fr::Max>(outer, 4 * length, Distribution::Signed, 0, few);
      check_lanes<float, fr::Sum>(outer, length, Distribution::SignedSmallIntegers, 1, few);
    }
  }
}

// Equal rows of part of a vector give equal bits, the rows past the last whole vector too (they
// are folded as the others): 2053 copies of one row of random half values.
TEST(Axis, RowsLanesEqualRowsHaveEqualBits) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t outer = 2053;
  for (std::size_t length : {std::size_t(2), std::size_t(4)}) {
    DeviceBuffer<__half> one(length);
    ASSERT_EQ(fr::bench::fill_random(one.get(), length, test_seed(), Distribution::Signed), cudaSuccess);
    const auto row = fr::bench::to_host(one.get(), length);
    std::vector<__half> host(outer * length);
    for (std::size_t r = 0; r < outer; ++r) std::copy(row.begin(), row.end(), host.begin() + r * length);
    DeviceBuffer<__half> in(host.size());
    CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(__half), cudaMemcpyHostToDevice));
    const auto got = run_axis<__half, fr::Sum>(in.get(), rows(outer, length));
    ASSERT_EQ(got.size(), outer);
    for (std::size_t r = 1; r < outer; ++r) {
      ASSERT_TRUE(same_bits(got[r], got[0])) << "rows of " << length << ": row " << r << " " << double(got[r])
                                             << " against row 0 " << double(got[0]);
    }
  }
}

// Views: a slice of a larger matrix (row pitch), a transposed matrix, reversed rows, and a
// general strided view.

TEST(Axis, StridedViews) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t length : {std::size_t(1), std::size_t(5), std::size_t(64), std::size_t(1000), std::size_t(20000)}) {
    // Rows of a slice: every row starts `pitch` elements after the previous one.
    check_axis<float, fr::Sum>({.outer = 37, .length = length, .outer_stride = std::ptrdiff_t(length + 3)},
                               Distribution::SignedSmallIntegers);
    // Columns of a slice.
    check_axis<float, fr::Sum>({.length = length, .inner = 40, .length_stride = 44}, Distribution::SignedSmallIntegers, 1);
    check_axis<float, fr::Sum>({.length = length, .inner = 40, .length_stride = 48}, Distribution::SignedSmallIntegers);
    // Row sums of the transpose of a (length x 50) matrix: column sums through strides.
    check_axis<float, fr::Sum>({.outer = 50, .length = length, .outer_stride = 1, .length_stride = 50},
                               Distribution::SignedSmallIntegers);
    // Column sums of the transpose: contiguous rows read with an output stride.
    check_axis<std::int32_t, fr::Sum>(
        {.outer = 1, .length = length, .inner = 30, .length_stride = 1, .inner_stride = std::ptrdiff_t(length)},
        Distribution::Signed);
    // Reversed rows (negative stride) and an arbitrary 3-D view.
    check_axis<double, fr::Max>({.outer = 9, .length = length, .outer_stride = std::ptrdiff_t(length), .length_stride = -1},
                                Distribution::Signed);
    check_axis<float, fr::Sum>({.outer = 3, .length = length, .inner = 7, .outer_stride = -5,
                                .length_stride = 29, .inner_stride = 3},
                               Distribution::SignedSmallIntegers);
  }
}

TEST(Axis, NaNPropagatesIntoItsOutputOnly) {
  FASTREDUCE_REQUIRE_GPU();
  for (const fr::Axis& axis : {rows(40, 7), rows(40, 3000), rows(3, 100000), columns(7, 40), columns(3000, 40),
                               columns(100000, 3)}) {
    const std::size_t n = axis.outer * axis.length * axis.inner;
    DeviceBuffer<float> in(n);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), Distribution::Signed), cudaSuccess);
    // A NaN at the last element of output 1 (rows: its last element; columns: the bottom of column 1).
    const std::size_t at = axis.inner == 1 ? 2 * axis.length - 1 : (axis.length - 1) * axis.inner + 1;
    const float nan = std::nanf("");
    CUDA_OK(cudaMemcpy(in.get() + at, &nan, sizeof(float), cudaMemcpyHostToDevice));
    for (fr::Mode mode : {fr::Mode::Fast, fr::Mode::Reproducible}) {
      const auto sums = run_axis<float, fr::Sum>(in.get(), axis, {.mode = mode});
      const auto maxima = run_axis<float, fr::Max>(in.get(), axis, {.mode = mode});
      for (std::size_t q = 0; q < sums.size(); ++q) {
        EXPECT_EQ(std::isnan(sums[q]), q == 1) << shape_text(axis) << " output " << q;
        EXPECT_EQ(std::isnan(maxima[q]), q == 1) << shape_text(axis) << " output " << q;
      }
    }
  }
}

// Reproducible mode: each output is bitwise the 1-D reproducible sum of its own elements, whatever
// the batch, the layout, the address or max_blocks.
template <class T>
void check_batch_invariance(const fr::Axis& axis, std::size_t shift) {
  using A = fr::acc_t<T, fr::Sum>;
  const eng::AxisLayout l = layout_of(axis);
  const auto [lo, hi] = reach(l);
  const std::size_t count = std::size_t(hi - lo) + 1 + shift;
  DeviceBuffer<T> buffer(count);
  ASSERT_EQ(fr::bench::fill_random(buffer.get(), count, test_seed(), Distribution::Signed), cudaSuccess);
  const std::int64_t origin = std::int64_t(shift) - lo;
  const T* d_in = buffer.get() + origin;
  const fr::Options repro{.mode = fr::Mode::Reproducible};
  const auto got = run_axis<T, fr::Sum>(d_in, axis, repro);
  const auto capped = run_axis<T, fr::Sum>(d_in, axis, {.mode = fr::Mode::Reproducible, .max_blocks = 3});
  const auto host = fr::bench::to_host(buffer.get(), count);
  // Outputs checked one by one against the 1-D sum: the first, the last and a spread between.
  std::vector<std::size_t> picks{0, l.outputs() - 1};
  for (std::size_t q = 1; q < l.outputs() && picks.size() < 24; q += std::max<std::size_t>(1, l.outputs() / 20)) picks.push_back(q);
  DeviceBuffer<T> alone(l.length + 1);
  for (std::size_t q : picks) {
    const auto elements = gather(host, origin, l, q);
    // The row alone, at an address with another offset from 16 bytes.
    CUDA_OK(cudaMemcpy(alone.get() + 1, elements.get(), l.length * sizeof(T), cudaMemcpyHostToDevice));
    const A one_d = fr::reduce(alone.get() + 1, l.length, fr::Sum{}, repro);
    EXPECT_TRUE(same_bits(got[q], one_d)) << shape_text(axis) << " output " << q << ": " << double(got[q]) << " vs 1-D "
                                          << double(one_d);
    EXPECT_TRUE(same_bits(capped[q], one_d)) << shape_text(axis) << " max_blocks=3 output " << q;
  }
}

template <class T>
void check_invariance_shapes() {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t long_row = quick() ? 3 * 4096 + 5 : 40 * 4096 + 123;
  for (const fr::Axis& axis :
       {rows(50, 1), rows(50, 5), rows(33, 4096), rows(17, 4097), rows(5, 5 * 4096 + 17), rows(3, long_row),
        rows(300, 9000), columns(4097, 3), columns(9000, 40), columns(100, 33), columns(2 * 4096 + 1, 70),
        columns(long_row, 2), columns(33, 17, 3),
        fr::Axis{.outer = 40, .length = 5000, .outer_stride = 1, .length_stride = 40}}) {
    check_batch_invariance<T>(axis, 0);
    check_batch_invariance<T>(axis, 1);
  }
}

TEST(AxisReproducible, FloatOutputsAreTheOneDimensionalSums) { check_invariance_shapes<float>(); }
TEST(AxisReproducible, DoubleOutputsAreTheOneDimensionalSums) { check_invariance_shapes<double>(); }
TEST(AxisReproducible, Bfloat16OutputsAreTheOneDimensionalSums) { check_invariance_shapes<__nv_bfloat16>(); }
TEST(AxisReproducible, HalfOutputsAreTheOneDimensionalSums) { check_invariance_shapes<__half>(); }

// A row's bits do not depend on how many rows are reduced with it or where it sits.
TEST(AxisReproducible, RowBitsDoNotDependOnTheBatch) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t length = 4096 + 77;
  DeviceBuffer<float> in(64 * length);
  ASSERT_EQ(fr::bench::fill_random(in.get(), 64 * length, test_seed(), Distribution::Signed), cudaSuccess);
  const fr::Options repro{.mode = fr::Mode::Reproducible};
  const auto all = run_axis<float, fr::Sum>(in.get(), rows(64, length), repro);
  for (std::size_t first : {std::size_t(0), std::size_t(13), std::size_t(63)}) {
    for (std::size_t batch : {std::size_t(1), std::size_t(2), std::size_t(64) - first}) {
      if (first + batch > 64) continue;
      const auto part = run_axis<float, fr::Sum>(in.get() + first * length, rows(batch, length), repro);
      for (std::size_t r = 0; r < batch; ++r) EXPECT_TRUE(same_bits(part[r], all[first + r])) << first << "+" << r;
    }
  }
}

// Segments: random (overlapping, empty, gapped) segments with lengths from a power law, against
// the CPU, for every offset type.
template <class T, class Op, class Offset>
void check_segments(std::size_t n, std::size_t segments, double max_log2, Distribution dist, fr::Mode mode = fr::Mode::Fast) {
  using A = fr::acc_t<T, Op>;
  const std::uint64_t seed = test_seed();
  DeviceBuffer<T> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, seed, dist), cudaSuccess);
  std::mt19937_64 rng(seed);
  std::vector<Offset> begin(segments), end(segments);
  for (std::size_t s = 0; s < segments; ++s) {
    const std::size_t length = static_cast<std::size_t>(std::exp2(std::uniform_real_distribution<double>(0, max_log2)(rng))) - 1;
    const std::size_t b = std::uniform_int_distribution<std::size_t>(0, n - std::min(n, length))(rng);
    begin[s] = Offset(b);
    end[s] = Offset(b + std::min(length, n - b));
    if (s % 17 == 5) end[s] = begin[s];                                 // empty
    if (s % 29 == 7 && begin[s] > 0) end[s] = Offset(begin[s] - 1);     // end before begin: empty
  }
  DeviceBuffer<Offset> d_begin(segments), d_end(segments);
  CUDA_OK(cudaMemcpy(d_begin.get(), begin.data(), segments * sizeof(Offset), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_end.get(), end.data(), segments * sizeof(Offset), cudaMemcpyHostToDevice));
  const fr::Options opt{.mode = mode};
  std::size_t bytes = 0;
  ASSERT_EQ((fr::reduce_segments_async<T, Op, Offset>(nullptr, bytes, in.get(), nullptr, segments, d_begin.get(),
                                                      d_end.get(), Op{}, 0, opt)),
            cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  temp.poison();
  DeviceBuffer<A> out(segments);
  out.poison();
  ASSERT_EQ((fr::reduce_segments_async<T, Op, Offset>(temp.get(), bytes, in.get(), out.get(), segments, d_begin.get(),
                                                      d_end.get(), Op{}, 0, opt)),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = fr::bench::to_host(out.get(), segments);
  const auto host = fr::bench::to_host(in.get(), n);
  std::size_t bad = 0;
  for (std::size_t s = 0; s < segments && bad < 5; ++s) {
    const std::size_t b = std::size_t(begin[s]);
    const std::size_t len = end[s] > begin[s] ? std::size_t(end[s] - begin[s]) : 0;
    A want{};
    if (mode == fr::Mode::Reproducible) {
      if (s % 97 != 0 && len < 100000) continue;  // a sample, against the 1-D sum
      if constexpr (std::is_floating_point_v<A> && std::is_same_v<Op, fr::Sum>) {
        want = len == 0 ? A(0) : fr::reduce(in.get() + b, len, fr::Sum{}, opt);
      }
    } else {
      want = static_cast<A>(fr::reference::reduce(host.data() + b, len, Op{}));
    }
    if (!same_bits(got[s], want)) {
      ++bad;
      ADD_FAILURE() << "segment " << s << " [" << b << ", +" << len << "): got " << double(got[s]) << " want "
                    << double(want);
    }
  }
}

TEST(Segments, PowerLawLengthsFloat) {
  FASTREDUCE_REQUIRE_GPU();
  check_segments<float, fr::Sum, std::int32_t>(quick() ? 1 << 20 : 1 << 24, quick() ? 300 : 3000, 20,
                                               Distribution::SignedSmallIntegers);
  check_segments<float, fr::Max, std::int64_t>(1 << 22, 1000, 16, Distribution::Signed);
}
TEST(Segments, ManyTinySegments) {
  FASTREDUCE_REQUIRE_GPU();
  check_segments<std::int32_t, fr::Sum, std::uint64_t>(1 << 20, quick() ? 20000 : 200000, 5, Distribution::Signed);
  check_segments<std::uint8_t, fr::Sum, std::int32_t>(1 << 16, 5000, 8, Distribution::Signed);
}
TEST(Segments, FewHugeSegmentsCutAcrossWarps) {
  FASTREDUCE_REQUIRE_GPU();
  check_segments<double, fr::Sum, std::int64_t>(quick() ? 1 << 21 : 1 << 24, 3, 24, Distribution::SignedSmallIntegers);
  check_segments<__nv_bfloat16, fr::Sum, std::int32_t>(1 << 22, 9, 22, Distribution::SignedSmallIntegers);
  check_segments<std::int64_t, fr::BitXor, std::uint64_t>(1 << 22, 40, 22, Distribution::Signed);
}
TEST(Segments, ReproducibleSegmentsAreTheOneDimensionalSums) {
  FASTREDUCE_REQUIRE_GPU();
  check_segments<float, fr::Sum, std::int32_t>(1 << 21, 500, 20, Distribution::Signed, fr::Mode::Reproducible);
  check_segments<double, fr::Sum, std::int64_t>(1 << 20, 200, 18, Distribution::Signed, fr::Mode::Reproducible);
}
TEST(Segments, NoSegmentsIsNothingToDo) {
  FASTREDUCE_REQUIRE_GPU();
  std::size_t bytes = 0;
  EXPECT_EQ((fr::reduce_segments_async<float, fr::Sum, int>(nullptr, bytes, nullptr, nullptr, 0, nullptr, nullptr)),
            cudaSuccess);
  EXPECT_GT(bytes, 0u);
  DeviceBuffer<char> temp(bytes);
  EXPECT_EQ((fr::reduce_segments_async<float, fr::Sum, int>(temp.get(), bytes, nullptr, nullptr, 0, nullptr, nullptr)),
            cudaSuccess);
}

// Bad input: the error, and nothing written.
TEST(Axis, BadInputIsRefusedAndNothingIsWritten) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> in(4096);
  ASSERT_EQ(fr::bench::fill_random(in.get(), 4096, test_seed(), Distribution::Signed), cudaSuccess);
  DeviceBuffer<float> out(64);
  DeviceBuffer<char> temp(1 << 20);
  const fr::Axis ok = rows(64, 64);
  auto call = [&](const float* d_in, float* d_out, fr::Axis axis, std::size_t temp_bytes, void* d_temp,
                  fr::Options opt = {}) {
    out.poison();
    const cudaError_t e = fr::reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, fr::Sum{}, 0, opt);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto after = fr::bench::to_host(out.get(), 64);
    for (float v : after) {
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if (e != cudaSuccess) EXPECT_EQ(bits, 0xA5A5A5A5u) << "written despite error " << cudaGetErrorString(e);
    }
    return e;
  };
  EXPECT_EQ(call(in.get(), out.get(), ok, 1 << 20, temp.get()), cudaSuccess);
  EXPECT_EQ(call(nullptr, out.get(), ok, 1 << 20, temp.get()), cudaErrorInvalidValue);
  EXPECT_EQ(call(in.get(), nullptr, ok, 1 << 20, temp.get()), cudaErrorInvalidValue);
  EXPECT_EQ(call(in.get(), out.get(), ok, 1, temp.get()), cudaErrorInvalidValue);  // temp too small? (16 is enough here)
  EXPECT_EQ(call(reinterpret_cast<const float*>(reinterpret_cast<const char*>(in.get()) + 2), out.get(), ok, 1 << 20,
                 temp.get()),
            cudaErrorMisalignedAddress);
  EXPECT_EQ(call(in.get(), out.get(), ok, 1 << 20, temp.get() + 4), cudaErrorMisalignedAddress);
  EXPECT_EQ(call(in.get(), out.get(), {.outer = std::size_t(1) << 40, .length = std::size_t(1) << 30}, 1 << 20, temp.get()),
            cudaErrorInvalidValue);
  EXPECT_EQ(call(in.get(), out.get(), {.outer = 2, .length = 2, .outer_stride = std::ptrdiff_t(1) << 61}, 1 << 20, temp.get()),
            cudaErrorInvalidValue);
  float host[64];
  EXPECT_EQ(call(host, out.get(), ok, 1 << 20, temp.get()), cudaErrorInvalidDevicePointer);
  // Reproducible floating-point products do not exist, as in 1-D.
  std::size_t bytes = 0;
  EXPECT_EQ(fr::reduce_axis_async(nullptr, bytes, in.get(), out.get(), ok, fr::Prod{}, 0, {.mode = fr::Mode::Reproducible}),
            cudaErrorNotSupported);
  // The blocking form throws, naming the problem.
  try {
    fr::reduce_axis(in.get(), static_cast<float*>(nullptr), ok);
    ADD_FAILURE() << "no exception";
  } catch (const fr::Error& e) {
    EXPECT_NE(std::string(e.what()).find("d_out"), std::string::npos) << e.what();
  }
  // No outputs: nothing to do, nothing checked.
  EXPECT_EQ(call(nullptr, nullptr, {.outer = 0, .length = 5}, 16, temp.get()), cudaSuccess);
}

TEST(Axis, BlockingFormWritesTheOutputs) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<std::int32_t> in(3 * 1000);
  ASSERT_EQ(fr::bench::fill_random(in.get(), 3000, test_seed(), Distribution::Signed), cudaSuccess);
  DeviceBuffer<std::int32_t> out(3);
  fr::reduce_axis(in.get(), out.get(), rows(3, 1000));
  const auto got = fr::bench::to_host(out.get(), 3);
  const auto host = fr::bench::to_host(in.get(), 3000);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(got[r], fr::reference::reduce(host.data() + r * 1000, 1000, fr::Sum{}));
}

// More than 2^32 elements in total: rows (pieces of rows) and columns of bytes, summed exactly.
TEST(Axis, MoreThan2To32Elements) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 1034;
  DeviceBuffer<std::uint8_t> in(n);
  if (in.get() == nullptr) GTEST_SKIP() << "not enough device memory";
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), Distribution::SmallIntegers), cudaSuccess);
  // Two rows of 2^31 + 517: each checked against the 1-D engine.
  const auto by_rows = run_axis<std::uint8_t, fr::Sum>(in.get(), rows(2, n / 2));
  for (int r = 0; r < 2; ++r) EXPECT_EQ(by_rows[r], fr::reduce(in.get() + r * (n / 2), n / 2)) << "row " << r;
  // Two columns of 2^31 + 517 rows, and 2^23 + 2 rows of 512 (2^32 + 1024 elements as one array of
  // 2^28 + 64 vectors: offsets past 4 GB, not 32-bit indices): against the CPU, read back in pieces.
  const auto by_columns = run_axis<std::uint8_t, fr::Sum>(in.get(), columns(n / 2, 2));
  const std::size_t short_rows = n / 512;
  const auto by_short_rows = run_axis<std::uint8_t, fr::Sum>(in.get(), rows(short_rows, 512));
  std::int64_t want[2] = {0, 0};
  std::vector<std::int64_t> want_rows(short_rows, 0);
  std::vector<std::uint8_t> host(std::size_t(1) << 28);
  for (std::size_t at = 0; at < n; at += host.size()) {
    const std::size_t count = std::min(host.size(), n - at);
    CUDA_OK(cudaMemcpy(host.data(), in.get() + at, count, cudaMemcpyDeviceToHost));
    for (std::size_t k = 0; k < count; ++k) {
      want[(at + k) % 2] += host[k];
      if ((at + k) / 512 < short_rows) want_rows[(at + k) / 512] += host[k];
    }
  }
  EXPECT_EQ(by_columns[0], want[0]);
  EXPECT_EQ(by_columns[1], want[1]);
  ASSERT_EQ(by_short_rows.size(), short_rows);
  std::size_t bad = 0;
  for (std::size_t r = 0; r < short_rows && bad < 5; ++r) {
    if (by_short_rows[r] != want_rows[r]) {
      ++bad;
      ADD_FAILURE() << "row of 512 number " << r << ": got " << by_short_rows[r] << " want " << want_rows[r];
    }
  }
}

// The tests above went through every path (run last: gtest runs tests in file order).
TEST(Axis, ZzEveryPathWasTaken) {
  FASTREDUCE_REQUIRE_GPU();
  const std::string filter = ::testing::GTEST_FLAG(filter);
  // Every test, or every Axis test (scripts/gpu-check.sh runs Axis.* in a process of its own).
  if (filter != "*" && filter != "Axis.*" && filter.rfind("-", 0) != 0) GTEST_SKIP() << "a run of selected tests only";
  for (eng::AxisPath path : {eng::AxisPath::Identity, eng::AxisPath::Flat, eng::AxisPath::RowsTile,
                             eng::AxisPath::RowsLanes, eng::AxisPath::RowsWarp, eng::AxisPath::RowsBlock, eng::AxisPath::Columns,
                             eng::AxisPath::ColumnsScalar, eng::AxisPath::Strided, eng::AxisPath::ReproRows,
                             eng::AxisPath::ReproColumns}) {
    EXPECT_TRUE(paths_seen().count(path)) << "no test took " << eng::axis_path_name(path);
  }
}
