// Mode::Exact: the exact sum rounded once, bit for bit against the big-integer reference
// (bench/reference.hpp's ExactReference), on every kind of data, size class, grid and alignment.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fastreduce/detail/describe.hpp"
#include "fastreduce/detail/exact_axis.cuh"
#include "fastreduce/fastreduce.cuh"
#include "exact_data.hpp"
#include "gpu_test.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
using namespace fastreduce::testing;

namespace {

template <class T>
using Acc = fr::acc_t<T, fr::Sum>;

const fr::Options kExact{.mode = fr::Mode::Exact};

// One Mode::Exact sum through the two-phase contract, output poisoned first.
template <class T>
Acc<T> exact_sum(const T* in, std::size_t n, unsigned max_blocks = 0) {
  const fr::Options opt{.mode = fr::Mode::Exact, .max_blocks = max_blocks};
  std::size_t bytes = 0;
  EXPECT_EQ((fr::reduce_async<T, fr::Sum>(nullptr, bytes, in, nullptr, n, fr::Sum{}, 0, opt)), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  DeviceBuffer<Acc<T>> out(1);
  out.poison();
  EXPECT_EQ((fr::reduce_async<T, fr::Sum>(temp.get(), bytes, in, out.get(), n, fr::Sum{}, 0, opt)), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return read_back(out.get());
}

// The correctly rounded sum as the result type holds it.
template <class T>
Acc<T> expected_sum(const std::vector<T>& host, std::size_t offset, std::size_t n) {
  return static_cast<Acc<T>>(fr::reference::exact_rounded<Acc<T>>(host.data() + offset, n));
}

template <class A>
bool same_result(A got, A expected) {
  return same_bits(got, expected) || (std::isnan(double(got)) && std::isnan(double(expected)));
}

template <class T>
void check_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  std::vector<std::size_t> sizes = {0, 1, 31, 32, 33, 4095, 4097, 65537, (std::size_t(1) << 20) + 3};
  if (!quick()) sizes.push_back(10000019);
  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    for (std::size_t n : sizes) {
      const std::vector<T> host = exact_data<T>(kind, n + 1, test_seed());
      DeviceBuffer<T> in(n + 1);
      CUDA_OK(cudaMemcpy(in.get(), host.data(), (n + 1) * sizeof(T), cudaMemcpyHostToDevice));
      for (std::size_t offset : {0u, 1u}) {  // 16-byte aligned, and an element off
        const Acc<T> expected = expected_sum(host, offset, n);
        for (unsigned max_blocks : {0u, 1u, 7u}) {
          if (offset == 1 && max_blocks != 0) continue;
          const Acc<T> got = exact_sum(in.get() + offset, n, max_blocks);
          EXPECT_TRUE(same_result(got, expected)) << kExactDataSets[kind] << ", n " << n << ", offset " << offset << ", max_blocks "
                                                  << max_blocks << std::hexfloat << ": got " << double(got)
                                                  << ", exact rounded " << double(expected);
        }
      }
    }
  }
}

}  // namespace

TEST(Exact, FloatIsCorrectlyRoundedOnEveryDataSet) { check_every_data_set<float>(); }
TEST(Exact, DoubleIsCorrectlyRoundedOnEveryDataSet) { check_every_data_set<double>(); }
TEST(Exact, HalfIsCorrectlyRoundedOnEveryDataSet) { check_every_data_set<__half>(); }
TEST(Exact, Bfloat16IsCorrectlyRoundedOnEveryDataSet) { check_every_data_set<__nv_bfloat16>(); }

namespace {

// Values placed at chosen elements of an otherwise zero input: in one chain of one lane (elements
// 128 apart for float), in different lanes, in different tiles.
template <class T>
void check_placed(const std::vector<std::pair<std::size_t, double>>& placed, std::size_t n) {
  std::vector<T> host(n, T(0.0f));
  for (const auto& [index, value] : placed) host[index] = static_cast<T>(value);
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const Acc<T> expected = expected_sum(host, 0, n);
  for (unsigned max_blocks : {0u, 1u, 2u}) {
    const Acc<T> got = exact_sum(in.get(), n, max_blocks);
    std::string where;
    for (const auto& [index, value] : placed) where += " " + std::to_string(index);
    EXPECT_TRUE(same_result(got, expected)) << std::hexfloat << "got " << double(got) << " expected " << double(expected)
                                            << " elements" << where << " max_blocks " << max_blocks;
  }
}

template <class T>
void check_placed_everywhere(const std::vector<double>& values) {
  const std::size_t stride = 32 * 16 / sizeof(T);  // the same lane, the next vector of it
  std::vector<std::pair<std::size_t, double>> chain, lanes, tiles;
  for (std::size_t i = 0; i < values.size(); ++i) {
    chain.emplace_back(i * stride, values[i]);           // one chain of one lane, in order
    lanes.emplace_back(5 * i * 16 / sizeof(T), values[i]);  // lanes 0, 5, 10, ...
    tiles.emplace_back(i * 4096 + 37 * i, values[i]);    // a tile each
  }
  check_placed<T>(chain, 4096 + 3);
  check_placed<T>(lanes, 4096 + 3);
  check_placed<T>(tiles, values.size() * 4096 + 5);
}

}  // namespace

