// The header-only entry point (fastreduce/reduce.cuh): users' own transforms and ops compiled
// here, in the test, against CPU references; a non-commutative op checks that the operands meet
// in index order.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <random>
#include <vector>

#include "fastreduce/reduce.cuh"
#include "affine_op.hpp"
#include "gpu_test.hpp"

namespace fr = fastreduce;
using namespace fastreduce::testing;

namespace {

struct Square {
  __host__ __device__ int operator()(int x) const { return x * x; }
};

struct ToAffine {  // element i's map from its data
  __host__ __device__ Affine operator()(const uint2& v) const { return {v.x | 1u, v.y}; }
};

// 12-byte elements (their size does not divide 16: one element per thread per sub-tile).
struct Vec3 {
  float x, y, z;
};
struct MinMax {
  float lo, hi;
};
struct SpanOp {
  __host__ __device__ MinMax identity() const { return {__builtin_huge_valf(), -__builtin_huge_valf()}; }
  __host__ __device__ MinMax operator()(const MinMax& a, const MinMax& b) const {
    return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
};
struct NormOf {
  __host__ __device__ MinMax operator()(const Vec3& v) const {
    const float s = v.x * v.x + v.y * v.y + v.z * v.z;
    return {s, s};
  }
};

// 24-byte elements under a commutative op (the grid-stride pass, one element a load).
struct Triple {
  double a, b, c;
};
struct TripleSum {
  static constexpr bool commutative = true;
  __host__ __device__ Triple identity() const { return {0.0, 0.0, 0.0}; }
  __host__ __device__ Triple operator()(const Triple& x, const Triple& y) const { return {x.a + y.a, x.b + y.b, x.c + y.c}; }
};

static_assert(fr::engine::is_commutative<TripleSum>::value, "TripleSum takes the engine's commutative paths");

struct Widen {  // bytes into 64-bit sums
  __host__ __device__ std::uint64_t operator()(std::uint8_t x) const { return x; }
};

std::vector<std::size_t> sizes() {
  if (quick()) return {0, 1, 31, 33, 1025, 4097, 65537};
  return {0, 1, 2, 31, 32, 33, 255, 256, 257, 1000, 1023, 1024, 1025, 4095, 4096, 4097, 65537,
          (std::size_t(1) << 20) + 3, std::size_t(1) << 24};
}

template <class T>
std::vector<T> random_host(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    std::uint64_t bits = rng();
    std::memcpy(&x, &bits, std::min(sizeof(T), sizeof(bits)));
    if constexpr (sizeof(T) > 8) {
      std::uint64_t more = rng();
      std::memcpy(reinterpret_cast<char*>(&x) + 8, &more, sizeof(T) - 8);
    }
  }
  return v;
}

}  // namespace

TEST(TransformReduce, SquareSumIsExactAtEveryOffset) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : sizes()) {
    std::mt19937 rng(static_cast<unsigned>(test_seed()));
    std::vector<int> host(n + 3);
    for (auto& x : host) x = int(rng() % 31) - 15;  // squares up to 225: the int sum is exact
    DeviceBuffer<int> in(n + 3);
    CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice));
    for (std::size_t offset : {0u, 1u, 3u}) {  // 16-byte aligned (vector loads) and not
      long long want = 0;
      for (std::size_t i = 0; i < n; ++i) want += host[offset + i] * host[offset + i];
      EXPECT_EQ(fr::transform_reduce(in.get() + offset, n, Square{}, fr::Sum{}), want) << "n=" << n << " offset=" << offset;
    }
  }
}

TEST(TransformReduce, NonCommutativeOpMeetsInIndexOrder) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : sizes()) {
    const auto host = random_host<uint2>(n + 1, test_seed());
    DeviceBuffer<uint2> in(n + 1);
    CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(uint2), cudaMemcpyHostToDevice));
    for (std::size_t offset : {0u, 1u}) {
      Affine want = Compose{}.identity();
      for (std::size_t i = 0; i < n; ++i) want = Compose{}(want, ToAffine{}(host[offset + i]));
      const Affine got = fr::transform_reduce(in.get() + offset, n, ToAffine{}, Compose{});
      EXPECT_EQ(got.a, want.a) << "n=" << n << " offset=" << offset;
      EXPECT_EQ(got.b, want.b) << "n=" << n << " offset=" << offset;
    }
  }
}

