// fastreduce::reduce / reduce_async: every type x op x edge size x alignment, fast mode, each
// path and the boundaries between them, bad inputs, streams, and the blocking API's cache.
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "baselines.hpp"
#include "fastreduce/detail/policy.hpp"
#include "fastreduce/fastreduce.cuh"
#include "gpu_test.hpp"
#include "reference.hpp"
#include "timing.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;
using namespace fastreduce::testing;

namespace {

template <class T, class Op>
using Acc = fr::acc_t<T, Op>;

template <class T>
constexpr double epsilon_of() {
  using A = fr::acc_t<T, fr::Sum>;
  return std::numeric_limits<A>::epsilon();
}

// A kernel of this test binary: compiled for the same architectures as the library.
__global__ void compiled_arch_probe() {}

// The library's code was compiled for sm_90 or later and runs on such a device: the Hopper paths
// (bulk copies, programmatic dependent launch) are expected.
bool hopper_code_runs() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, compiled_arch_probe) == cudaSuccess && attributes.ptxVersion >= 90 &&
         device_major() >= 9;
}

// Runs reduce_async with temp storage sized by the query; returns the result.
template <class T, class Op>
Acc<T, Op> run_async(const T* in, std::size_t n, const fr::Options& opt = {}, cudaStream_t stream = 0) {
  std::size_t bytes = 0;
  EXPECT_EQ((fr::reduce_async<T, Op>(nullptr, bytes, in, nullptr, n, Op{}, stream, opt)), cudaSuccess);
  EXPECT_GT(bytes, 0u);
  DeviceBuffer<char> temp(bytes);
  DeviceBuffer<Acc<T, Op>> out(1);
  out.poison();
  EXPECT_EQ((fr::reduce_async<T, Op>(temp.get(), bytes, in, out.get(), n, Op{}, stream, opt)), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return read_back(out.get());
}

// Checks a result against the CPU reference: exact for integers, min/max and sums of
// integer-valued data (exact_sum); for other floating-point sums within depth * eps * sum|x|,
// with `depth` the summation tree's (the route's); for products within (n - 1) * eps relative.
template <class T, class Op>
void expect_matches(const std::vector<T>& host, std::size_t offset, std::size_t n, Acc<T, Op> got, bool exact_sum,
                    std::size_t depth, const char* what) {
  using A = Acc<T, Op>;
  const T* data = host.data() + offset;
  if constexpr (std::is_floating_point_v<A> && (std::is_same_v<Op, fr::Sum> || std::is_same_v<Op, fr::Prod>)) {
    const long double expected = std::is_same_v<Op, fr::Sum> ? fr::reference::compensated_sum(data, n)
                                                             : fr::reference::reduce(data, n, Op{});
    if (exact_sum && std::is_same_v<Op, fr::Sum>) {
      EXPECT_EQ(static_cast<long double>(got), expected) << what << " n=" << n << " offset=" << offset;
      return;
    }
    const long double scale = std::is_same_v<Op, fr::Sum> ? fr::reference::absolute_sum(data, n) : std::fabs(expected);
    // Near underflow a product keeps no relative accuracy at all: the smallest normal is allowed.
    const double chain = std::is_same_v<Op, fr::Sum> ? double(depth) : double(std::max<std::size_t>(n, 1) - 1);
    EXPECT_LE(std::fabs(static_cast<long double>(got) - expected),
              chain * epsilon_of<T>() * scale + std::numeric_limits<A>::min())
        << what << " n=" << n << " offset=" << offset << " depth " << depth << " got " << double(got) << " want "
        << double(expected);
  } else {
    const A expected = fr::reference::reduce(data, n, Op{});
    EXPECT_TRUE(got == expected || (std::isnan(double(got)) && std::isnan(double(expected))))
        << what << " n=" << n << " offset=" << offset << " got " << double(got) << " want " << double(expected);
  }
}

// The data a check of Op uses: sums get whole numbers, exact in every summation order (1..15 up
// to 2^20 elements, so a lost element always changes the sum; +-1..+-15 above, see data.cu).
template <class Op>
fr::bench::Distribution distribution_of(std::size_t n) {
  if constexpr (std::is_same_v<Op, fr::Sum>) {
    return n <= (std::size_t(1) << 20) ? fr::bench::Distribution::SmallIntegers
                                       : fr::bench::Distribution::SignedSmallIntegers;
  } else {
    return fr::bench::distribution_for(Op::name);
  }
}

// Random integers make some reductions saturate: and/or of many values reach 0 or all ones,
// and 8- and 16-bit Min and Max reach the type's extremes, so a lost element would go unnoticed.
// For those, the data are whole numbers 1..15 with one element, at a random place, that alone
// decides the result.
template <class T, class Op>
inline constexpr bool kPlanted =
    std::is_integral_v<T> && (std::is_same_v<Op, fr::BitAnd> || std::is_same_v<Op, fr::BitOr> ||
                              (sizeof(T) <= 2 && (std::is_same_v<Op, fr::Min> || std::is_same_v<Op, fr::Max>)));

template <class T, class Op>
void plant_deciding_element(std::vector<T>& host, std::size_t offset, std::size_t n, std::uint64_t seed) {
  if (n == 0) return;
  const std::size_t at = offset + seed % n;
  if constexpr (std::is_same_v<Op, fr::Min>) host[at] = T(0);           // below 1..15
  else if constexpr (std::is_same_v<Op, fr::Max>) host[at] = T(100);    // above 1..15
  else if constexpr (std::is_same_v<Op, fr::BitOr>) host[at] = T(0x40);  // the only bit 6
  else {                                                                 // BitAnd: the only one without bit 6
    for (std::size_t i = offset; i < offset + n; ++i) host[i] = T(host[i] | 0x40);
    host[at] = T(0x0F);
  }
}

template <class T, class Op>
void check_engine(const std::vector<std::size_t>& sizes = edge_sizes(), const fr::Options& opt = {}) {
  FASTREDUCE_REQUIRE_GPU();
  // Every element offset from a 16-byte boundary: heads of 0 to 16/sizeof(T) - 1 elements.
  std::vector<std::size_t> offsets;
  for (std::size_t o = 0; o < 16 / sizeof(T); ++o) {
    if (!quick() || o == 0 || o == 1 || o + 1 == 16 / sizeof(T)) offsets.push_back(o);
  }
  for (std::size_t n : sizes) {
    for (std::size_t offset : offsets) {
      const std::size_t total = n + offset;
      DeviceBuffer<T> in(total);
      ASSERT_NE(in.get(), nullptr) << "allocating " << total << " elements";
      const std::uint64_t seed = test_seed();
      const auto dist = kPlanted<T, Op> ? fr::bench::Distribution::SmallIntegers : distribution_of<Op>(n);
      ASSERT_EQ(fr::bench::fill_random(in.get(), total, seed, dist, std::is_same_v<Op, fr::BitAnd>), cudaSuccess);
      std::vector<T> host = fr::bench::to_host(in.get(), total);
      if constexpr (kPlanted<T, Op>) {
        plant_deciding_element<T, Op>(host, offset, n, seed);
        CUDA_OK(cudaMemcpy(in.get(), host.data(), total * sizeof(T), cudaMemcpyHostToDevice));
      }
      const eng::Route route = route_of<T, Op>(in.get() + offset, n, opt);
      expect_matches<T, Op>(host, offset, n, run_async<T, Op>(in.get() + offset, n, opt), std::is_same_v<Op, fr::Sum>,
                            route.depth, eng::path_name(route.path));
      if (offset == 1 && (n == 257 || n == 65537)) {
        expect_matches<T, Op>(host, offset, n, fr::reduce(in.get() + offset, n, Op{}, opt), std::is_same_v<Op, fr::Sum>,
                              route.depth, "reduce");
      }
    }
  }
}

}  // namespace