// Ties to even, sticky bits far below the tie, subnormal results, intermediate sums past the
// type's range, infinities and NaN: wherever the values sit. Reproducible mode gets some of these
// wrong when they share a lane (its errors are summed in double); Mode::Exact gets all of them.
TEST(Exact, PlacedValuesAreRoundedOnceWhereverTheySit) {
  FASTREDUCE_REQUIRE_GPU();
  const double inf = INFINITY;
  const std::vector<std::vector<double>> float_cases = {
      {1.0, 0x1p-24},                         // a tie: to even
      {1.0, 0x1p-24, 0x1p-149},               // just above the tie, by the smallest subnormal
      {-1.0, -0x1p-24, -0x1p-100},            // the same, negative
      {0x1p-24, 1.0, 0x1p-60, -0x1p-60, 0x1p-130},
      {1.0, -1.0, 0x1p-149},                  // a subnormal result
      {0x1p-126, -0x1p-149},                  // a subnormal result from normals
      {3e38, 3e38, -3e38},                    // 6e38 on the way
      {3e38, 3e38},                           // the sum overflows
      {0x1p100, -0x1p100, -0x1p-100},
      {inf, 1.0}, {-inf, 1.0}, {inf, -inf}, {NAN, 1.0}};
  for (const auto& c : float_cases) check_placed_everywhere<float>(c);
  const std::vector<std::vector<double>> bfloat16_cases = {
      {1.0, 0x1p-24},                // a tie in the float result: to even
      {1.0, 0x1p-24, 0x1p-133},      // just above it, by bfloat16's smallest subnormal
      {1.0, -1.0, 0x1p-133},         // a subnormal result
      {3e38, 3e38, -3e38},
      {3e38, 3e38},
      {inf, -inf}};
  for (const auto& c : bfloat16_cases) check_placed_everywhere<__nv_bfloat16>(c);
  const std::vector<std::vector<double>> double_cases = {
      {1.0, 0x1p-53},                        // a tie: to even
      {1.0, 0x1p-53, 0x1p-1074},             // just above it, by the smallest subnormal
      {-1.0, -0x1p-53, -0x1p-600},
      {1e300, -1e300, 1e-300},
      {1.0, -1.0, 0x1p-1074},
      {1.7e308, 1.7e308, -1.7e308},          // 3.4e308 on the way: no overflow
      {1.7e308, 1.7e308},                    // the sum overflows
      {0x1p1000, 0x1p-1000, -0x1p1000},      // 2000 bits apart
      {inf, 1.0}, {inf, -inf}, {NAN, 1.0}};
  for (const auto& c : double_cases) check_placed_everywhere<double>(c);
  const std::vector<std::vector<double>> half_cases = {
      {2048.0, 1.0},                         // 2049: a tie in half, but the float result is exact
      {65504.0, 65504.0, -65504.0},
      {0x1p-24, 0x1p-24, 1.0}};
  for (const auto& c : half_cases) check_placed_everywhere<__half>(c);
}

// Exponents spread over the whole range in every element: every addition spills into the exact
// limbs, tile after tile (so the limbs are carried after each tile), and the result is still exact.
TEST(Exact, EveryElementSpilledOverManyTilesStaysExact) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? (std::size_t(1) << 18) + 3 : (std::size_t(1) << 23) + 3;
  auto run = [&](auto type_tag) {
    using T = decltype(type_tag);
    const std::vector<T> host = exact_data<T>(7, n, test_seed());  // every exponent
    DeviceBuffer<T> in(n);
    CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    const Acc<T> expected = expected_sum(host, 0, n);
    for (unsigned max_blocks : {0u, 1u}) {  // one block: a warp carries its limbs after hundreds of tiles
      const Acc<T> got = exact_sum(in.get(), n, max_blocks);
      EXPECT_TRUE(same_result(got, expected)) << std::hexfloat << double(got) << " != " << double(expected);
    }
  };
  run(float{});
  run(double{});
}