TEST(TransformReduce, TwelveByteElementsAndAStructResult) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : sizes()) {
    std::mt19937 rng(static_cast<unsigned>(test_seed()));
    // Whole numbers: the squared norms are exact on both sides, however the compilers contract them.
    std::uniform_int_distribution<int> u(-40, 40);
    std::vector<Vec3> host(n);
    for (auto& v : host) v = {float(u(rng)), float(u(rng)), float(u(rng))};
    DeviceBuffer<Vec3> in(n);
    if (n > 0) CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(Vec3), cudaMemcpyHostToDevice));
    MinMax want = SpanOp{}.identity();
    for (const auto& v : host) want = SpanOp{}(want, NormOf{}(v));
    const MinMax got = fr::transform_reduce(in.get(), n, NormOf{}, SpanOp{});
    EXPECT_EQ(got.lo, want.lo) << "n=" << n;  // min and max are exact whatever the bracketing
    EXPECT_EQ(got.hi, want.hi) << "n=" << n;
  }
}

TEST(TransformReduce, LargeElementsUnderACommutativeOp) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : sizes()) {
    std::mt19937 rng(static_cast<unsigned>(test_seed()));
    std::vector<Triple> host(n + 1);
    for (auto& t : host) t = {double(rng() % 1000), double(rng() % 7), 1.0};  // whole numbers: exact sums
    DeviceBuffer<Triple> in(n + 1);
    CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(Triple), cudaMemcpyHostToDevice));
    for (std::size_t offset : {0u, 1u}) {  // 16-byte aligned and 8 bytes off
      Triple want{0.0, 0.0, 0.0};
      for (std::size_t i = 0; i < n; ++i) want = TripleSum{}(want, host[offset + i]);
      const Triple got = fr::reduce(in.get() + offset, n, TripleSum{});
      EXPECT_EQ(got.a, want.a) << "n=" << n << " offset=" << offset;
      EXPECT_EQ(got.b, want.b) << "n=" << n << " offset=" << offset;
      EXPECT_EQ(got.c, double(n)) << "n=" << n << " offset=" << offset;  // every element counted once
    }
  }
}

TEST(TransformReduce, BuiltInOpsAndRepeatability) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 100003 : 10000019;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::SignedSmallIntegers), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), n);
  double want = 0;
  float most = -1e30f;
  for (float x : host) {
    want += x;
    most = std::max(most, x);
  }
  // The built-in ops through the header-only family (a transform makes them users' ops).
  const auto sum_op = fr::transformed(fr::Identity{}, fr::Sum{});
  const float sum = fr::reduce(in.get(), n, sum_op);
  EXPECT_EQ(double(sum), want);  // whole numbers whose partial sums stay exact in float
  EXPECT_EQ(fr::reduce(in.get(), n, fr::transformed(fr::Identity{}, fr::Max{})), most);
  const float again = fr::reduce(in.get(), n, sum_op);
  EXPECT_TRUE(same_bits(sum, again));
}

TEST(TransformReduce, MoreThanTwoToThe32Elements) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 1000;
  DeviceBuffer<std::uint8_t> in(n);
  if (in.get() == nullptr) GTEST_SKIP() << "4 GB not available";
  CUDA_OK(cudaMemset(in.get(), 1, n));
  EXPECT_EQ(fr::transform_reduce(in.get(), n, Widen{}, fr::Sum{}), n);
}

TEST(TransformReduce, BadArguments) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<int> in(100);
  DeviceBuffer<int> out(1);
  std::size_t bytes = 0;
  ASSERT_EQ(fr::transform_reduce_async(nullptr, bytes, in.get(), 100, out.get(), Square{}, fr::Sum{}), cudaSuccess);
  EXPECT_GT(bytes, 0u);
  DeviceBuffer<char> temp(bytes);
  std::size_t small = bytes - 1;
  EXPECT_EQ(fr::transform_reduce_async(temp.get(), small, in.get(), 100, out.get(), Square{}, fr::Sum{}),
            cudaErrorInvalidValue);
  EXPECT_EQ(fr::transform_reduce_async(temp.get(), bytes, in.get(), 100, static_cast<int*>(nullptr), Square{}, fr::Sum{}),
            cudaErrorInvalidValue);
  EXPECT_EQ(fr::transform_reduce_async(temp.get(), bytes, static_cast<const int*>(nullptr), 5, out.get(), Square{},
                                       fr::Sum{}),
            cudaErrorInvalidValue);
  EXPECT_EQ(fr::transform_reduce(in.get(), 0, Square{}, fr::Sum{}), 0);  // the identity
}

namespace {

// The first index of the extreme, NaN counting as the extreme (NumPy's and PyTorch's rule).
template <class T, bool Max>
std::int64_t reference_arg(const std::vector<T>& v, std::size_t offset, std::size_t n) {
  std::int64_t best = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const T x = v[offset + i];
    if constexpr (std::is_floating_point_v<T>) {
      if (x != x) return static_cast<std::int64_t>(i);
    }
    if (best < 0 || (Max ? x > v[offset + best] : x < v[offset + best])) best = static_cast<std::int64_t>(i);
  }
  return best;
}