#define ENGINE_TEST(Name, Type, Op) \
  TEST(Engine, Name##_##Op) { check_engine<Type, fr::Op>(); }
ENGINE_TEST(int32, std::int32_t, Sum)
ENGINE_TEST(int32, std::int32_t, Prod)
ENGINE_TEST(int32, std::int32_t, Min)
ENGINE_TEST(int32, std::int32_t, Max)
ENGINE_TEST(int32, std::int32_t, BitAnd)
ENGINE_TEST(int32, std::int32_t, BitOr)
ENGINE_TEST(int32, std::int32_t, BitXor)
ENGINE_TEST(uint32, std::uint32_t, Sum)
ENGINE_TEST(uint32, std::uint32_t, Min)
ENGINE_TEST(uint32, std::uint32_t, BitXor)
ENGINE_TEST(int64, std::int64_t, Sum)
ENGINE_TEST(int64, std::int64_t, Prod)
ENGINE_TEST(int64, std::int64_t, Max)
ENGINE_TEST(int64, std::int64_t, BitAnd)
ENGINE_TEST(uint64, std::uint64_t, Sum)
ENGINE_TEST(uint64, std::uint64_t, Min)
ENGINE_TEST(uint64, std::uint64_t, BitOr)
ENGINE_TEST(int8, std::int8_t, Sum)
ENGINE_TEST(int8, std::int8_t, Prod)
ENGINE_TEST(int8, std::int8_t, Min)
ENGINE_TEST(int8, std::int8_t, BitXor)
ENGINE_TEST(uint8, std::uint8_t, Sum)
ENGINE_TEST(uint8, std::uint8_t, Max)
ENGINE_TEST(uint8, std::uint8_t, BitAnd)
ENGINE_TEST(int16, std::int16_t, Sum)
ENGINE_TEST(int16, std::int16_t, Max)
ENGINE_TEST(int16, std::int16_t, BitOr)
ENGINE_TEST(uint16, std::uint16_t, Sum)
ENGINE_TEST(uint16, std::uint16_t, Prod)
ENGINE_TEST(uint16, std::uint16_t, Min)
ENGINE_TEST(float, float, Sum)
ENGINE_TEST(float, float, Prod)
ENGINE_TEST(float, float, Min)
ENGINE_TEST(float, float, Max)
ENGINE_TEST(double, double, Sum)
ENGINE_TEST(double, double, Prod)
ENGINE_TEST(double, double, Min)
ENGINE_TEST(double, double, Max)
ENGINE_TEST(half, __half, Sum)
ENGINE_TEST(half, __half, Min)
ENGINE_TEST(half, __half, Max)
ENGINE_TEST(bfloat16, __nv_bfloat16, Sum)
ENGINE_TEST(bfloat16, __nv_bfloat16, Prod)
ENGINE_TEST(bfloat16, __nv_bfloat16, Max)

// Every standard integer type a C++ program has reduces through the type of its size and
// signedness, with the accumulator the header documents.
template <class T, class S>
void check_integer_type() {
  static_assert(std::is_same_v<fr::storage_t<T>, S>);
  const std::size_t n = 100003;
  DeviceBuffer<S> in(n + 1);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n + 1, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const std::vector<S> stored = fr::bench::to_host(in.get(), n + 1);
  std::vector<T> host(n + 1);
  std::memcpy(host.data(), stored.data(), (n + 1) * sizeof(T));
  const T* d = reinterpret_cast<const T*>(in.get()) + 1;  // misaligned by one element, too
  EXPECT_EQ(fr::reduce(d, n), fr::reference::reduce(host.data() + 1, n, fr::Sum{}));
  EXPECT_EQ(fr::reduce(d, n, fr::Min{}), fr::reference::reduce(host.data() + 1, n, fr::Min{}));
  EXPECT_EQ(fr::reduce(d, n, fr::Max{}), fr::reference::reduce(host.data() + 1, n, fr::Max{}));
  EXPECT_EQ(fr::reduce(d, n, fr::BitXor{}), fr::reference::reduce(host.data() + 1, n, fr::BitXor{}));
  // Products of odd numbers stay odd (random integers would give 0 after 64 factors of two).
  ASSERT_EQ(fr::bench::fill_random(in.get(), n + 1, test_seed(), fr::bench::Distribution::NearOne), cudaSuccess);
  const std::vector<S> odd = fr::bench::to_host(in.get(), n + 1);
  std::memcpy(host.data(), odd.data(), (n + 1) * sizeof(T));
  EXPECT_EQ(fr::reduce(d, n, fr::Prod{}), fr::reference::reduce(host.data() + 1, n, fr::Prod{}));
  static_assert(std::is_same_v<decltype(fr::reduce(d, n, fr::Max{})), T>, "Min, Max and bitwise ops keep the type");
  static_assert(std::is_same_v<decltype(fr::reduce(d, n)), std::conditional_t<(sizeof(T) < 4), std::int64_t, T>>);
}

TEST(Engine, EveryStandardIntegerType) {
  FASTREDUCE_REQUIRE_GPU();
  check_integer_type<signed char, std::int8_t>();
  check_integer_type<unsigned char, std::uint8_t>();
  check_integer_type<char, std::conditional_t<std::is_signed_v<char>, std::int8_t, std::uint8_t>>();
  check_integer_type<short, std::int16_t>();
  check_integer_type<unsigned short, std::uint16_t>();
  check_integer_type<int, std::int32_t>();
  check_integer_type<unsigned, std::uint32_t>();
  check_integer_type<long, fr::storage_t<long>>();
  check_integer_type<unsigned long, fr::storage_t<unsigned long>>();
  check_integer_type<long long, std::int64_t>();
  check_integer_type<unsigned long long, std::uint64_t>();
}

// A mask's sum counts its true values; its Min is "all", its Max "any", its xor the parity.
TEST(Engine, BoolSumsCountAndMinMaxAreAllAndAny) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000), (std::size_t(1) << 22) + 5}) {
    for (std::size_t offset : {0u, 3u}) {
      DeviceBuffer<bool> in(n + offset);
      ASSERT_EQ(fr::bench::fill_random(in.get(), n + offset, test_seed(), fr::bench::Distribution::Positive), cudaSuccess);
      const auto host = fr::bench::to_host(in.get(), n + offset);
      std::int64_t trues = 0;
      for (std::size_t i = offset; i < n + offset; ++i) trues += host[i];
      const bool* d = in.get() + offset;
      const std::string what = "n=" + std::to_string(n) + " offset=" + std::to_string(offset);
      EXPECT_EQ(fr::reduce(d, n), trues) << what;
      EXPECT_EQ(fr::reduce(d, n, fr::Min{}), trues == std::int64_t(n)) << what;
      EXPECT_EQ(fr::reduce(d, n, fr::Max{}), trues > 0) << what;
      EXPECT_EQ(fr::reduce(d, n, fr::BitXor{}), trues % 2 == 1) << what;
      EXPECT_EQ(fr::reduce(d, n, fr::BitAnd{}), trues == std::int64_t(n)) << what;
      EXPECT_EQ(fr::reduce(d, n, fr::BitOr{}), trues > 0) << what;
      EXPECT_EQ(fr::reduce(d, n, fr::Prod{}), trues == std::int64_t(n) ? 1 : 0) << what;
      // Through reduce_async too: the byte written is a valid bool (0 or 1), also for n = 0.
      const bool all = run_async<bool, fr::Min>(d, n);
      unsigned char byte = 0;
      std::memcpy(&byte, &all, 1);
      EXPECT_EQ(byte, trues == std::int64_t(n) ? 1 : 0) << what;
    }
  }
  // One value that alone decides all, any and the product: every element counts.
  for (std::size_t n : {std::size_t(1000), (std::size_t(1) << 22) + 5}) {
    for (bool background : {true, false}) {
      std::vector<unsigned char> bytes(n, background ? 1 : 0);
      const std::size_t at = test_seed() % n;
      bytes[at] = background ? 0 : 1;
      DeviceBuffer<bool> in(n);
      CUDA_OK(cudaMemcpy(in.get(), bytes.data(), n, cudaMemcpyHostToDevice));
      const std::string what = "n=" + std::to_string(n) + " the only " + (background ? "false" : "true") + " at " +
                               std::to_string(at);
      EXPECT_EQ(fr::reduce(in.get(), n, fr::Min{}), false) << what;
      EXPECT_EQ(fr::reduce(in.get(), n, fr::Max{}), true) << what;
      EXPECT_EQ(fr::reduce(in.get(), n, fr::BitAnd{}), false) << what;
      EXPECT_EQ(fr::reduce(in.get(), n, fr::BitOr{}), true) << what;
      EXPECT_EQ(fr::reduce(in.get(), n, fr::Prod{}), 0) << what;
      EXPECT_EQ(fr::reduce(in.get(), n), background ? std::int64_t(n) - 1 : 1) << what;
    }
  }
}