namespace {

// Every output of an axis reduction against the reference of its own elements, gathered on the
// host with the layout's strides (elements addressed from `origin`, an offset into `host`).
template <class T>
void check_axis(const std::vector<T>& host, std::size_t origin, const fr::Axis& axis, const char* what) {
  const std::size_t outputs = axis.outer * axis.inner;
  DeviceBuffer<T> in(host.size());
  CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  DeviceBuffer<Acc<T>> out(std::max<std::size_t>(outputs, 1));
  out.poison();
  std::size_t bytes = 0;
  ASSERT_EQ((fr::reduce_axis_async<T, fr::Sum>(nullptr, bytes, in.get() + origin, out.get(), axis, fr::Sum{}, 0, kExact)),
            cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  ASSERT_EQ((fr::reduce_axis_async<T, fr::Sum>(temp.get(), bytes, in.get() + origin, out.get(), axis, fr::Sum{}, 0, kExact)),
            cudaSuccess);
  std::vector<Acc<T>> got(outputs);
  CUDA_OK(cudaMemcpy(got.data(), out.get(), outputs * sizeof(Acc<T>), cudaMemcpyDeviceToHost));
  const std::int64_t os = axis.outer_stride == fr::Axis::kContiguous ? std::int64_t(axis.length * axis.inner) : axis.outer_stride;
  const std::int64_t ls = axis.length_stride == fr::Axis::kContiguous ? std::int64_t(axis.inner) : axis.length_stride;
  const std::int64_t is = axis.inner_stride == fr::Axis::kContiguous ? 1 : axis.inner_stride;
  int failures = 0;
  for (std::size_t o = 0; o < axis.outer; ++o) {
    for (std::size_t i = 0; i < axis.inner; ++i) {
      std::vector<T> elems(axis.length);
      for (std::size_t k = 0; k < axis.length; ++k) {
        elems[k] = host[origin + o * os + k * ls + i * is];
      }
      const Acc<T> expected = expected_sum(elems, 0, axis.length);
      const Acc<T> value = got[o * axis.inner + i];
      if (!same_result(value, expected) && ++failures <= 3) {
        ADD_FAILURE() << what << ": output (" << o << ", " << i << ") of " << axis.outer << " x " << axis.length << " x "
                      << axis.inner << std::hexfloat << ": got " << double(value) << ", exact rounded " << double(expected);
      }
    }
  }
}

template <class T>
void check_every_axis_layout() {
  FASTREDUCE_REQUIRE_GPU();
  const bool q = quick();
  for (int kind : {0, 2, 3, 7, 8}) {  // uniform, wide range, cancellation, every exponent, NaN and infinities
    const std::size_t n = q ? 1500000 : 3000000;
    const std::vector<T> host = exact_data<T>(kind, n, test_seed());
    const char* what = kExactDataSets[kind];
    // Rows: short (one warp each; past 1024 float-valued ones with the wide check), and long (a
    // block each, in pieces).
    for (std::size_t length : {std::size_t(1), std::size_t(3), std::size_t(33), std::size_t(1500), std::size_t(4096),
                               std::size_t(4097), std::size_t(70001)}) {
      check_axis(host, 0, fr::Axis{std::min<std::size_t>(n / length, 257), length, 1}, what);
    }
    check_axis(host, 1, fr::Axis{2, n / 2 - 1, 1}, what);  // two long rows, misaligned
    // Columns: few and many, short and long (pieces), a column of one.
    for (std::size_t inner : {std::size_t(2), std::size_t(3), std::size_t(32), std::size_t(100)}) {
      for (std::size_t length : {std::size_t(5), std::size_t(2000), std::size_t(4099)}) {
        check_axis(host, 0, fr::Axis{3, length, inner}, what);
      }
    }
    check_axis(host, 0, fr::Axis{1, n / 3, 3}, what);  // three long columns, interleaved
    // Strided views: a transposed matrix, and negative strides (a flipped view).
    check_axis(host, 0, fr::Axis{1, 300, 200, fr::Axis::kContiguous, 1, 300}, what);
    check_axis(host, 299 * 200 + 199, fr::Axis{1, 300, 200, fr::Axis::kContiguous, -200, -1}, what);
  }
}

}  // namespace

TEST(Exact, FloatAlongEveryAxisLayout) { check_every_axis_layout<float>(); }
TEST(Exact, DoubleAlongEveryAxisLayout) { check_every_axis_layout<double>(); }
TEST(Exact, HalfAlongEveryAxisLayout) { check_every_axis_layout<__half>(); }
TEST(Exact, Bfloat16AlongEveryAxisLayout) { check_every_axis_layout<__nv_bfloat16>(); }

namespace {

// Short rows and columns take fast mode's paths with the exact check (detail/exact_axis.cuh); the
// few outputs whose check fails (a value far larger than the rest, infinity, NaN) are recomputed
// by the fix-up. Every output is held to the exact reference; which outputs the fix-up touched is
// not observed here. Longer rows keep the exact lanes' paths.
template <class T>
void check_short_axes() {
  FASTREDUCE_REQUIRE_GPU();
  namespace eng = fastreduce::engine;
  using A = Acc<T>;
  constexpr std::size_t kMax = eng::kExactWideCheckMaxLength;  // float-valued sums past 1024: the wide check
  constexpr std::size_t kNarrowMax = eng::kExactCheckMaxLength<A>;
  std::mt19937_64 rng(test_seed());
  // Values that make a row fail the check: one huge value among the rest (half cannot hold one
  // large enough: a half row's exact sum always fits a double), infinity and NaN.
  const double huge = std::is_same_v<T, double> ? 0x1p1000 : 0x1p100;
  std::vector<T> breakers = {T(std::numeric_limits<float>::infinity()), T(-std::numeric_limits<float>::infinity()),
                             T(std::numeric_limits<float>::quiet_NaN())};
  if (!std::is_same_v<T, __half>) breakers.push_back(T(huge));
  struct Shape {
    fr::Axis axis;
    bool fast;  // takes a fast path
  };
  const std::vector<Shape> shapes = {
      {fr::Axis{4099, 1, 1}, true},         {fr::Axis{2053, 2, 1}, true},        {fr::Axis{1031, 33, 1}, true},
      {fr::Axis{4099, 100, 1}, true},  // enough rows of over 256 bytes for a warp per row
      {fr::Axis{257, 256, 1}, true},        {fr::Axis{37, kMax, 1}, true},       {fr::Axis{5, kMax + 1, 1}, false},
      {fr::Axis{3, 5, 100}, true},          {fr::Axis{2, 1000, 33}, true},       {fr::Axis{1, 300, 7, fr::Axis::kContiguous, 1, 300}, true},
      {fr::Axis{40, kNarrowMax, 1}, true},  {fr::Axis{40, kNarrowMax + 1, 1}, kNarrowMax < kMax},
      {fr::Axis{300, 2000, 1}, true},       {fr::Axis{2, 3000, 40}, true},       {fr::Axis{1, 2000, 9, fr::Axis::kContiguous, 1, 2000}, true},
      {fr::Axis{257, 2048 / sizeof(T), 1}, true},  // rows of 2 KB: a warp's run each (RowsLanes)
  };
  for (const Shape& shape : shapes) {
    const fr::Axis& axis = shape.axis;
    const std::size_t n = axis.outer * axis.length * axis.inner;
    std::vector<T> host = exact_data<T>(0, n + 1, rng());  // uniform: an output seldom fails the check
    const bool breaks = shape.fast && axis.outer * axis.inner > 8;
    for (int b = 0; breaks && b < 4; ++b) host[1 + rng() % n] = breakers[rng() % breakers.size()];
    DeviceBuffer<T> in(n + 1);
    CUDA_OK(cudaMemcpy(in.get(), host.data(), (n + 1) * sizeof(T), cudaMemcpyHostToDevice));
    eng::AxisPlan plan{};
    ASSERT_EQ((eng::describe_axis<fr::storage_t<T>, fr::Sum>(reinterpret_cast<const fr::storage_t<T>*>(in.get() + 1), axis,
                                                             kExact, plan)),
              cudaSuccess);
    const bool repro = plan.path == eng::AxisPath::ReproRows || plan.path == eng::AxisPath::ReproColumns;
    EXPECT_EQ(!repro, shape.fast) << eng::axis_path_name(plan.path) << " for " << axis.outer << " x " << axis.length << " x "
                                  << axis.inner;
    check_axis(host, 1, axis, breaks ? "uniform with breakers" : "uniform");  // misaligned by an element
    check_axis(host, 0, axis, breaks ? "uniform with breakers" : "uniform");
  }
}

}  // namespace

namespace {

// An axis of length 1 runs as fast mode (one element's sum is that element rounded once): every
// output must hold the bits the 1-D exact sum gives its element alone, negative zero (+0, as every
// exact path gives it), subnormals, the largest values, infinities and NaN included (NaN: a NaN;
// its payload is not part of the result), on every layout a length of 1 can take, in the
// accumulator's type and, for half and bfloat16, in the input's own type.
template <class T, class O>
void check_length_one_into(const std::vector<T>& host, const DeviceBuffer<T>& in, const std::vector<Acc<T>>& one) {
  namespace eng = fastreduce::engine;
  const std::size_t n = host.size();
  const std::vector<fr::Axis> axes = {
      fr::Axis{n, 1, 1},                          // rows of one element
      fr::Axis{1, 1, n},                          // one row of n columns
      fr::Axis{n / 2, 1, 1, 2},                   // every other element
      fr::Axis{1, 1, n / 3, fr::Axis::kContiguous, 1, 3},  // a strided view
      fr::Axis{1, 1, 1},                          // one output of one element
  };
  for (const fr::Axis& axis : axes) {
    const std::size_t outputs = axis.outer * axis.inner;
    const std::int64_t step = axis.outer > 1 ? (axis.outer_stride == fr::Axis::kContiguous ? 1 : axis.outer_stride)
                                             : (axis.inner_stride == fr::Axis::kContiguous ? 1 : axis.inner_stride);
    eng::AxisPlan plan{};
    ASSERT_EQ((eng::describe_axis<fr::storage_t<T>, fr::Sum>(reinterpret_cast<const fr::storage_t<T>*>(in.get()), axis,
                                                             kExact, plan)),
              cudaSuccess);
    EXPECT_TRUE(plan.path != eng::AxisPath::ReproRows && plan.path != eng::AxisPath::ReproColumns)
        << "length 1 takes fast mode's path, not " << eng::axis_path_name(plan.path);
    DeviceBuffer<O> out(outputs);
    out.poison();
    std::size_t bytes = 0;
    ASSERT_EQ((fr::reduce_axis_async(nullptr, bytes, in.get(), out.get(), axis, fr::Sum{}, 0, kExact)), cudaSuccess);
    DeviceBuffer<char> temp(bytes);
    ASSERT_EQ((fr::reduce_axis_async(temp.get(), bytes, in.get(), out.get(), axis, fr::Sum{}, 0, kExact)), cudaSuccess);
    std::vector<O> got(outputs);
    CUDA_OK(cudaMemcpy(got.data(), out.get(), outputs * sizeof(O), cudaMemcpyDeviceToHost));
    int failures = 0;
    for (std::size_t q = 0; q < outputs; ++q) {
      const std::size_t i = q * static_cast<std::size_t>(step);
      // The 1-D exact sum of element i, in O: the accumulator's value, or (half, bfloat16) the
      // element itself, which it holds exactly (-0 as +0).
      const double expected = std::is_same_v<O, Acc<T>> ? double(one[i]) : (double(host[i]) == 0.0 ? 0.0 : double(host[i]));
      const double value = double(got[q]);
      const bool same = std::isnan(expected) ? std::isnan(value)
                                             : (value == expected && std::signbit(value) == std::signbit(expected));
      if (!same && ++failures <= 3) {
        ADD_FAILURE() << "length 1, " << axis.outer << " x 1 x " << axis.inner << ", output " << q << std::hexfloat
                      << ": got " << value << ", the 1-D exact sum of the element " << expected;
      }
    }
  }
}

template <class T>
void check_length_one() {
  FASTREDUCE_REQUIRE_GPU();
  using A = Acc<T>;
  const double largest = std::is_same_v<T, double> ? std::numeric_limits<double>::max()
                         : std::is_same_v<T, __half> ? 65504.0
                                                     : double(std::numeric_limits<float>::max());
  const double tiny = std::is_same_v<T, double> ? std::numeric_limits<double>::denorm_min()
                      : std::is_same_v<T, __half> ? 0x1p-24
                      : std::is_same_v<T, __nv_bfloat16> ? 0x1p-133
                                                         : double(std::numeric_limits<float>::denorm_min());
  std::vector<T> host = exact_data<T>(0, 4098, test_seed());
  const std::vector<double> specials = {-0.0, 0.0, tiny, -tiny, largest, -largest,
                                        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::quiet_NaN(), -1.5};
  for (std::size_t i = 0; i < specials.size(); ++i) host[6 * i] = T(specials[i]);  // at every step the layouts take
  const std::size_t n = host.size();
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  std::vector<A> one(n);
  for (std::size_t i = 0; i < n; ++i) one[i] = exact_sum(in.get() + i, 1);
  check_length_one_into<T, A>(host, in, one);
  if constexpr (!std::is_same_v<T, A>) check_length_one_into<T, T>(host, in, one);
}

}  // namespace

TEST(Exact, LengthOneGivesTheOneDimensionalBits) {
  check_length_one<float>();
  check_length_one<double>();
  check_length_one<__half>();
  check_length_one<__nv_bfloat16>();
}

namespace {

// Rows and columns of 1025 to 4096 elements (float-valued sums: ExactCheck's wide form, a pair
// rounded through off_midpoint) holding the placed values and zeros: eight outputs, each with the
// values at its own positions, as rows (8 x length) and as columns (length x 8), against the exact
// reference of its elements, in the accumulator's type and (half and bfloat16) in T's own.
template <class T>
void check_placed_along_wide_axes(const std::vector<double>& values) {
  namespace eng = fastreduce::engine;
  for (std::size_t length : {std::size_t(1025), std::size_t(3001), eng::kExactWideCheckMaxLength}) {
    constexpr std::size_t kOutputs = 8;
    std::vector<T> rows(kOutputs * length, T(0.0f)), columns(kOutputs * length, T(0.0f));
    for (std::size_t q = 0; q < kOutputs; ++q) {
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::size_t k = (i * (37 * q + 101) + 13 * q) % length;  // distinct for these lengths and sizes
        rows[q * length + k] = static_cast<T>(values[i]);
        columns[k * kOutputs + q] = static_cast<T>(values[i]);
      }
    }
    for (const bool as_rows : {true, false}) {
      const std::vector<T>& host = as_rows ? rows : columns;
      const fr::Axis axis = as_rows ? fr::Axis{kOutputs, length, 1} : fr::Axis{1, length, kOutputs};
      eng::AxisPlan plan{};
      DeviceBuffer<T> in(host.size());
      CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
      ASSERT_EQ((eng::describe_axis<fr::storage_t<T>, fr::Sum>(reinterpret_cast<const fr::storage_t<T>*>(in.get()), axis,
                                                               kExact, plan)),
                cudaSuccess);
      EXPECT_TRUE(plan.path != eng::AxisPath::ReproRows && plan.path != eng::AxisPath::ReproColumns)
          << eng::axis_path_name(plan.path) << " for " << length;
      check_axis(host, 0, axis, as_rows ? "placed values, rows" : "placed values, columns");
      if constexpr (sizeof(T) == 2) {
        DeviceBuffer<T> out(kOutputs);
        out.poison();
        std::size_t bytes = 0;
        ASSERT_EQ(fr::reduce_axis_async(nullptr, bytes, in.get(), out.get(), axis, fr::Sum{}, 0, kExact), cudaSuccess);
        DeviceBuffer<char> temp(bytes);
        ASSERT_EQ(fr::reduce_axis_async(temp.get(), bytes, in.get(), out.get(), axis, fr::Sum{}, 0, kExact), cudaSuccess);
        std::vector<T> got(kOutputs);
        CUDA_OK(cudaMemcpy(got.data(), out.get(), kOutputs * sizeof(T), cudaMemcpyDeviceToHost));
        for (std::size_t q = 0; q < kOutputs; ++q) {
          const std::vector<T> e(rows.begin() + std::ptrdiff_t(q * length), rows.begin() + std::ptrdiff_t((q + 1) * length));
          const double expected = fr::reference::exact_rounded<T>(e.data(), length);
          const double value = static_cast<double>(static_cast<float>(got[q]));
          EXPECT_TRUE(same_result(value, expected) || (std::isnan(value) && std::isnan(expected)))
              << (as_rows ? "rows" : "columns") << " of " << length << ", output " << q << " in its own type"
              << std::hexfloat << ": got " << value << ", exact rounded " << expected;
        }
      }
    }
  }
}

}  // namespace

