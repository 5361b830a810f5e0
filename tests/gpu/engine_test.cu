// fastreduce::reduce / reduce_async: every type x op x edge size x alignment, fast mode.
#include <cmath>
#include <limits>
#include <chrono>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "baselines.hpp"
#include "engine/policy.hpp"
#include "timing.hpp"
#include "fastreduce/fastreduce.cuh"
#include "gpu_test.hpp"
#include "reference/reference.hpp"

namespace fr = fastreduce;
using namespace fastreduce::testing;

namespace {

template <class T, class Op>
using Acc = fr::acc_t<T, Op>;

template <class T>
constexpr double epsilon_of() {
  using A = fr::acc_t<T, fr::Sum>;
  return std::numeric_limits<A>::epsilon();
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

// Checks a result against the CPU reference: exact for integers, min/max and small-integer
// sums; within depth * eps * sum|x| for other floating-point sums and products.
template <class T, class Op>
void expect_matches(const std::vector<T>& host, std::size_t offset, std::size_t n, Acc<T, Op> got, bool exact_sum,
                    const char* what) {
  using A = Acc<T, Op>;
  const T* data = host.data() + offset;
  if constexpr (std::is_floating_point_v<A> && (std::is_same_v<Op, fr::Sum> || std::is_same_v<Op, fr::Prod>)) {
    long double expected = std::is_same_v<Op, fr::Sum> ? fr::reference::compensated_sum(data, n)
                                                       : fr::reference::reduce(data, n, Op{});
    if (exact_sum && std::is_same_v<Op, fr::Sum>) {
      EXPECT_EQ(static_cast<long double>(got), expected) << what << " n=" << n << " offset=" << offset;
      return;
    }
    const long double scale = std::is_same_v<Op, fr::Sum> ? fr::reference::absolute_sum(data, n) : std::fabs(expected);
    // A sum's error grows with its longest chain of additions (at most n/1024 + 64 here, with a
    // single block); a product's relative error with every one of its n - 1 multiplications,
    // and near underflow it keeps no relative accuracy at all.
    const double depth = std::is_same_v<Op, fr::Sum> ? double(n) / 1024.0 + 64.0 : double(std::max<std::size_t>(n, 1) - 1);
    EXPECT_LE(std::fabs(static_cast<long double>(got) - expected),
              depth * epsilon_of<T>() * scale + std::numeric_limits<A>::min())
        << what << " n=" << n << " offset=" << offset << " got " << double(got) << " want " << double(expected);
  } else {
    const A expected = fr::reference::reduce(data, n, Op{});
    EXPECT_TRUE(got == expected || (std::isnan(double(got)) && std::isnan(double(expected))))
        << what << " n=" << n << " offset=" << offset << " got " << double(got) << " want " << double(expected);
  }
}

template <class T, class Op>
void check_engine(const std::vector<std::size_t>& sizes = edge_sizes()) {
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
      const bool small_ints = std::is_same_v<Op, fr::Sum> && n <= (std::size_t(1) << 20);
      const auto dist = small_ints ? fr::bench::Distribution::SmallIntegers : fr::bench::distribution_for(Op::name);
      ASSERT_EQ(fr::bench::fill_random(in.get(), total, fr::bench::fresh_seed(), dist, std::is_same_v<Op, fr::BitAnd>),
                cudaSuccess);
      const std::vector<T> host = fr::bench::to_host(in.get(), total);
      expect_matches<T, Op>(host, offset, n, run_async<T, Op>(in.get() + offset, n), small_ints, "reduce_async");
      if (offset == 1 && (n == 257 || n == 65537)) {
        expect_matches<T, Op>(host, offset, n, fr::reduce(in.get() + offset, n, Op{}), small_ints, "reduce");
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

// Products whose every partial product is exact: +-1 everywhere but 30 twos and 10 halves, so
// any grouping stays within 2^-10 .. 2^30 and the result is exactly +-2^20.
template <class T>
void check_exact_product(std::size_t n) {
  std::vector<T> host(n, T(1.0f));
  std::uint64_t bits = fr::bench::fresh_seed();
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

TEST(Engine, RandomFloatSumsStayWithinTheBound) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(1000003), std::size_t(1) << 24, (std::size_t(1) << 24) + 1}) {
    DeviceBuffer<float> in(n);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const auto host = fr::bench::to_host(in.get(), n);
    expect_matches<float, fr::Sum>(host, 0, n, run_async<float, fr::Sum>(in.get(), n), false, "signed floats");
  }
}

TEST(Engine, IntegerResultsEqualCubs) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(1), std::size_t(1000003), (std::size_t(1) << 24) + 1}) {
    DeviceBuffer<std::int32_t> in(n), out(1);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::Signed), cudaSuccess);
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