// Random real-valued data: the error stays within depth * eps * sum|x| for the route's depth,
// a bound far below the sum itself (a wrong result such as 0 fails it).
TEST(Engine, RandomFloatSumsStayWithinTheDepthBound) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(1000003), std::size_t(1) << 24, (std::size_t(1) << 24) + 1}) {
    for (auto dist : {fr::bench::Distribution::Positive, fr::bench::Distribution::Signed}) {
      DeviceBuffer<float> in(n);
      ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), dist), cudaSuccess);
      const auto host = fr::bench::to_host(in.get(), n);
      const eng::Route route = route_of<float, fr::Sum>(in.get(), n);
      EXPECT_GT(route.depth, 10u);
      EXPECT_LT(route.depth, 200u) << "a bound this loose could not fail";
      if (dist == fr::bench::Distribution::Positive) {
        const long double bound = route.depth * epsilon_of<float>() * fr::reference::absolute_sum(host.data(), n);
        EXPECT_LT(bound, fr::reference::compensated_sum(host.data(), n) / 1000) << "the bound must reject a wrong sum";
      }
      expect_matches<float, fr::Sum>(host, 0, n, run_async<float, fr::Sum>(in.get(), n), false, route.depth,
                                     dist == fr::bench::Distribution::Positive ? "positive" : "signed");
    }
  }
}

