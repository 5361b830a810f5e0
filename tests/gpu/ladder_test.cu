// Every rung x op x type x edge size x block size against the CPU reference.
#include <cmath>
#include <limits>

#include "baselines.hpp"
#include "gpu_test.hpp"
#include "fastreduce/ladder.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
namespace lad = fastreduce::ladder;
using namespace fastreduce::testing;

namespace {

template <class Op>
const char* op_name() {
  return Op::name;
}

template <class T, class Op>
void check_ladder() {
  FASTREDUCE_REQUIRE_GPU();
  // Under compute-sanitizer (quick mode) two types cover the kernels' code paths: every rung is
  // the same template for all types.
  if (quick() && !std::is_same_v<T, float> && !std::is_same_v<T, std::int32_t>) GTEST_SKIP() << "quick mode";
  int device = 0;
  cudaGetDevice(&device);
  const std::vector<unsigned> blocks = quick() ? std::vector<unsigned>{32, 256} : std::vector<unsigned>{32, 128, 256, 1024};
  lad::Workspace workspace;
  DeviceBuffer<T> out(1);
  for (std::size_t n : edge_sizes()) {
    DeviceBuffer<T> in(n);
    ASSERT_NE(in.get(), nullptr);
    const auto dist = fr::bench::distribution_for(op_name<Op>());
    CUDA_OK(fr::bench::fill_random(in.get(), n, test_seed(), dist, std::is_same_v<Op, fr::BitAnd>));
    const std::vector<T> host = fr::bench::to_host(in.get(), n);
    long double expected = 0, scale = 0;
    if constexpr (std::is_floating_point_v<T> && std::is_same_v<Op, fr::Sum>) {
      expected = fr::reference::compensated_sum(host.data(), n);
      scale = fr::reference::absolute_sum(host.data(), n);
    } else {
      expected = static_cast<long double>(fr::reference::reduce(host.data(), n, Op{}));
      scale = std::fabs(expected);
    }
    for (const lad::Rung& rung : lad::rungs()) {
      for (unsigned block : blocks) {
        const lad::Limits limits = lad::device_limits(device, block);
        out.poison();
        ASSERT_EQ((lad::run<T, Op>(rung, in.get(), out.get(), n, block, workspace, 0, limits)), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const T got = read_back(out.get());
        if constexpr (std::is_floating_point_v<T> && (std::is_same_v<Op, fr::Sum> || std::is_same_v<Op, fr::Prod>)) {
          // A sum's error grows with the longest chain of additions an element goes through; a
          // product's relative error with every one of its n - 1 multiplications.
          const long double depth = std::is_same_v<Op, fr::Sum> ? lad::error_depth(rung, n, block, limits)
                                                               : std::max<std::size_t>(n, 1) - 1;
          const long double bound = depth * std::numeric_limits<T>::epsilon() * scale + std::numeric_limits<T>::min();
          ASSERT_LE(std::fabs(static_cast<long double>(got) - expected), bound)
              << "rung " << rung.id << " block " << block << " n " << n << " got " << got << " want " << double(expected);
        } else {
          ASSERT_EQ(got, static_cast<T>(expected)) << "rung " << rung.id << " block " << block << " n " << n;
        }
      }
    }
    // The read-bound reference row: the same answer, whatever order the atomics take.
    out.poison();
    const lad::Limits limits = lad::device_limits(device, 256);
    ASSERT_EQ((lad::read_bound<T, Op>(in.get(), out.get(), n, 0)), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const T got = read_back(out.get());
    if constexpr (std::is_floating_point_v<T> && (std::is_same_v<Op, fr::Sum> || std::is_same_v<Op, fr::Prod>)) {
      const long double depth = std::is_same_v<Op, fr::Sum>
                                    ? lad::error_depth(*lad::find_rung("11"), n, 256, limits) + n / 4096 + 1
                                    : std::max<std::size_t>(n, 1) - 1;
      ASSERT_LE(std::fabs(static_cast<long double>(got) - expected), depth * std::numeric_limits<T>::epsilon() * scale + std::numeric_limits<T>::min())
          << "read-bound n " << n;
    } else {
      ASSERT_EQ(got, static_cast<T>(expected)) << "read-bound n " << n;
    }
  }
}

}  // namespace

#define LADDER_TEST(Type, Op) \
  TEST(Ladder, Type##_##Op) { check_ladder<Type, fr::Op>(); }
using int32 = std::int32_t;
using uint32 = std::uint32_t;
using int64 = std::int64_t;
LADDER_TEST(int32, Sum)
LADDER_TEST(int32, Prod)
LADDER_TEST(int32, Min)
LADDER_TEST(int32, Max)
LADDER_TEST(int32, BitAnd)
LADDER_TEST(int32, BitOr)
LADDER_TEST(uint32, Sum)
LADDER_TEST(uint32, Prod)
LADDER_TEST(uint32, Min)
LADDER_TEST(uint32, Max)
LADDER_TEST(uint32, BitAnd)
LADDER_TEST(uint32, BitOr)
LADDER_TEST(int64, Sum)
LADDER_TEST(int64, Prod)
LADDER_TEST(int64, Min)
LADDER_TEST(int64, Max)
LADDER_TEST(int64, BitAnd)
LADDER_TEST(int64, BitOr)
LADDER_TEST(float, Sum)
LADDER_TEST(float, Prod)
LADDER_TEST(float, Min)
LADDER_TEST(float, Max)
LADDER_TEST(double, Sum)
LADDER_TEST(double, Prod)
LADDER_TEST(double, Min)
LADDER_TEST(double, Max)

TEST(LadderDriver, FloatProductsAreExactWhenEveryPartialIs) {
  FASTREDUCE_REQUIRE_GPU();
  // +-1 everywhere but 20 twos and 5 halves: every partial product is exact, the result is +-2^15.
  const std::size_t n = quick() ? 65537 : (std::size_t(1) << 24) + 3;
  std::vector<float> host(n, 1.0f);
  for (std::size_t i = 0; i < n; i += 3) host[i] = -1.0f;
  for (int k = 0; k < 25; ++k) host[(std::size_t(k) * 2654435761u) % n] = k < 20 ? 2.0f : 0.5f;
  double expected = 1.0;
  for (float x : host) expected *= x;
  DeviceBuffer<float> in(n), out(1);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  lad::Workspace workspace;
  for (const lad::Rung& rung : lad::rungs()) {
    for (unsigned block : {32u, 256u, 1024u}) {
      out.poison();
      ASSERT_EQ((lad::run<float, fr::Prod>(rung, in.get(), out.get(), n, block, workspace, 0, lad::device_limits(0, block))),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(double(read_back(out.get())), expected) << "rung " << rung.id << " block " << block;
    }
  }
}

TEST(LadderDriver, LevelsWiderThanTheGridLimitAreSplit) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 1000003;
  DeviceBuffer<std::int64_t> in(n), out(1);
  CUDA_OK(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed));
  const auto host = fr::bench::to_host(in.get(), n);
  const auto expected = fr::reference::reduce(host.data(), n, fr::Sum{});
  lad::Workspace workspace;
  lad::Limits limits = lad::device_limits(0, 64);
  limits.max_grid_x = 7;  // forces many launches per level
  for (const char* id : {"1", "4", "6", "8f4", "8f64"}) {
    out.poison();
    ASSERT_EQ((lad::run<std::int64_t, fr::Sum>(*lad::find_rung(id), in.get(), out.get(), n, 64, workspace, 0, limits)), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(read_back(out.get()), expected) << "rung " << id;
  }
}

TEST(LadderDriver, BadArgumentsWriteNothing) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> in(100), out(1);
  lad::Workspace workspace;
  const lad::Limits limits = lad::device_limits(0, 256);
  const lad::Rung& rung = *lad::find_rung("6");
  out.poison();
  const float poisoned = read_back(out.get());
  EXPECT_EQ((lad::run<float, fr::Sum>(rung, nullptr, out.get(), 100, 256, workspace, 0, limits)), cudaErrorInvalidValue);
  EXPECT_EQ((lad::run<float, fr::Sum>(rung, in.get(), out.get(), 100, 48, workspace, 0, limits)), cudaErrorInvalidValue);
  EXPECT_EQ((lad::run<float, fr::Sum>(rung, in.get(), nullptr, 100, 256, workspace, 0, limits)), cudaErrorInvalidValue);
  std::vector<float> host(100, 1.0f);
  EXPECT_EQ((lad::run<float, fr::Sum>(rung, host.data(), out.get(), 100, 256, workspace, 0, limits)),
            cudaErrorInvalidDevicePointer);
  const lad::Rung& one_kernel = *lad::find_rung("12");
  EXPECT_EQ((lad::run<float, fr::Sum>(one_kernel, nullptr, out.get(), 100, 256, workspace, 0, limits)), cudaErrorInvalidValue);
  EXPECT_EQ((lad::run<float, fr::Sum>(one_kernel, host.data(), out.get(), 100, 256, workspace, 0, limits)),
            cudaErrorInvalidDevicePointer);
  EXPECT_EQ((lad::read_bound<float, fr::Sum>(nullptr, out.get(), 100, 0)), cudaErrorInvalidValue);
  EXPECT_EQ((lad::read_bound<float, fr::Sum>(in.get(), nullptr, 100, 0)), cudaErrorInvalidValue);
  EXPECT_EQ((lad::read_bound<float, fr::Sum>(host.data(), out.get(), 100, 0)), cudaErrorInvalidDevicePointer);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(same_bits(read_back(out.get()), poisoned));
}

TEST(LadderDriver, MoreThanTwoToThe32Elements) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 37;
  std::size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  if (free_bytes < n * sizeof(std::int32_t) + (std::size_t(2) << 30)) GTEST_SKIP() << "needs 18 GB of GPU memory";
  DeviceBuffer<std::int32_t> in(n), out(2);
  CUDA_OK(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed));
  std::size_t cub_bytes = 0;
  CUDA_OK((fr::bench::cub_reduce<std::int32_t, fr::Sum>(nullptr, cub_bytes, in.get(), out.get() + 1, n, 0)));
  DeviceBuffer<char> cub_temp(cub_bytes);
  CUDA_OK((fr::bench::cub_reduce<std::int32_t, fr::Sum>(cub_temp.get(), cub_bytes, in.get(), out.get() + 1, n, 0)));
  CUDA_OK(cudaDeviceSynchronize());
  const std::int32_t expected = read_back(out.get() + 1);
  lad::Workspace workspace;
  for (const char* id : {"7", "8f16", "9", "11", "12", "12c", "13", "13t", "14"}) {
    out.poison();
    const lad::Limits limits = lad::device_limits(0, 256);
    ASSERT_EQ((lad::run<std::int32_t, fr::Sum>(*lad::find_rung(id), in.get(), out.get(), n, 256, workspace, 0, limits)), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(read_back(out.get()), expected) << "rung " << id;
  }
  out.poison();
  ASSERT_EQ((lad::read_bound<std::int32_t, fr::Sum>(in.get(), out.get(), n, 0)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(read_back(out.get()), expected) << "read-bound";
}

// The vector rungs (11-14) cut the input at the first 16-byte boundary: every offset of the
// pointer, every size class, every block size.
template <class T, class Op>
void check_misaligned() {
  FASTREDUCE_REQUIRE_GPU();
  int device = 0;
  cudaGetDevice(&device);
  const std::vector<std::size_t> sizes = {1, 3, 7, 33, 4099, quick() ? 65541 : (std::size_t(1) << 20) + 5};
  const std::size_t largest = sizes.back() + 4;
  DeviceBuffer<T> in(largest), out(1);
  CUDA_OK(fr::bench::fill_random(in.get(), largest, test_seed(), fr::bench::distribution_for(Op::name)));
  const std::vector<T> all = fr::bench::to_host(in.get(), largest);
  lad::Workspace workspace;
  for (std::size_t offset = 1; offset < 16 / sizeof(T); ++offset) {
    for (std::size_t n : sizes) {
      long double expected = 0, scale = 0;
      if constexpr (std::is_floating_point_v<T> && std::is_same_v<Op, fr::Sum>) {
        expected = fr::reference::compensated_sum(all.data() + offset, n);
        scale = fr::reference::absolute_sum(all.data() + offset, n);
      } else {
        expected = static_cast<long double>(fr::reference::reduce(all.data() + offset, n, Op{}));
      }
      for (const char* id : {"11", "12", "12c", "13", "13t", "14"}) {
        for (unsigned block : {32u, 256u, 1024u}) {
          const lad::Rung& rung = *lad::find_rung(id);
          const lad::Limits limits = lad::device_limits(device, block);
          out.poison();
          ASSERT_EQ((lad::run<T, Op>(rung, in.get() + offset, out.get(), n, block, workspace, 0, limits)), cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          const T got = read_back(out.get());
          if constexpr (std::is_floating_point_v<T> && std::is_same_v<Op, fr::Sum>) {
            const long double bound = lad::error_depth(rung, n, block, limits) * std::numeric_limits<T>::epsilon() * scale;
            ASSERT_LE(std::fabs(static_cast<long double>(got) - expected), bound)
                << "rung " << id << " block " << block << " n " << n << " offset " << offset;
          } else {
            ASSERT_EQ(got, static_cast<T>(expected)) << "rung " << id << " block " << block << " n " << n << " offset " << offset;
          }
        }
      }
    }
  }
}

TEST(LadderVectors, MisalignedFloatSum) { check_misaligned<float, fr::Sum>(); }
TEST(LadderVectors, MisalignedDoubleSum) { check_misaligned<double, fr::Sum>(); }
TEST(LadderVectors, MisalignedInt32Max) { check_misaligned<std::int32_t, fr::Max>(); }
TEST(LadderVectors, MisalignedInt64Sum) { check_misaligned<std::int64_t, fr::Sum>(); }

// Infinity and NaN anywhere (head, body, tail) reach the result of every rung: the tensor-core
// rung splits a float into two tf32 terms, and must not turn an infinity into inf - inf.
template <class T>
void check_non_finite() {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 100003;
  const T inf = std::numeric_limits<T>::infinity();
  struct Case {
    std::size_t at;
    T value;
    T second;  // placed at n - 1 (0: nothing)
    bool nan;
  };
  const Case cases[] = {{1, inf, 0, false}, {n / 2, -inf, 0, false}, {n - 2, std::numeric_limits<T>::max(), 0, false},
                        {7, inf, -inf, true}, {n / 3, std::numeric_limits<T>::quiet_NaN(), 0, true}};
  DeviceBuffer<T> in(n), out(1);
  lad::Workspace workspace;
  for (const Case& c : cases) {
    std::vector<T> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = T((i % 7) + 1);  // positive: the sum stays finite
    host[c.at] = c.value;
    if (c.second != 0) host[n - 1] = c.second;
    CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    for (const lad::Rung& rung : lad::rungs()) {
      out.poison();
      ASSERT_EQ((lad::run<T, fr::Sum>(rung, in.get(), out.get(), n, 256, workspace, 0, lad::device_limits(0, 256))), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const T got = read_back(out.get());
      if (c.nan) {
        EXPECT_TRUE(std::isnan(got)) << "rung " << rung.id << " at " << c.at << " got " << got;
      } else if (std::isinf(c.value)) {
        EXPECT_EQ(got, c.value) << "rung " << rung.id << " at " << c.at;
      } else {
        // max() plus small integers: finite, within one rounding of max() (no overflow on the way).
        EXPECT_TRUE(std::isfinite(got)) << "rung " << rung.id << " got " << got;
      }
    }
  }
}

TEST(LadderVectors, NonFiniteFloatSums) { check_non_finite<float>(); }
TEST(LadderVectors, NonFiniteDoubleSums) { check_non_finite<double>(); }