// Ties of the result type, sticky bits far below them (which a pair holds in its error, and which
// a plain rounding of the pair's sum would lose), infinities and NaN, along the wide check's axes.
TEST(Exact, PlacedValuesAlongWideAxesAreRoundedOnce) {
  FASTREDUCE_REQUIRE_GPU();
  const double inf = INFINITY;
  for (const auto& c : std::vector<std::vector<double>>{{1.0, 0x1p-24},  // a tie: to even
                                                        {1.0, 0x1p-24, 0x1p-60},  // above it, by 2^-60: up
                                                        {-1.0, -0x1p-24, -0x1p-60},
                                                        {1.0, 0x1p-24, -0x1p-60},  // below it: down
                                                        {1.0, 0x1p-24, 0x1p-60, -0x1p-60},
                                                        {1.0, -1.0, 0x1p-149},
                                                        {3e38, 3e38, -3e38},
                                                        {3e38, 3e38},
                                                        {inf, 1.0},
                                                        {inf, -inf},
                                                        {NAN, 1.0}}) {
    check_placed_along_wide_axes<float>(c);
  }
  for (const auto& c : std::vector<std::vector<double>>{{1.0, 0x1p-8},  // a bfloat16 tie: to even (exact in float)
                                                        {1.0, 0x1p-8, 0x1p-80},  // up in bfloat16
                                                        {1.0, 0x1p-8, -0x1p-80},  // down in bfloat16
                                                        {1.0, 0x1p-24, 0x1p-80},  // a float tie, up
                                                        {3e38, 3e38},
                                                        {inf, -inf}}) {
    check_placed_along_wide_axes<__nv_bfloat16>(c);
  }
  // Half: a row's sum of up to 4096 halves is exact in one double (the pair's error stays 0), so
  // these are plain ties of the half result and an overflow of it.
  for (const auto& c : std::vector<std::vector<double>>{{2048.0, 1.0}, {2048.0, 1.0, 0x1p-24}, {65504.0, 65504.0}}) {
    check_placed_along_wide_axes<__half>(c);
  }
}