// Products whose every partial product is exact: +-1 everywhere but 30 twos and 10 halves, so
// any grouping stays within 2^-10 .. 2^30 and the result is exactly +-2^20.
template <class T>
void check_exact_product(std::size_t n) {
  std::vector<T> host(n, T(1.0f));
  std::uint64_t bits = test_seed();
  int negatives = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bits = bits * 6364136223846793005ull + 1442695040888963407ull;
    if ((bits >> 33) % 7 == 0) {
      host[i] = T(-1.0f);
      ++negatives;
    }
  }
  for (int k = 0; k < 40; ++k) {
    bits = bits * 6364136223846793005ull + 1442695040888963407ull;
    const std::size_t i = (bits >> 20) % n;
    if (static_cast<float>(host[i]) == -1.0f) --negatives;
    host[i] = k < 30 ? T(2.0f) : T(0.5f);
  }
  // Collisions may have replaced a two or a half: recount the exact expected power.
  int exponent = 0;
  negatives = 0;
  for (const T& x : host) {
    const float v = static_cast<float>(x);
    exponent += v == 2.0f ? 1 : v == 0.5f ? -1 : 0;
    negatives += v == -1.0f;
  }
  DeviceBuffer<T> in(n);
  ASSERT_EQ(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  const double expected = (negatives % 2 ? -1.0 : 1.0) * std::ldexp(1.0, exponent);
  EXPECT_EQ(double(run_async<T, fr::Prod>(in.get(), n)), expected) << n;
  EXPECT_EQ(double(run_async<T, fr::Prod>(in.get() + 1, n - 1)), expected / double(static_cast<float>(host[0]))) << n;
}

TEST(Engine, ProductsAreExactWhenEveryPartialIs) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(1000), std::size_t(65537), (std::size_t(1) << 24) + 1}) {
    check_exact_product<float>(n);
    check_exact_product<double>(n);
    check_exact_product<__nv_bfloat16>(n);
  }
}

TEST(Engine, IntegerResultsEqualCubs) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(1), std::size_t(1000003), (std::size_t(1) << 24) + 1}) {
    DeviceBuffer<std::int32_t> in(n), out(1);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    std::size_t bytes = 0;
    fr::bench::cub_reduce<std::int32_t, fr::Sum>(nullptr, bytes, in.get(), out.get(), n, 0);
    DeviceBuffer<char> temp(bytes);
    ASSERT_EQ((fr::bench::cub_reduce<std::int32_t, fr::Sum>(temp.get(), bytes, in.get(), out.get(), n, 0)), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ((run_async<std::int32_t, fr::Sum>(in.get(), n)), read_back(out.get())) << n;
  }
}

TEST(Engine, NanAndInfinityFollowIeee) {
  FASTREDUCE_REQUIRE_GPU();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (std::size_t n : {std::size_t(7), std::size_t(100000)}) {
    std::vector<float> host(n, 1.0f);
    host[n / 3] = nan;
    DeviceBuffer<float> in(n);
    cudaMemcpy(in.get(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    EXPECT_TRUE(std::isnan(run_async<float, fr::Max>(in.get(), n)));
    EXPECT_TRUE(std::isnan(run_async<float, fr::Min>(in.get(), n)));
    EXPECT_TRUE(std::isnan(run_async<float, fr::Sum>(in.get(), n)));
    EXPECT_TRUE(std::isnan(run_async<float, fr::Sum>(in.get(), n, {.mode = fr::Mode::Reproducible})));
    host[n / 3] = inf;
    cudaMemcpy(in.get(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    EXPECT_EQ((run_async<float, fr::Sum>(in.get(), n)), inf);
    EXPECT_EQ((run_async<float, fr::Max>(in.get(), n)), inf);
    EXPECT_EQ((run_async<float, fr::Sum>(in.get(), n, {.mode = fr::Mode::Reproducible})), inf);
    host[n / 2] = -inf;
    cudaMemcpy(in.get(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    EXPECT_TRUE(std::isnan(run_async<float, fr::Sum>(in.get(), n)));
    EXPECT_TRUE(std::isnan(run_async<float, fr::Sum>(in.get(), n, {.mode = fr::Mode::Reproducible})));
    EXPECT_EQ((run_async<float, fr::Min>(in.get(), n)), -inf);
  }
  // half: a NaN survives the widening to float.
  std::vector<__half> halves(1000, __float2half(2.0f));
  halves[999] = __float2half(nan);
  DeviceBuffer<__half> hin(1000);
  cudaMemcpy(hin.get(), halves.data(), 1000 * sizeof(__half), cudaMemcpyHostToDevice);
  EXPECT_TRUE(std::isnan(run_async<__half, fr::Max>(hin.get(), 1000)));
}

// A NaN among the few elements before the first 16-byte boundary (the head) or after the last
// whole vector or stage (the tail), which every path adds element by element.
template <class T>
void check_nan_in_head_and_tail(std::size_t n) {
  const std::size_t offset = 1;  // a head of 16 / sizeof(T) - 1 elements
  DeviceBuffer<T> in(n + offset);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n + offset, test_seed(), fr::bench::Distribution::SmallIntegers), cudaSuccess);
  const T nan = T(std::numeric_limits<float>::quiet_NaN());
  for (std::size_t at : {offset, offset + 1, n + offset - 1}) {  // first, second (head), last (tail)
    const T saved = fr::bench::to_host(in.get() + at, 1)[0];
    CUDA_OK(cudaMemcpy(in.get() + at, &nan, sizeof(T), cudaMemcpyHostToDevice));
    const T* d = in.get() + offset;
    const std::string where = "n=" + std::to_string(n) + " NaN at " + std::to_string(at - offset) + " path " +
                              eng::path_name(route_of<T, fr::Sum>(d, n).path);
    EXPECT_TRUE(std::isnan(double(run_async<T, fr::Sum>(d, n)))) << where;
    EXPECT_TRUE(std::isnan(double(run_async<T, fr::Max>(d, n)))) << where;
    EXPECT_TRUE(std::isnan(double(run_async<T, fr::Min>(d, n)))) << where;
    EXPECT_TRUE(std::isnan(double(run_async<T, fr::Sum>(d, n, {.mode = fr::Mode::Reproducible})))) << where;
    CUDA_OK(cudaMemcpy(in.get() + at, &saved, sizeof(T), cudaMemcpyHostToDevice));
  }
}

TEST(Engine, NanInTheHeadAndTailOfDoubleAndBfloat16) {
  FASTREDUCE_REQUIRE_GPU();
  const eng::ArchPolicy& arch = device_policy();
  std::vector<std::size_t> sizes = {5, 1003, (std::size_t(1) << 20) + 3, (std::size_t(1) << 23) + 5};
  if (!quick()) sizes.push_back(std::max(arch.bulk_min_bytes, std::size_t(128) << 20) / sizeof(double) + 9);
  for (std::size_t n : sizes) {
    check_nan_in_head_and_tail<double>(n);
    check_nan_in_head_and_tail<__nv_bfloat16>(n);
  }
}

TEST(Engine, RepeatedCallsGiveIdenticalBits) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 100003 : (std::size_t(1) << 24) + 7;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  std::size_t bytes = 0;
  fr::reduce_async<float, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{});
  DeviceBuffer<char> temp(bytes);
  DeviceBuffer<float> out(100);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, in.get(), out.get() + i, n, fr::Sum{})), cudaSuccess);
  }
  std::vector<float> results(100);
  ASSERT_EQ(cudaMemcpy(results.data(), out.get(), 100 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (float r : results) EXPECT_TRUE(same_bits(r, results[0]));
}

TEST(Engine, MaxBlocksFromOneUpGivesCorrectResults) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 3000017;
  DeviceBuffer<std::int64_t> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), n);
  const auto expected = fr::reference::reduce(host.data(), n, fr::Sum{});
  for (unsigned cap : {1u, 2u, 3u, 5u, 7u, 64u, 132u, 1000u, 100000u}) {
    EXPECT_LE(route_of<std::int64_t>(in.get(), n, {.max_blocks = cap}).grid, cap);
    EXPECT_EQ((run_async<std::int64_t, fr::Sum>(in.get(), n, {.max_blocks = cap})), expected) << cap;
  }
}