template <class T>
void check_arg_extremes(const std::vector<T>& host, std::size_t offset, std::size_t n, const char* what) {
  DeviceBuffer<T> in(host.size());
  CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  const auto mx = fr::argmax(in.get() + offset, n);
  const auto mn = fr::argmin(in.get() + offset, n);
  EXPECT_EQ(mx.index, (reference_arg<T, true>(host, offset, n))) << what << " n=" << n << " offset=" << offset;
  EXPECT_EQ(mn.index, (reference_arg<T, false>(host, offset, n))) << what << " n=" << n << " offset=" << offset;
  if (mx.index >= 0 && mx.index < static_cast<std::int64_t>(n)) {
    EXPECT_TRUE(same_bits(mx.value, host[offset + mx.index])) << what;
  }
}

}  // namespace

TEST(ArgExtremes, RandomTiesAndEveryOffset) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : sizes()) {
    if (n == 0) continue;
    std::mt19937_64 rng(test_seed());
    std::vector<float> f(n + 3);
    for (auto& x : f) x = float(int(rng() % 2001) - 1000);  // many ties
    std::vector<std::int32_t> i32(n + 3);
    for (auto& x : i32) x = std::int32_t(rng() % 200) - 100;
    std::vector<std::uint8_t> u8(n + 3);
    for (auto& x : u8) x = std::uint8_t(rng());
    std::vector<double> f64(n + 3);
    for (auto& x : f64) x = double(int(rng() % 100));
    for (std::size_t offset : {0u, 1u, 3u}) {
      check_arg_extremes(f, offset, n, "float");
      check_arg_extremes(i32, offset, n, "int32");
      check_arg_extremes(u8, offset, n, "uint8");
      check_arg_extremes(f64, offset, n, "double");
    }
  }
}

TEST(ArgExtremes, TiesAtTheStartMiddleAndEnd) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 100003 : 4000037;
  for (std::size_t at : {std::size_t(0), n / 2, n - 1}) {
    std::vector<float> v(n, 1.0f);
    v[at] = 5.0f;
    if (at + 7 < n) v[at + 7] = 5.0f;       // a later tie loses
    if (at + 4099 < n) v[at + 4099] = 5.0f;  // in another tile
    v[n - 1] = 5.0f;                        // and the last element ties too
    std::vector<float> w = v;
    for (auto& x : w) x = -x;
    check_arg_extremes(v, 0, n, "ties");
    check_arg_extremes(w, 0, n, "ties (min)");
  }
  std::vector<float> same(n, 3.0f);  // every element ties: index 0
  check_arg_extremes(same, 0, n, "all equal");
}

TEST(ArgExtremes, NanAndInfinityInTheHeadBodyAndTail) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 65537 : 2000003;
  std::mt19937_64 rng(test_seed());
  for (std::size_t at : {std::size_t(0), std::size_t(5), n / 3, n - 1}) {
    std::vector<float> v(n);
    for (auto& x : v) x = float(int(rng() % 1000));
    v[at] = NAN;
    if (at + 10 < n) v[at + 10] = NAN;  // the first NaN wins
    v[n / 2] = INFINITY;
    check_arg_extremes(v, 0, n, "NaN");
    std::vector<float> inf(n);
    for (auto& x : inf) x = float(int(rng() % 1000));
    inf[at] = INFINITY;
    inf[n - 1 - at / 2] = -INFINITY;
    check_arg_extremes(inf, 0, n, "infinities");
  }
}

TEST(ArgExtremes, IndicesBeyondTwoToThe32) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 1000;
  DeviceBuffer<std::uint8_t> in(n);
  if (in.get() == nullptr) GTEST_SKIP() << "4 GB not available";
  CUDA_OK(cudaMemset(in.get(), 3, n));
  const std::uint8_t hi = 9, lo = 1;
  const std::size_t at = (std::size_t(1) << 32) + 5;
  CUDA_OK(cudaMemcpy(in.get() + at, &hi, 1, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(in.get() + at + 100, &hi, 1, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(in.get() + n - 1, &lo, 1, cudaMemcpyHostToDevice));
  const auto mx = fr::argmax(in.get(), n);
  EXPECT_EQ(mx.index, static_cast<std::int64_t>(at));
  EXPECT_EQ(mx.value, hi);
  EXPECT_EQ(fr::argmin(in.get(), n).index, static_cast<std::int64_t>(n - 1));
}