TEST(Exact, FloatShortAxesTakeTheFastPaths) { check_short_axes<float>(); }
TEST(Exact, DoubleShortAxesTakeTheFastPaths) { check_short_axes<double>(); }
TEST(Exact, HalfShortAxesTakeTheFastPaths) { check_short_axes<__half>(); }
TEST(Exact, Bfloat16ShortAxesTakeTheFastPaths) { check_short_axes<__nv_bfloat16>(); }

// Segments (empty, overlapping, of every length up to a power law's tail) against the reference.
TEST(Exact, SegmentsMatchTheReference) {
  FASTREDUCE_REQUIRE_GPU();
  auto run = [](auto type_tag) {
    using T = decltype(type_tag);
    const std::size_t n = quick() ? 200000 : 2000003;
    const std::vector<T> host = exact_data<T>(7, n, test_seed());  // every exponent
    std::mt19937_64 rng(test_seed());
    std::vector<std::int64_t> begin, end;
    for (std::size_t s = 0; s < 300; ++s) {
      const std::size_t length = s % 17 == 0 ? 0 : static_cast<std::size_t>(std::pow(2.0, 20.0 * std::pow(double(rng() % 1000) / 1000.0, 3)));
      const std::size_t b = rng() % (n - std::min(length, n - 1));
      begin.push_back(static_cast<std::int64_t>(b));
      end.push_back(static_cast<std::int64_t>(std::min(b + length, n)));
    }
    DeviceBuffer<T> in(n);
    DeviceBuffer<std::int64_t> d_begin(begin.size()), d_end(end.size());
    DeviceBuffer<Acc<T>> out(begin.size());
    CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_begin.get(), begin.data(), begin.size() * 8, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_end.get(), end.data(), end.size() * 8, cudaMemcpyHostToDevice));
    out.poison();
    std::size_t bytes = 0;
    ASSERT_EQ((fr::reduce_segments_async<T, fr::Sum>(nullptr, bytes, in.get(), out.get(), begin.size(), d_begin.get(),
                                                     d_end.get(), fr::Sum{}, 0, kExact)),
              cudaSuccess);
    DeviceBuffer<char> temp(bytes);
    ASSERT_EQ((fr::reduce_segments_async<T, fr::Sum>(temp.get(), bytes, in.get(), out.get(), begin.size(), d_begin.get(),
                                                     d_end.get(), fr::Sum{}, 0, kExact)),
              cudaSuccess);
    std::vector<Acc<T>> got(begin.size());
    CUDA_OK(cudaMemcpy(got.data(), out.get(), got.size() * sizeof(Acc<T>), cudaMemcpyDeviceToHost));
    for (std::size_t s = 0; s < begin.size(); ++s) {
      const Acc<T> expected = static_cast<Acc<T>>(
          fr::reference::exact_rounded<Acc<T>>(host.data() + begin[s], static_cast<std::size_t>(end[s] - begin[s])));
      EXPECT_TRUE(same_result(got[s], expected)) << "segment " << s << " [" << begin[s] << ", " << end[s] << ")"
                                                  << std::hexfloat << ": got " << double(got[s]) << ", exact rounded "
                                                  << double(expected);
    }
  };
  run(float{});
  run(double{});
  run(__half{});
  run(__nv_bfloat16{});
}