TEST(Engine, TwoStreamsAtOnce) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = (std::size_t(1) << 22) + 11;
  DeviceBuffer<std::int32_t> a(n), b(n), out(2);
  ASSERT_EQ(fr::bench::fill_random(a.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  ASSERT_EQ(fr::bench::fill_random(b.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const auto ha = fr::bench::to_host(a.get(), n);
  const auto hb = fr::bench::to_host(b.get(), n);
  cudaStream_t s1, s2;
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  std::size_t bytes = 0;
  fr::reduce_async<std::int32_t, fr::Sum>(nullptr, bytes, a.get(), nullptr, n, fr::Sum{});
  DeviceBuffer<char> t1(bytes), t2(bytes);
  for (int round = 0; round < 20; ++round) {
    out.poison();
    ASSERT_EQ((fr::reduce_async<std::int32_t, fr::Sum>(t1.get(), bytes, a.get(), out.get(), n, fr::Sum{}, s1)), cudaSuccess);
    ASSERT_EQ((fr::reduce_async<std::int32_t, fr::Sum>(t2.get(), bytes, b.get(), out.get() + 1, n, fr::Sum{}, s2)), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    EXPECT_EQ(read_back(out.get()), fr::reference::reduce(ha.data(), n, fr::Sum{}));
    EXPECT_EQ(read_back(out.get() + 1), fr::reference::reduce(hb.data(), n, fr::Sum{}));
  }
  // The blocking API from two host threads on two streams.
  std::int32_t ra = 0, rb = 0;
  std::thread ta([&] { ra = fr::reduce_on(s1, a.get(), n); });
  std::thread tb([&] { rb = fr::reduce_on(s2, b.get(), n); });
  ta.join();
  tb.join();
  EXPECT_EQ(ra, fr::reference::reduce(ha.data(), n, fr::Sum{}));
  EXPECT_EQ(rb, fr::reference::reduce(hb.data(), n, fr::Sum{}));
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// Options::finish_counter: a grid of several blocks finishes in its last block, one launch, up to
// the policy's bytes (above, the combine kernel as without it), with the bits of the combine
// kernel's route, and leaves the word 0 for the next call; on every path with partials (small and
// large loads; bulk copies, above the limit), at grids of every size (max_blocks), at every
// alignment, on one word reused by calls of different grids.
template <class T, class Op>
void check_finish_counter(const std::vector<std::size_t>& sizes, unsigned* counter) {
  const std::size_t limit = device_policy().self_finish_max_bytes;
  for (std::size_t n : sizes) {
    DeviceBuffer<T> in(n + 1);
    ASSERT_NE(in.get(), nullptr) << n;
    // Values whose float sums round differently in another order: a combine in any other order
    // than the kernel's would change the bits.
    const auto dist = std::is_floating_point_v<Acc<T, Op>> ? fr::bench::Distribution::Signed : distribution_of<Op>(n);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n + 1, test_seed(), dist), cudaSuccess);
    const std::vector<T> host = fr::bench::to_host(in.get(), n + 1);
    for (std::size_t offset : {std::size_t(0), std::size_t(1)}) {
      for (unsigned cap : {0u, 1u, 2u, 3u, 7u}) {
        const fr::Options plain{.max_blocks = cap};
        const fr::Options counted{.max_blocks = cap, .finish_counter = counter};
        const eng::Route two = route_of<T, Op>(in.get() + offset, n, plain);
        const eng::Route one = route_of<T, Op>(in.get() + offset, n, counted);
        EXPECT_EQ(one.path, two.path);
        EXPECT_EQ(one.grid, two.grid);
        const bool self = two.combine_kernel && n * sizeof(T) <= limit;
        EXPECT_EQ(one.last_block_combines, self) << n << " cap " << cap;
        EXPECT_EQ(one.combine_kernel, two.combine_kernel && !self);
        EXPECT_EQ(one.dependent_launch, two.dependent_launch && !self);
        EXPECT_EQ(one.depth, two.depth);
        const Acc<T, Op> a = run_async<T, Op>(in.get() + offset, n, plain);
        const Acc<T, Op> b = run_async<T, Op>(in.get() + offset, n, counted);
        EXPECT_TRUE(same_bits(a, b)) << eng::path_name(one.path) << " n=" << n << " offset " << offset << " cap " << cap
                                     << ": " << double(a) << " against " << double(b);
        expect_matches<T, Op>(host, offset, n, b, false, one.depth, "finish counter");
        EXPECT_EQ(read_back(counter), 0u) << "the word is left 0 (n=" << n << ", cap " << cap << ")";
      }
    }
  }
}

TEST(Engine, FinishCounterGivesOneLaunchWithTheSameBits) {
  FASTREDUCE_REQUIRE_GPU();
  const eng::ArchPolicy& arch = device_policy();
  DeviceBuffer<unsigned> counter(1);
  CUDA_OK(cudaMemset(counter.get(), 0, sizeof(unsigned)));
  const std::size_t past_one_block = arch.one_block_max_bytes / 4 + 5;
  // One block; small loads; large loads up to the limit (floats, where it lies above the small
  // blocks' sizes: sm_90) and past it (doubles).
  std::vector<std::size_t> sizes = {1000, past_one_block, (std::size_t(1) << 20) + 3, arch.small_max_bytes / 4 + 9,
                                    arch.self_finish_max_bytes / 8 + 1};
  if (!quick()) sizes.push_back((std::size_t(1) << 24) + 1);
  check_finish_counter<float, fr::Sum>(sizes, counter.get());
  check_finish_counter<double, fr::Sum>(sizes, counter.get());
  check_finish_counter<__nv_bfloat16, fr::Sum>(sizes, counter.get());
  check_finish_counter<std::int32_t, fr::Sum>(sizes, counter.get());
  check_finish_counter<float, fr::Max>({past_one_block, arch.small_max_bytes / 4 + 9}, counter.get());
  if (!quick() && arch.bulk_min_bytes > 0) {  // past the limit: the combine kernel, the word untouched
    const std::size_t bulk = arch.bulk_min_bytes / 4 + 3;
    const eng::Route route = route_of<float>(nullptr, bulk, {.finish_counter = counter.get()});
    EXPECT_EQ(route.path, hopper_code_runs() ? eng::Path::Bulk : eng::Path::Large);
    EXPECT_FALSE(route.last_block_combines);
    check_finish_counter<float, fr::Sum>({bulk}, counter.get());
  }
  // One word, calls of different grids back to back on one stream, no wait in between.
  const std::vector<std::size_t> mixed = {past_one_block, (std::size_t(1) << 22) + 1, 999, (std::size_t(1) << 20) + 3};
  const std::size_t longest = (std::size_t(1) << 22) + 1;
  DeviceBuffer<float> in(longest);
  ASSERT_EQ(fr::bench::fill_random(in.get(), longest, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  std::size_t bytes = 0;
  ASSERT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, bytes, in.get(), nullptr, longest, fr::Sum{})), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  constexpr int kCalls = 64;
  DeviceBuffer<float> out(kCalls);
  out.poison();
  for (int i = 0; i < kCalls; ++i) {
    std::size_t b = bytes;
    ASSERT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), b, in.get(), out.get() + i, mixed[i % mixed.size()],
                                                fr::Sum{}, 0, {.finish_counter = counter.get()})),
              cudaSuccess);
  }
  std::vector<float> got(kCalls);
  CUDA_OK(cudaMemcpy(got.data(), out.get(), kCalls * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCalls; ++i) {
    const std::size_t n = mixed[i % mixed.size()];
    EXPECT_TRUE(same_bits(got[i], run_async<float, fr::Sum>(in.get(), n))) << "call " << i << " n=" << n;
  }
  EXPECT_EQ(read_back(counter.get()), 0u);
  // The blocking API keeps a counter with its cached storage: its results have the same bits.
  for (std::size_t n : mixed) {
    EXPECT_TRUE(same_bits(fr::reduce(in.get(), n), run_async<float, fr::Sum>(in.get(), n))) << n;
    EXPECT_TRUE(same_bits(fr::reduce(in.get() + 1, n - 1, fr::Max{}), run_async<float, fr::Max>(in.get() + 1, n - 1)))
        << n;
  }
}