TEST(Engine, RepeatedCallsGiveIdenticalBits) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 100003 : (std::size_t(1) << 24) + 7;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::Signed), cudaSuccess);
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
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), n);
  const auto expected = fr::reference::reduce(host.data(), n, fr::Sum{});
  for (unsigned cap : {1u, 2u, 3u, 5u, 7u, 64u, 132u, 1000u, 100000u}) {
    EXPECT_EQ((run_async<std::int64_t, fr::Sum>(in.get(), n, {.max_blocks = cap})), expected) << cap;
  }
}

TEST(Engine, TwoStreamsAtOnce) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = (std::size_t(1) << 22) + 11;
  DeviceBuffer<std::int32_t> a(n), b(n), out(2);
  ASSERT_EQ(fr::bench::fill_random(a.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  ASSERT_EQ(fr::bench::fill_random(b.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::Signed), cudaSuccess);
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

TEST(Engine, CapturedInAGraphAndReplayed) {
  FASTREDUCE_REQUIRE_GPU();
  for (auto mode : {fr::Mode::Fast, fr::Mode::Reproducible}) {
    for (std::size_t n : {std::size_t(1000), std::size_t(5000011)}) {
      DeviceBuffer<double> in(n), out(1);
      std::size_t bytes = 0;
      fr::reduce_async<double, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{}, 0, {.mode = mode});
      DeviceBuffer<char> temp(bytes);
      cudaStream_t stream;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      cudaGraph_t graph;
      ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
      ASSERT_EQ((fr::reduce_async<double, fr::Sum>(temp.get(), bytes, in.get(), out.get(), n, fr::Sum{}, stream, {.mode = mode})),
                cudaSuccess);
      ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
      cudaGraphExec_t exec;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      for (int replay = 0; replay < 3; ++replay) {  // new data before each replay
        ASSERT_EQ(fr::bench::fill_random(in.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::SmallIntegers), cudaSuccess);
        const auto host = fr::bench::to_host(in.get(), n);
        out.poison();
        ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        EXPECT_EQ(read_back(out.get()), static_cast<double>(fr::reference::compensated_sum(host.data(), n)));
      }
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(stream);
    }
  }
}

TEST(Engine, BadInputsGiveTheDocumentedErrorAndWriteNothing) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 1000;
  DeviceBuffer<float> in(n + 1), out(1);
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
  EXPECT_EQ((fr::reduce_async<float, fr::Prod>(temp.get(), bytes, in.get(), out.get(), n, fr::Prod{}, 0,
                                               {.mode = fr::Mode::Reproducible})),
            cudaErrorNotSupported);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(same_bits(read_back(out.get()), poisoned));
  // The blocking API throws fastreduce::Error naming the argument.
  try {
    (void)fr::reduce(host.data(), n);
    FAIL() << "no exception for a host pointer";
  } catch (const fr::Error& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidDevicePointer);
    EXPECT_NE(std::string(e.what()).find("d_in"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)fr::reduce(static_cast<const float*>(nullptr), 5), fr::Error);
  // n = 0 with a null pointer is fine: the identity.
  EXPECT_EQ(fr::reduce(static_cast<const float*>(nullptr), 0), 0.0f);
  EXPECT_EQ(fr::reduce(static_cast<const std::int32_t*>(nullptr), 0, fr::Min{}), std::numeric_limits<std::int32_t>::max());
}