// Segments are cut into runs of tiles, one run a warp, and a segment cut by the runs is joined
// from rows of limbs: its bits must not depend on the grid. More segments than one block scans
// (the counting kernel and CUB's scan), most of them short, some empty or reversed (end before
// begin), six of 2^20 elements and more, and one of nearly the whole input (2048 tiles: on three
// blocks' 24 warps, about 9,000 pieces in runs of about 370, it holds whole runs, which leave only
// head rows, and its join adds several), starts off 16-byte alignment; in Mode::Exact against the
// reference, in Mode::Reproducible against the 1-D reproducible sum of the segment alone, on
// grids of 1, 3 and every block. Quick mode (compute-sanitizer) takes a quarter of the input: the
// long segment, 512 tiles, then spans two runs on three blocks and holds whole runs only on the
// whole GPU's grid.
template <class T>
void check_segments_on_every_grid(fr::Mode mode) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = (std::size_t(1) << (quick() ? 21 : 23)) + 5;
  const std::vector<T> host = exact_data<T>(mode == fr::Mode::Exact ? 2 : 1, n, test_seed());  // wide range; normal
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  std::mt19937_64 rng(test_seed() + 11);
  const std::size_t count = 5003;
  std::vector<std::int64_t> begin(count), end(count);
  for (std::size_t s = 0; s < count; ++s) {
    const std::size_t length = s == 1         ? n - 1 - rng() % 7                           // 2048 tiles
                               : s % 997 == 3 ? (std::size_t(1) << 20) + rng() % 9000  // 257 or more tiles
                               : s % 101 == 9 ? 4096 * (1 + rng() % 8) - 1 + rng() % 3  // about a tile or eight
                               : s % 13 == 0  ? 0
                                              : rng() % 200;
    begin[s] = std::int64_t(rng() % (n - length));
    end[s] = begin[s] + std::int64_t(length);
    if (s % 37 == 11 && begin[s] > 0) end[s] = begin[s] - 1;  // reversed: empty
  }
  DeviceBuffer<std::int64_t> d_begin(count), d_end(count);
  CUDA_OK(cudaMemcpy(d_begin.get(), begin.data(), count * 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_end.get(), end.data(), count * 8, cudaMemcpyHostToDevice));
  std::vector<std::vector<Acc<T>>> results;
  for (unsigned max_blocks : {0u, 1u, 3u}) {
    const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
    std::size_t bytes = 0;
    ASSERT_EQ((fr::reduce_segments_async<T, fr::Sum>(nullptr, bytes, in.get(), nullptr, count, d_begin.get(),
                                                     d_end.get(), fr::Sum{}, 0, opt)),
              cudaSuccess);
    DeviceBuffer<char> temp(bytes);
    temp.poison();
    DeviceBuffer<Acc<T>> out(count);
    out.poison();
    ASSERT_EQ((fr::reduce_segments_async<T, fr::Sum>(temp.get(), bytes, in.get(), out.get(), count, d_begin.get(),
                                                     d_end.get(), fr::Sum{}, 0, opt)),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<Acc<T>> got(count);
    CUDA_OK(cudaMemcpy(got.data(), out.get(), count * sizeof(Acc<T>), cudaMemcpyDeviceToHost));
    results.push_back(std::move(got));
  }
  std::size_t bad = 0;
  for (std::size_t s = 0; s < count && bad < 5; ++s) {
    const std::size_t length = end[s] > begin[s] ? std::size_t(end[s] - begin[s]) : 0;
    for (std::size_t g = 1; g < results.size(); ++g) {
      if (!same_bits(results[g][s], results[0][s])) {
        ++bad;
        ADD_FAILURE() << "segment " << s << " of length " << length << ": grid " << g << " gives " << std::hexfloat
                      << double(results[g][s]) << ", the whole GPU " << double(results[0][s]);
      }
    }
    Acc<T> expected{};
    if (mode == fr::Mode::Exact) {
      expected = expected_sum(host, std::size_t(begin[s]), length);
    } else {
      if (s % 7 != 0 && length < 4096) continue;  // a sample of the short ones
      expected = length == 0 ? Acc<T>(0) : fr::reduce(in.get() + begin[s], length, fr::Sum{}, fr::Options{.mode = mode});
    }
    if (!same_result(results[0][s], expected)) {
      ++bad;
      ADD_FAILURE() << "segment " << s << " of length " << length << std::hexfloat << ": got "
                    << double(results[0][s]) << ", expected " << double(expected);
    }
  }
}
TEST(Exact, SegmentsAreTheSameOnEveryGrid) {
  check_segments_on_every_grid<float>(fr::Mode::Exact);
  check_segments_on_every_grid<double>(fr::Mode::Exact);
  check_segments_on_every_grid<__nv_bfloat16>(fr::Mode::Exact);
}
TEST(Exact, ReproducibleSegmentsAreTheSameOnEveryGrid) {
  check_segments_on_every_grid<float>(fr::Mode::Reproducible);
  check_segments_on_every_grid<double>(fr::Mode::Reproducible);
}