// The counter is checked like every other pointer, before anything is enqueued.
TEST(Engine, FinishCounterIsChecked) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = std::size_t(1) << 20;
  DeviceBuffer<float> in(n), out(1);
  DeviceBuffer<unsigned> counter(2);
  CUDA_OK(cudaMemset(counter.get(), 0, 2 * sizeof(unsigned)));
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  std::size_t bytes = 0;
  ASSERT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{})), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  out.poison();
  const float poisoned = read_back(out.get());
  auto* odd = reinterpret_cast<unsigned*>(reinterpret_cast<char*>(counter.get()) + 2);
  EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, in.get(), out.get(), n, fr::Sum{}, 0,
                                              {.finish_counter = odd})),
            cudaErrorMisalignedAddress);
  unsigned host_word = 0;
  for (std::size_t m : {std::size_t(100), n}) {  // one block (the counter unused) and several: one contract
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, in.get(), out.get(), m, fr::Sum{}, 0,
                                                {.finish_counter = &host_word})),
              cudaErrorInvalidDevicePointer);
  }
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_TRUE(same_bits(read_back(out.get()), poisoned));
  EXPECT_EQ(host_word, 0u);
  try {
    (void)fr::reduce(in.get(), n, fr::Sum{}, {.finish_counter = &host_word});
    FAIL() << "no exception for a host counter";
  } catch (const fr::Error& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidDevicePointer);
    EXPECT_NE(std::string(e.what()).find("finish_counter"), std::string::npos) << e.what();
  }
}

TEST(Engine, BadInputsGiveTheDocumentedErrorAndWriteNothing) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(1000), std::size_t(1) << 22}) {  // one block, and partials with a combine
    DeviceBuffer<float> in(n + 1), out(2);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n + 1, test_seed(), fr::bench::Distribution::SmallIntegers), cudaSuccess);
    std::size_t bytes = 0;
    ASSERT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{})), cudaSuccess);
    DeviceBuffer<char> temp(bytes + 16);
    out.poison();
    const float poisoned = read_back(out.get());
    std::vector<float> host(n, 1.0f);
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, nullptr, out.get(), n, fr::Sum{})), cudaErrorInvalidValue);
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, host.data(), out.get(), n, fr::Sum{})),
              cudaErrorInvalidDevicePointer);
    char* misaligned_temp = static_cast<char*>(static_cast<void*>(temp.get())) + 8;
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(misaligned_temp, bytes, in.get(), out.get(), n, fr::Sum{})),
              cudaErrorMisalignedAddress);
    std::size_t small = bytes - 1;
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), small, in.get(), out.get(), n, fr::Sum{})), cudaErrorInvalidValue);
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, in.get(), nullptr, n, fr::Sum{})), cudaErrorInvalidValue);
    const float* odd = reinterpret_cast<const float*>(reinterpret_cast<const char*>(in.get()) + 1);
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, odd, out.get(), n, fr::Sum{})), cudaErrorMisalignedAddress);
    // d_out misaligned for its type, or host memory.
    float* odd_out = reinterpret_cast<float*>(reinterpret_cast<char*>(out.get()) + 2);
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, in.get(), odd_out, n, fr::Sum{})),
              cudaErrorMisalignedAddress);
    float host_out = -7.0f;
    EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, in.get(), &host_out, n, fr::Sum{})),
              cudaErrorInvalidDevicePointer);
    EXPECT_EQ((fr::reduce_async<float, fr::Prod>(temp.get(), bytes, in.get(), out.get(), n, fr::Prod{}, 0,
                                                 {.mode = fr::Mode::Reproducible})),
              cudaErrorNotSupported);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(same_bits(read_back(out.get()), poisoned));
    EXPECT_TRUE(same_bits(read_back(out.get() + 1), poisoned));
    EXPECT_EQ(host_out, -7.0f);
  }
  // The blocking API throws fastreduce::Error naming the argument.
  std::vector<float> host(1000, 1.0f);
  try {
    (void)fr::reduce(host.data(), host.size());
    FAIL() << "no exception for a host pointer";
  } catch (const fr::Error& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidDevicePointer);
    EXPECT_NE(std::string(e.what()).find("d_in"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)fr::reduce(static_cast<const float*>(nullptr), 5), fr::Error);
  // n = 0 with a null pointer is fine: the identity.
  EXPECT_EQ(fr::reduce(static_cast<const float*>(nullptr), 0), 0.0f);
  EXPECT_EQ(fr::reduce(static_cast<const std::int32_t*>(nullptr), 0, fr::Min{}), std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(fr::reduce(static_cast<const bool*>(nullptr), 0, fr::Min{}), true);
}