TEST(Engine, MoreThanTwoToThe32Elements) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 37;
  std::size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  if (free_bytes < n * sizeof(float) + (std::size_t(2) << 30)) GTEST_SKIP() << "needs 18 GB of GPU memory";
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, fr::bench::fresh_seed(), fr::bench::Distribution::SmallIntegers), cudaSuccess);
  // Over 2^32 elements no float sum is exact: compare with CUB's on the same data.
  DeviceBuffer<float> out(1);
  std::size_t bytes = 0;
  fr::bench::cub_reduce<float, fr::Sum>(nullptr, bytes, in.get(), out.get(), n, 0);
  DeviceBuffer<char> temp(bytes);
  ASSERT_EQ((fr::bench::cub_reduce<float, fr::Sum>(temp.get(), bytes, in.get(), out.get(), n, 0)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const double cub = read_back(out.get());
  EXPECT_NEAR((run_async<float, fr::Sum>(in.get(), n)) / cub, 1.0, 1e-5);
  EXPECT_NEAR((run_async<float, fr::Sum>(in.get() + 1, n - 1, {.mode = fr::Mode::Reproducible})) / cub, 1.0, 1e-5);
  // Integers are exact: the same memory as int32, against CUB.
  const auto* as_int = reinterpret_cast<const std::int32_t*>(in.get());
  DeviceBuffer<std::int32_t> int_out(1);
  fr::bench::cub_reduce<std::int32_t, fr::Sum>(nullptr, bytes, as_int, int_out.get(), n, 0);
  DeviceBuffer<char> int_temp(bytes);
  ASSERT_EQ((fr::bench::cub_reduce<std::int32_t, fr::Sum>(int_temp.get(), bytes, as_int, int_out.get(), n, 0)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ((run_async<std::int32_t, fr::Sum>(as_int, n)), read_back(int_out.get()));
}

TEST(Engine, LargeInputsTakeTheBulkCopyPath) {
  FASTREDUCE_REQUIRE_GPU();
  // 128 MiB and more go through bulk copies: check the head, the stages and the tail.
  const std::size_t n = (std::size_t(128) << 20) / sizeof(std::int32_t) + 12345;
  DeviceBuffer<std::int32_t> ints(n + 3);
  ASSERT_EQ(fr::bench::fill_random(ints.get(), n + 3, fr::bench::fresh_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const auto hi = fr::bench::to_host(ints.get(), n + 3);
  for (std::size_t offset : {0u, 1u, 3u}) {
    if (quick() && offset != 1) continue;  // under compute-sanitizer: one misaligned case
    const std::size_t m = n - offset * 1001;
    const auto expected = fr::reference::reduce(hi.data() + offset, m, fr::Sum{});
    EXPECT_EQ((run_async<std::int32_t, fr::Sum>(ints.get() + offset, m)), expected) << offset;
    EXPECT_EQ((run_async<std::int32_t, fr::Sum>(ints.get() + offset, m, {.max_blocks = 7})), expected) << offset;
    EXPECT_EQ((run_async<std::int32_t, fr::Max>(ints.get() + offset, m)), fr::reference::reduce(hi.data() + offset, m, fr::Max{}));
  }
  const std::size_t nd = (std::size_t(128) << 20) / sizeof(double) + 777;
  DeviceBuffer<double> doubles(nd + 1);
  ASSERT_EQ(fr::bench::fill_random(doubles.get(), nd + 1, fr::bench::fresh_seed(), fr::bench::Distribution::SmallIntegers), cudaSuccess);
  const auto hd = fr::bench::to_host(doubles.get(), nd + 1);
  EXPECT_EQ((run_async<double, fr::Sum>(doubles.get() + 1, nd)), static_cast<double>(fr::reference::compensated_sum(hd.data() + 1, nd)));
}

// Either side of the sizes where the fast path changes policy (one block up to 64 KB, small
// blocks up to 4 MB), at every offset from a 16-byte boundary.
template <class T>
std::vector<std::size_t> policy_boundaries() {
  std::vector<std::size_t> sizes;
  for (std::size_t bytes : {fr::engine::kSm90TinyMaxBytes, fr::engine::kSm90SmallMaxBytes}) {
    const std::size_t n = bytes / sizeof(T);
    for (std::size_t m : {n - 1, n, n + 1, n + 16 / sizeof(T)}) sizes.push_back(m);
  }
  return sizes;
}

TEST(Engine, PolicyBoundaries) {
  check_engine<float, fr::Sum>(policy_boundaries<float>());
  check_engine<double, fr::Max>(policy_boundaries<double>());
  check_engine<std::int32_t, fr::Sum>(policy_boundaries<std::int32_t>());
  check_engine<__nv_bfloat16, fr::Sum>(policy_boundaries<__nv_bfloat16>());
}

// The bench's interleaved timing: every contender gets its warm-up, then repetition r runs one
// batch of each, rotated by r and reversed every other round; the call index counts on over all
// calls; and each contender's time is its own (one that spins on the host is the slowest).
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