// The axis reduction with one contiguous output is the 1-D reduction, in Mode::Exact too.
TEST(Exact, OneContiguousOutputAlongAnAxis) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = (std::size_t(1) << 20) + 3;
  const std::vector<float> host = exact_data<float>(2, n, test_seed());  // wide range
  DeviceBuffer<float> in(n), out(1);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  out.poison();
  fr::reduce_axis(in.get(), out.get(), fr::Axis{1, n, 1}, fr::Sum{}, kExact);
  EXPECT_TRUE(same_bits(read_back(out.get()), expected_sum(host, 0, n)));
}

// More than 2^32 elements (16 GiB of floats): the counts and offsets of every stage hold.
TEST(Exact, MoreThan2To32Elements) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 4099;
  std::size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < n * sizeof(float) + (std::size_t(1) << 30)) GTEST_SKIP() << "needs 17 GiB of free device memory";
  DeviceBuffer<float> in(n);
  // Every element 0x3F3F3F3F (0.7470...): the exact sum is n times that value.
  CUDA_OK(cudaMemset(in.get(), 0x3F, n * sizeof(float)));
  float value = 0;
  const unsigned bits = 0x3F3F3F3Fu;
  std::memcpy(&value, &bits, sizeof value);
  fr::reference::ExactReference exact;
  exact.add(double(value) * double(n >> 16) * 65536.0);  // 24 + 16 bits: exact
  exact.add(double(value) * double(n & 0xFFFF));             // 24 + 13 bits
  const float expected = static_cast<float>(exact.rounded<float>());
  EXPECT_TRUE(same_bits(exact_sum(in.get(), n), expected));
  EXPECT_TRUE(same_bits(exact_sum(in.get(), n, 7), expected));
}