TEST(Engine, MoreThanTwoToThe32Elements) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 37;
  std::size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  if (free_bytes < n * sizeof(float) + (std::size_t(2) << 30)) GTEST_SKIP() << "needs 18 GB of GPU memory";
  DeviceBuffer<float> in(n);
  // +-1..+-15: every partial sum stays far below 2^24, so the float sum is exact (data.cu).
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::SignedSmallIntegers), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), n);
  long long expected = 0;
  for (float x : host) expected += static_cast<long long>(x);
  EXPECT_EQ((run_async<float, fr::Sum>(in.get(), n)), float(expected));
  EXPECT_EQ((run_async<float, fr::Sum>(in.get() + 1, n - 1, {.mode = fr::Mode::Reproducible})),
            float(expected - static_cast<long long>(host[0])));
  // Integers are exact: the same memory as int32, against CUB.
  const auto* as_int = reinterpret_cast<const std::int32_t*>(in.get());
  DeviceBuffer<std::int32_t> int_out(1);
  std::size_t bytes = 0;
  fr::bench::cub_reduce<std::int32_t, fr::Sum>(nullptr, bytes, as_int, int_out.get(), n, 0);
  DeviceBuffer<char> int_temp(bytes);
  ASSERT_EQ((fr::bench::cub_reduce<std::int32_t, fr::Sum>(int_temp.get(), bytes, as_int, int_out.get(), n, 0)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ((run_async<std::int32_t, fr::Sum>(as_int, n)), read_back(int_out.get()));
}

// Either side of every size where the path changes, at every offset from a 16-byte boundary,
// with exact data: the route is the one the policy names, and the result is exact (a lost vector
// or stage changes it).
template <class T>
std::vector<std::size_t> policy_boundaries(bool with_bulk) {
  const eng::ArchPolicy& arch = device_policy();
  std::vector<std::size_t> sizes;
  std::vector<std::size_t> limits = {arch.one_block_max_bytes, arch.small_max_bytes};
  if (with_bulk && arch.bulk_min_bytes > 0) limits.push_back(arch.bulk_min_bytes);
  for (std::size_t bytes : limits) {
    const std::size_t n = bytes / sizeof(T);
    for (std::size_t m : {n - 1, n, n + 1, n + 16 / sizeof(T)}) sizes.push_back(m);
  }
  return sizes;
}

template <class T>
void expect_routes_at_boundaries() {
  const eng::ArchPolicy& arch = device_policy();
  auto path_at = [](std::size_t bytes) { return route_of<T>(nullptr, bytes / sizeof(T)).path; };
  EXPECT_EQ(path_at(arch.one_block_max_bytes), eng::Path::OneBlock);
  EXPECT_EQ(path_at(arch.one_block_max_bytes + 16), eng::Path::Small);
  EXPECT_EQ(path_at(arch.small_max_bytes), eng::Path::Small);
  EXPECT_EQ(path_at(arch.small_max_bytes + 16), eng::Path::Large);
  if (arch.bulk_min_bytes > 0) {
    EXPECT_EQ(path_at(arch.bulk_min_bytes - 16), eng::Path::Large);
    const bool bulk = sizeof(T) >= 4 && hopper_code_runs();
    EXPECT_EQ(path_at(arch.bulk_min_bytes), bulk ? eng::Path::Bulk : eng::Path::Large) << sizeof(T);
  }
  const eng::Route one = route_of<T>(nullptr, arch.one_block_max_bytes / sizeof(T));
  EXPECT_EQ(one.grid, 1u);
  EXPECT_FALSE(one.combine_kernel);
  const eng::Route many = route_of<T>(nullptr, arch.small_max_bytes / sizeof(T));
  EXPECT_GT(many.grid, 1u);
  EXPECT_TRUE(many.combine_kernel);
  EXPECT_EQ(many.dependent_launch, hopper_code_runs());
}

TEST(Engine, PolicyBoundaries) {
  FASTREDUCE_REQUIRE_GPU();
  expect_routes_at_boundaries<float>();
  expect_routes_at_boundaries<double>();
  expect_routes_at_boundaries<__nv_bfloat16>();
  expect_routes_at_boundaries<std::int8_t>();
  check_engine<float, fr::Sum>(policy_boundaries<float>(!quick()));
  check_engine<double, fr::Max>(policy_boundaries<double>(false));
  check_engine<std::int32_t, fr::Sum>(policy_boundaries<std::int32_t>(false));
  check_engine<__nv_bfloat16, fr::Sum>(policy_boundaries<__nv_bfloat16>(false));
  check_engine<std::uint8_t, fr::Sum>(policy_boundaries<std::uint8_t>(false));
}

TEST(Engine, LargeInputsTakeTheBulkCopyPath) {
  FASTREDUCE_REQUIRE_GPU();
  const eng::ArchPolicy& arch = device_policy();
  const std::size_t bulk_bytes = arch.bulk_min_bytes > 0 ? arch.bulk_min_bytes : std::size_t(128) << 20;
  // The head, the stages and the tail, for 4- and 8-byte types, integer and exact float data.
  const std::size_t n = bulk_bytes / sizeof(std::int32_t) + 12345;
  DeviceBuffer<std::int32_t> ints(n + 3);
  ASSERT_EQ(fr::bench::fill_random(ints.get(), n + 3, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const auto hi = fr::bench::to_host(ints.get(), n + 3);
  DeviceBuffer<float> floats(n + 3);
  ASSERT_EQ(fr::bench::fill_random(floats.get(), n + 3, test_seed(), fr::bench::Distribution::SignedSmallIntegers),
            cudaSuccess);
  const auto hf = fr::bench::to_host(floats.get(), n + 3);
  for (std::size_t offset : {0u, 1u, 3u}) {
    if (quick() && offset != 1) continue;  // under compute-sanitizer: one misaligned case
    const std::size_t m = n - offset * 1001;
    EXPECT_EQ(route_of<std::int32_t>(ints.get() + offset, m).path, hopper_code_runs() ? eng::Path::Bulk : eng::Path::Large);
    const auto expected = fr::reference::reduce(hi.data() + offset, m, fr::Sum{});
    EXPECT_EQ((run_async<std::int32_t, fr::Sum>(ints.get() + offset, m)), expected) << offset;
    EXPECT_EQ((run_async<std::int32_t, fr::Sum>(ints.get() + offset, m, {.max_blocks = 7})), expected) << offset;
    EXPECT_EQ((run_async<std::int32_t, fr::Max>(ints.get() + offset, m)), fr::reference::reduce(hi.data() + offset, m, fr::Max{}));
    const long double exact = fr::reference::compensated_sum(hf.data() + offset, m);
    EXPECT_EQ(static_cast<long double>(run_async<float, fr::Sum>(floats.get() + offset, m)), exact) << offset;
    EXPECT_EQ(static_cast<long double>(run_async<float, fr::Sum>(floats.get() + offset, m, {.max_blocks = 5})), exact);
  }
  const std::size_t nd = bulk_bytes / sizeof(double) + 777;
  DeviceBuffer<double> doubles(nd + 1);
  ASSERT_EQ(fr::bench::fill_random(doubles.get(), nd + 1, test_seed(), fr::bench::Distribution::SmallIntegers), cudaSuccess);
  const auto hd = fr::bench::to_host(doubles.get(), nd + 1);
  EXPECT_EQ((run_async<double, fr::Sum>(doubles.get() + 1, nd)), static_cast<double>(fr::reference::compensated_sum(hd.data() + 1, nd)));
}

// The blocking API keeps one buffer per device and stream: it grows with the largest request,
// serves several threads and streams, and release_cached_workspaces() frees it (later calls
// allocate again).
TEST(Engine, BlockingCallsCacheTheirStorageAndReleaseIt) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = (std::size_t(1) << 22) + 3;
  DeviceBuffer<double> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::SmallIntegers), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), n);
  auto exact = [&](std::size_t m) { return static_cast<double>(fr::reference::compensated_sum(host.data(), m)); };
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int round = 0; round < 2; ++round) {
    // Growing storage on one stream: one block (16 bytes), partials, reproducible rows.
    EXPECT_EQ(fr::reduce_on(stream, in.get(), 1000), exact(1000));
    EXPECT_EQ(fr::reduce_on(stream, in.get(), n), exact(n));
    EXPECT_EQ(fr::reduce_on(stream, in.get(), n, fr::Sum{}, {.mode = fr::Mode::Reproducible}), exact(n));
    EXPECT_EQ(fr::reduce(in.get(), n), exact(n));  // the default stream has a buffer of its own
    // Four threads on the same stream take turns with its buffer.
    std::vector<std::thread> threads;
    std::vector<double> results(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] { results[t] = fr::reduce_on(stream, in.get(), n - t); });
    }
    for (auto& thread : threads) thread.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(results[t], exact(n - t)) << t;
    fr::release_cached_workspaces();
    fr::release_cached_workspaces();  // twice is harmless
  }
  CUDA_OK(cudaStreamDestroy(stream));
  // A stream destroyed and another created (perhaps at the same address) still works.
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  EXPECT_EQ(fr::reduce_on(stream, in.get(), n), exact(n));
  CUDA_OK(cudaStreamDestroy(stream));
}

// The bench's interleaved timing: every contender gets its warm-up, then repetition r runs one
// batch of each, rotated by r and reversed every other round; the call index counts on over all
// calls; and each contender's time is its own (one that spins on the host is the slowest). It
// needs the GPU to itself: time-sliced between many processes, the two events of a batch can run
// back to back after the host's 200 us (scripts/gpu-check.sh runs it alone).
TEST(Bench, InterleavedTimingTakesTurnsAndKeepsEachContendersTime) {
  FASTREDUCE_REQUIRE_GPU();
  std::vector<std::pair<int, int>> log;  // (contender, call index), in the order of the calls
  std::vector<std::function<void(int)>> fns;
  for (int k = 0; k < 3; ++k) {
    fns.push_back([&log, k](int i) {
      log.emplace_back(k, i);
      if (k == 1) {  // about 200 us of host time per call, between the batch's two events
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
    });
  }
  const std::vector<int> calls{2, 1, 3};
  const int repetitions = 7;
  const auto timings = fr::bench::time_back_to_back_interleaved(fns, 0, calls, {.warmup = 1, .repetitions = repetitions});
  ASSERT_EQ(timings.size(), 3u);
  std::vector<std::pair<int, int>> expected;
  int call = 0;
  for (int k = 0; k < 3; ++k) expected.emplace_back(k, call++);
  for (int r = 0; r < repetitions; ++r) {
    const bool reversed = (r / 3) % 2 == 1;
    for (int j = 0; j < 3; ++j) {
      const int k = (r + (reversed ? 2 - j : j)) % 3;
      for (int c = 0; c < calls[k]; ++c) expected.emplace_back(k, call++);
    }
  }
  EXPECT_EQ(log, expected);
  EXPECT_GE(timings[1].median_us, 150.0);
  EXPECT_LT(timings[0].median_us, timings[1].median_us / 2);
  EXPECT_LT(timings[2].median_us, timings[1].median_us / 2);
}