// Ops whose result is exact in any order (integers, Min, Max) take their fast path in Mode::Exact
// and give its result; ops Mode::Exact does not serve and sums beyond its limits are refused
// before anything is launched, with nothing written.
TEST(Exact, ExactOpsTakeTheFastPathAndTheRestIsRefused) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 100003;
  DeviceBuffer<float> in(n);
  DeviceBuffer<int> ints(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  ASSERT_EQ(fr::bench::fill_random(ints.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  EXPECT_TRUE(same_bits(fr::reduce(in.get(), n, fr::Max{}, kExact), fr::reduce(in.get(), n, fr::Max{})));
  EXPECT_TRUE(same_bits(fr::reduce(in.get(), n, fr::Min{}, kExact), fr::reduce(in.get(), n, fr::Min{})));
  EXPECT_EQ(fr::reduce(ints.get(), n, fr::Sum{}, kExact), fr::reduce(ints.get(), n, fr::Sum{}));

  DeviceBuffer<float> out(16);
  out.poison();
  const float poisoned = read_back(out.get());
  std::size_t bytes = 1 << 20;
  DeviceBuffer<char> temp(bytes);
  EXPECT_EQ((fr::reduce_async<float, fr::Prod>(temp.get(), bytes, in.get(), out.get(), n, fr::Prod{}, 0, kExact)),
            cudaErrorNotSupported);
  const std::size_t huge = std::size_t(1) << 40;
  std::size_t query = 0;
  EXPECT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, query, in.get(), nullptr, huge, fr::Sum{}, 0, kExact)),
            cudaErrorNotSupported);
  EXPECT_EQ((fr::reduce_axis_async<float, fr::Sum>(nullptr, query, in.get(), nullptr, fr::Axis{2, huge, 1}, fr::Sum{}, 0,
                                                   kExact)),
            cudaErrorNotSupported);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(same_bits(read_back(out.get()), poisoned));
  try {
    (void)fr::reduce(in.get(), n, fr::Prod{}, kExact);
    ADD_FAILURE() << "no exception";
  } catch (const fr::Error& e) {
    EXPECT_EQ(e.code(), cudaErrorNotSupported);
    EXPECT_NE(std::string(e.what()).find("Mode::Exact"), std::string::npos) << e.what();
  }
  // A Mode that is none of the three is an argument error.
  const fr::Options bad{.mode = static_cast<fr::Mode>(7)};
  EXPECT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, query, in.get(), nullptr, n, fr::Sum{}, 0, bad)), cudaErrorInvalidValue);
}
