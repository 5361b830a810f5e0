// fastreduce/stats.cuh (moments, variance, norms, dot) and the axis and segmented forms of the
// header-only reductions, against references in quad precision or exact integer arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fastreduce/stats.cuh"
#include "affine_op.hpp"
#include "gpu_test.hpp"
#include "quad_reference.hpp"

namespace fr = fastreduce;
using namespace fastreduce::testing;

namespace {

template <class T>
double as_double(const T& x) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(x);
  else return static_cast<double>(static_cast<float>(x));
}

template <class T>
std::vector<double> widened(const std::vector<T>& v, std::size_t offset, std::size_t n) {
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = as_double(v[offset + i]);
  return out;
}

// A host vector's copy in device memory (DeviceBuffer neither copies nor moves: held in place).
template <class T>
struct Uploaded {
  DeviceBuffer<T> buffer;
  explicit Uploaded(const std::vector<T>& host) : buffer(std::max<std::size_t>(host.size(), 1)) {
    if (!host.empty()) cudaMemcpy(buffer.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  T* get() { return buffer.get(); }
};
template <class T>
Uploaded<T> to_device(const std::vector<T>& host) {
  return Uploaded<T>(host);
}

template <class T>
void upload(Uploaded<T>& d, const std::vector<T>& host) {
  cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
}

template <class T>
std::vector<T> host_copy(const T* d, std::size_t n) {
  std::vector<T> h(n);
  if (n > 0) cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

// |got - want| <= tol |want| (or both NaN, or equal: infinities).
::testing::AssertionResult close(double got, double want, double tol) {
  if ((std::isnan(want) && std::isnan(got)) || got == want) return ::testing::AssertionSuccess();
  if (std::fabs(got - want) <= tol * std::fabs(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (relative error "
                                       << std::fabs(got - want) / std::fabs(want) << ", allowed " << tol << ")";
}

// The result's own rounding: 2^-23 for float results (computed in double, rounded once), a
// little above double's for double results.
template <class T>
double result_tolerance() {
  return std::is_same_v<fr::stat_t<T>, float> ? 1.2e-7 : 1e-12;
}

template <class T>
std::vector<T> random_values(std::size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  std::uniform_real_distribution<double> u(-100.0, 100.0);
  for (auto& x : v) {
    if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(rng() % 201);
      if constexpr (std::is_signed_v<T>) x = static_cast<T>(x - 100);
    } else if constexpr (std::is_arithmetic_v<T>) {
      x = static_cast<T>(u(rng));
    } else {
      x = T(static_cast<float>(u(rng)));
    }
  }
  return v;
}

template <class T>
void check_moments(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto host = random_values<T>(n + 3, rng);
  auto d = to_device(host);
  for (std::size_t offset : {0u, 1u, 3u}) {
    const auto ref = quad_moments(widened(host, offset, n).data(), n);
    const fr::Moments<double> m = fr::moments(d.get() + offset, n);
    ASSERT_EQ(m.count, static_cast<std::int64_t>(n));
    const double scale = std::sqrt(ref.m2 / std::max<double>(double(n), 1)) + std::fabs(ref.mean);
    if (n > 0) EXPECT_LE(std::fabs(m.mean() - ref.mean), 1e-13 * scale) << "n=" << n << " offset=" << offset;
    const double mean = double(fr::mean(d.get() + offset, n));
    if (n == 0) EXPECT_TRUE(std::isnan(mean));
    else EXPECT_LE(std::fabs(mean - ref.mean), result_tolerance<T>() * std::fabs(ref.mean) + 1e-13 * scale) << "n=" << n;
    for (int c : {0, 1, 2}) {
      const double want = n > std::size_t(c) ? ref.m2 / double(n - c) : NAN;
      EXPECT_TRUE(close(m.variance(c), want, 1e-12)) << "n=" << n << " offset=" << offset << " correction=" << c;
      const auto v = fr::var(d.get() + offset, n, c);
      const auto s = fr::stddev(d.get() + offset, n, c);
      static_assert(std::is_same_v<decltype(v), const fr::stat_t<T>>);
      EXPECT_TRUE(close(double(v), want, result_tolerance<T>())) << "n=" << n << " offset=" << offset << " c=" << c;
      EXPECT_TRUE(close(double(s), std::sqrt(want), result_tolerance<T>())) << "n=" << n << " offset=" << offset;
    }
  }
}

}  // namespace

TEST(Moments, EveryTypeEdgeSizesAndOffsets) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : edge_sizes()) {
    if (n > (std::size_t(1) << 21)) continue;  // the quad reference is slow
    check_moments<float>(n, test_seed());
    check_moments<double>(n, test_seed() + 1);
    check_moments<__half>(n, test_seed() + 2);
    check_moments<__nv_bfloat16>(n, test_seed() + 3);
    check_moments<std::int32_t>(n, test_seed() + 4);
    check_moments<std::uint8_t>(n, test_seed() + 5);
    check_moments<std::int64_t>(n, test_seed() + 6);
  }
}

// The mean's two reductions on the integer types the test above leaves out, over each type's whole
// range: the sum and count (bool, 8 and 16 bits) and the moments (32 and 64 bits).
namespace {
// bool's values are held as bytes (0 or 1): std::vector<bool> has no contiguous storage.
template <class T>
using Held = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;

template <class T>
std::vector<Held<T>> full_range_values(std::size_t n, std::mt19937_64& rng) {
  std::vector<Held<T>> v(n);
  if constexpr (std::is_same_v<T, bool>) {
    for (auto& x : v) x = static_cast<std::uint8_t>(rng() & 1);
  } else if constexpr (std::is_signed_v<T>) {
    std::uniform_int_distribution<long long> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    for (auto& x : v) x = static_cast<T>(d(rng));
  } else {
    std::uniform_int_distribution<unsigned long long> d(0, std::numeric_limits<T>::max());
    for (auto& x : v) x = static_cast<T>(d(rng));
  }
  return v;
}

template <class T>
void check_integer_mean(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto host = full_range_values<T>(n, rng);
  auto d = to_device(host);
  const auto ref = quad_moments(widened(host, 0, n).data(), n);
  const double scale = std::sqrt(ref.m2 / std::max<double>(double(n), 1)) + std::fabs(ref.mean);
  const double mean = fr::mean(reinterpret_cast<const T*>(d.get()), n);
  if (n == 0) EXPECT_TRUE(std::isnan(mean));
  else EXPECT_LE(std::fabs(mean - ref.mean), 1e-13 * scale) << "n=" << n;
}

// A constant's mean is the constant (as a double), exactly.
template <class T>
void check_constant_mean(T c, std::size_t n) {
  const std::vector<T> host(n, c);
  auto d = to_device(host);
  EXPECT_EQ(fr::mean(d.get(), n), static_cast<double>(c)) << "n=" << n << " c=" << +c;
}
}  // namespace

TEST(Moments, MeanOfEveryIntegerTypeAndOfWideInt64) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(33), std::size_t(4099), (std::size_t(1) << 20) + 3}) {
    check_integer_mean<bool>(n, test_seed() + 9);
    check_integer_mean<std::int8_t>(n, test_seed() + 10);
    check_integer_mean<std::int16_t>(n, test_seed() + 11);
    check_integer_mean<std::uint16_t>(n, test_seed() + 12);
    check_integer_mean<std::uint32_t>(n, test_seed() + 13);
    check_integer_mean<std::uint64_t>(n, test_seed() + 14);
  }
  // Constants at each type's end (a double sum of 2^23 + 1 copies of a 32-bit value near 2^31
  // rounds; the moments' shift does not).
  const std::size_t big = (std::size_t(1) << 23) + 1;
  check_constant_mean<std::int8_t>(-128, big);
  check_constant_mean<std::uint16_t>(65535, big);
  check_constant_mean<std::int32_t>(2147483647, big);
  check_constant_mean<std::int32_t>(-2147483647 - 1, big);
  check_constant_mean<std::uint32_t>(4294967295u, big);
  // 64-bit integers near 2^52: the moments' mean is the exact mean rounded once on these two
  // data sets (a shift and small offsets); a double sum and count is 1 ulp off on both (an H100,
  // 2^20 + 3 elements).
  const std::size_t n = (std::size_t(1) << 20) + 3;
  std::vector<std::int64_t> host(n);
  std::vector<std::uint64_t> unsigned_host(n);
  for (int set = 0; set < 2; ++set) {
    for (std::size_t i = 0; i < n; ++i) {
      host[i] = set == 0 ? (std::int64_t(1) << 52) + std::int64_t(i % 3)
                         : (std::int64_t(3) << 51) + std::int64_t((i * 2654435761u) % 4096);
      unsigned_host[i] = static_cast<std::uint64_t>(host[i]);
    }
    __int128 sum = 0;
    for (const auto x : host) sum += x;
    const __int128 whole = sum / static_cast<__int128>(n), rest = sum % static_cast<__int128>(n);
    // The exact mean whole + rest / n rounded to double (0.0027 from a tie on set 1: far above
    // the long double's error).
    const double want = static_cast<double>(static_cast<long double>(whole) + static_cast<long double>(rest) / n);
    auto d = to_device(host);
    EXPECT_EQ(fr::mean(d.get(), n), want) << "set " << set;
    auto du = to_device(unsigned_host);
    EXPECT_EQ(fr::mean(du.get(), n), want) << "set " << set << " (uint64)";
  }
}

namespace {
// The fast mean's sum of a half type's values as a double: what its kernels divide by the count.
template <class T>
struct MeanSumOf : fr::engine::SumMeanReduction<T> {
  using Out = double;
  __device__ __forceinline__ MeanSumOf at(const T*) const { return *this; }
  __host__ __device__ __forceinline__ double project(const fr::engine::SumCount& p) const { return p.sum; }
};

// R's results over `rows` rows of `length` elements from d (1-D for one row).
template <class R>
std::vector<typename R::Out> run_rows(const typename R::Input* d, std::size_t rows, std::size_t length) {
  const fr::Axis axis{rows, length, 1};
  std::size_t bytes = 0;
  EXPECT_EQ(fr::engine::reduce_axis_async_impl<R>(nullptr, bytes, {d}, nullptr, axis, R{}, 0, fr::Options{}),
            cudaSuccess);
  DeviceBuffer<unsigned char> temp(std::max<std::size_t>(bytes, 1));
  DeviceBuffer<typename R::Out> out(rows);
  out.poison();
  EXPECT_EQ(fr::engine::reduce_axis_async_impl<R>(temp.get(), bytes, {d}, out.get(), axis, R{}, 0, fr::Options{}),
            cudaSuccess);
  return host_copy(out.get(), rows);
}

// Values +-m 2^(e - P + 1), m of P bits (the type's significand), e from lo to hi: the double sum
// of up to 2^22 of them is exact, yet two of them may lie hi - lo binades apart, where a float add
// rounds. `scaled` gets each value times 2^(P - 1 - lo), an integer.
template <class T>
std::vector<T> spread_values(std::size_t n, std::mt19937_64& rng, std::vector<std::int64_t>& scaled, int binades = 0) {
  constexpr int P = std::is_same_v<T, __half> ? 11 : 8;
  constexpr int lo = std::is_same_v<T, __half> ? -8 : -12;
  const int hi = binades > 0 ? lo + binades - 1 : std::is_same_v<T, __half> ? 10 : 11;
  std::vector<T> v(n);
  scaled.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t m = (std::int64_t(1) << (P - 1)) + static_cast<std::int64_t>(rng() % (1u << (P - 1)));
    const int e = lo + static_cast<int>(rng() % unsigned(hi - lo + 1));
    const std::int64_t s = (rng() & 1) ? -(m << (e - lo)) : (m << (e - lo));
    scaled[i] = s;
    v[i] = T(static_cast<float>(std::ldexp(static_cast<double>(s), lo - P + 1)));
  }
  return v;
}

template <class T>
void check_spread_mean(std::size_t n, std::uint64_t seed, int binades = 0) {
  constexpr int P = std::is_same_v<T, __half> ? 11 : 8;
  constexpr int lo = std::is_same_v<T, __half> ? -8 : -12;
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> scaled;
  const auto host = spread_values<T>(n + 3, rng, scaled, binades);
  auto d = to_device(host);
  for (std::size_t offset : {0u, 1u, 3u}) {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += scaled[offset + i];
    const double want = std::ldexp(static_cast<double>(total), lo - P + 1);  // exact: below 2^53 units
    EXPECT_EQ(run_rows<MeanSumOf<T>>(d.get() + offset, 1, n)[0], want) << "n=" << n << " offset=" << offset;
    if (n == 0) continue;
    EXPECT_EQ(fr::mean(d.get() + offset, n), static_cast<float>(want / static_cast<double>(n)))
        << "n=" << n << " offset=" << offset;
  }
  // Rows (n split into rows of 1 to 4099 elements: the rows kernels fold the same vectors).
  for (std::size_t length : {std::size_t(7), std::size_t(64), std::size_t(4099)}) {
    const std::size_t rows = n / length;
    if (rows == 0) continue;
    const auto got = run_rows<MeanSumOf<T>>(d.get(), rows, length);
    for (std::size_t r = 0; r < rows; ++r) {
      std::int64_t total = 0;
      for (std::size_t i = 0; i < length; ++i) total += scaled[r * length + i];
      ASSERT_EQ(got[r], std::ldexp(static_cast<double>(total), lo - P + 1)) << "n=" << n << " row " << r << " of " << length;
    }
  }
}
}  // namespace

// The half types' fast mean meets a vector in float where that is exact and in double where it
// is not: its sum is the double sum's bits on values spread over 19 (half) and 24 (bfloat16)
// binades (about two vectors in three round in float), over 14 and 17 (3% and 2% round: exact
// up to 10 and 13 binades apart, then by the values), and on a vector whose exact sum is a float
// subnormal; values near bfloat16's largest, whose float sums overflow, keep a finite mean.
TEST(Moments, HalfTypesMeanIsTheDoubleSumOnSpreadValuesAndNearTheLimit) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : edge_sizes()) {
    if (n > (std::size_t(1) << 22)) continue;  // exact in double up to 2^22 values
    check_spread_mean<__half>(n, test_seed() + 21);
    check_spread_mean<__nv_bfloat16>(n, test_seed() + 22);
    check_spread_mean<__half>(n, test_seed() + 24, 14);
    check_spread_mean<__nv_bfloat16>(n, test_seed() + 25, 17);
  }
  {  // 2^-126 (1 + 2^-7) - 2^-126 = 2^-133, exact in double and a float subnormal (the tests build
     // without -ftz: this holds the chains' subnormal sums; their -ftz guard is checked in PTX)
    std::vector<__nv_bfloat16> tiny(16, __ushort_as_bfloat16(0));
    tiny[0] = __ushort_as_bfloat16(0x0081);
    tiny[1] = __ushort_as_bfloat16(0x8080);
    tiny[9] = __ushort_as_bfloat16(0x0081);
    tiny[12] = __ushort_as_bfloat16(0x8080);
    auto dt = to_device(tiny);
    EXPECT_EQ(run_rows<MeanSumOf<__nv_bfloat16>>(dt.get(), 1, 16)[0], std::ldexp(1.0, -132));
    const auto rows = run_rows<MeanSumOf<__nv_bfloat16>>(dt.get(), 2, 8);
    EXPECT_EQ(rows[0], std::ldexp(1.0, -133));
    EXPECT_EQ(rows[1], std::ldexp(1.0, -133));
  }
  const std::size_t n = 4099;
  const __nv_bfloat16 largest = __ushort_as_bfloat16(0x7F7F);  // 3.39e38
  std::vector<__nv_bfloat16> big(n + 1, largest);
  auto d = to_device(big);
  for (std::size_t offset : {0u, 1u}) {
    EXPECT_EQ(fr::mean(d.get() + offset, n), static_cast<float>(largest)) << "offset " << offset;
    EXPECT_EQ(run_rows<MeanSumOf<__nv_bfloat16>>(d.get() + offset, 1, n)[0], double(n) * double(static_cast<float>(largest)));
  }
  // Infinities and NaN among exact vectors: an infinity of one sign passes the float chains (both
  // give it), +inf with -inf and NaN take the double lanes; either way IEEE's result.
  std::mt19937_64 rng(test_seed() + 23);
  std::vector<std::int64_t> scaled;
  auto special = spread_values<__nv_bfloat16>(n, rng, scaled);
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto& [a, b, want] : {std::tuple{inf, 1.0f, inf}, std::tuple{-inf, 1.0f, -inf}, std::tuple{inf, -inf, NAN},
                                   std::tuple{NAN, 1.0f, NAN}}) {
    special[1000] = __nv_bfloat16(a);
    special[1003] = __nv_bfloat16(b);
    auto ds = to_device(special);
    const float got = fr::mean(ds.get(), n);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << a << " " << b;
    else EXPECT_EQ(got, want) << a << " " << b;
  }
}

TEST(Moments, RobustOnALargeMeanAndATinySpread) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(1000), (std::size_t(1) << 20) + 3, quick() ? std::size_t(65537) : std::size_t(20000003)}) {
    std::mt19937_64 rng(test_seed());
    std::uniform_real_distribution<double> u(0.0, 1e-3);
    std::vector<double> x(n);
    for (auto& v : x) v = 1e6 + u(rng);
    const auto ref = quad_moments(x.data(), n);
    const double want = ref.m2 / double(n - 1);
    // The data defeat the textbook formula: (sum x^2 - (sum x)^2 / n) / (n - 1) in double.
    double s1 = 0, s2 = 0;
    for (double v : x) {
      s1 += v;
      s2 += v * v;
    }
    const double naive = (s2 - s1 * s1 / double(n)) / double(n - 1);
    EXPECT_GT(std::fabs(naive - want), 1e-3 * want) << "the data do not discriminate";
    auto d = to_device(x);
    EXPECT_TRUE(close(fr::var(d.get(), n), want, 1e-10)) << "n=" << n;
    EXPECT_TRUE(close(fr::stddev(d.get(), n), std::sqrt(want), 1e-10)) << "n=" << n;
    EXPECT_TRUE(close(fr::mean(d.get(), n), ref.mean, 1e-15)) << "n=" << n;

    // Floats: 1000 + U(0, 1e-2), spread two thousand float ulps.
    std::vector<float> f(n);
    std::uniform_real_distribution<float> uf(0.0f, 1e-2f);
    for (auto& v : f) v = 1000.0f + uf(rng);
    const auto fref = quad_moments(widened(f, 0, n).data(), n);
    auto df = to_device(f);
    EXPECT_TRUE(close(fr::var(df.get(), n), fref.m2 / double(n - 1), 1.2e-7)) << "float n=" << n;
  }
}

namespace {
// The moments' unit of sums s1 over 2^k elements, by the rows-as-one-array kernels'
// lane_partial and by partial() (a division), for every k of 0..62 (sums[i] over 2^(i % 63)).
__global__ void offsets_kernel(const double* sums, std::size_t n, double* offset, double* quotient, double* m2,
                               double* m2_divided) {
  using R = fr::engine::MomentsReduction<float, fr::engine::VarianceOf<float>>;
  const R r{};
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const std::int64_t count = std::int64_t(1) << (i % 63);
    const fr::Moments<double> a = r.lane_partial({sums[i], 1.0}, std::size_t(count));
    const fr::Moments<double> b = r.partial({count, sums[i], 1.0});
    offset[i] = a.count == count ? a.offset : NAN;
    quotient[i] = b.offset;
    m2[i] = a.m2;
    m2_divided[i] = b.m2;
  }
}
}  // namespace

// A row of 2^k elements takes its offset as s1 times 2^-k: the division's bits on every double,
// normal or subnormal (results that underflow, or round to zero), signed zeros, infinities; NaN
// stays NaN.
TEST(Moments, PowerOfTwoCountsDivideByMultiplying) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  std::vector<double> sums;
  for (double v : {0.0, -0.0, 1.0, -3.0, 0x1p-1074, -0x1p-1074, 0x1.8p-1022, 0x1.fffffffffffffp-1011, 0x1p-1000,
                   DBL_MAX, -DBL_MAX, double(INFINITY), -double(INFINITY)}) {
    for (int k = 0; k < 63; ++k) sums.push_back(v);
  }
  for (int i = 0; i < 63 * 300; ++i) {  // random bits: every exponent, subnormals included
    std::uint64_t bits = rng();
    if ((bits >> 52 & 0x7FF) == 0x7FF) bits &= ~(std::uint64_t(1) << 62);  // finite
    double v;
    std::memcpy(&v, &bits, sizeof v);
    sums.push_back(v);
  }
  sums.push_back(NAN);
  const std::size_t n = sums.size();
  auto d_sums = to_device(sums);
  DeviceBuffer<double> d_offset(n), d_quotient(n), d_m2(n), d_m2_divided(n);
  for (auto* b : {&d_offset, &d_quotient, &d_m2, &d_m2_divided}) b->poison();
  offsets_kernel<<<64, 256>>>(d_sums.get(), n, d_offset.get(), d_quotient.get(), d_m2.get(), d_m2_divided.get());
  CUDA_OK(cudaDeviceSynchronize());
  const auto offset = host_copy(d_offset.get(), n), quotient = host_copy(d_quotient.get(), n);
  const auto m2 = host_copy(d_m2.get(), n), m2_divided = host_copy(d_m2_divided.get(), n);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    ASSERT_TRUE(same_bits(offset[i], quotient[i]))
        << "sum " << sums[i] << " over 2^" << i % 63 << ": " << offset[i] << " against " << quotient[i];
    ASSERT_TRUE(same_bits(m2[i], m2_divided[i])) << "sum " << sums[i] << " over 2^" << i % 63 << ": M2";
  }
  EXPECT_TRUE(std::isnan(offset[n - 1]));
  EXPECT_TRUE(std::isnan(quotient[n - 1]));
}

TEST(Moments, SpecialValuesAndTinyCounts) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 10007 : 1000003;
  std::vector<float> v(n, 2.0f);
  for (std::size_t at : {std::size_t(0), n / 2, n - 1}) {
    auto w = v;
    w[at] = NAN;
    auto d = to_device(w);
    EXPECT_TRUE(std::isnan(fr::var(d.get(), n))) << at;
    EXPECT_TRUE(std::isnan(fr::mean(d.get(), n))) << at;
    w[at] = INFINITY;
    upload(d, w);
    EXPECT_TRUE(std::isnan(fr::var(d.get(), n))) << at;  // as torch.var
    EXPECT_EQ(fr::mean(d.get(), n), INFINITY) << at;
    if (at > 0) {  // +inf and -inf: NaN
      w[at / 2] = -INFINITY;
      upload(d, w);
      EXPECT_TRUE(std::isnan(fr::mean(d.get(), n))) << at;
    }
    std::fill(w.begin(), w.end(), INFINITY);  // every element infinite (every shift too)
    upload(d, w);
    EXPECT_EQ(fr::mean(d.get(), n), INFINITY) << at;
  }
  auto d = to_device(v);
  EXPECT_EQ(fr::var(d.get(), n), 0.0f);  // constant data: exactly 0
  EXPECT_TRUE(std::isnan(fr::var(d.get(), 1, 1)));
  EXPECT_EQ(fr::var(d.get(), 1, 0), 0.0f);
  EXPECT_TRUE(std::isnan(fr::var(d.get(), 0, 0)));
  EXPECT_TRUE(std::isnan(fr::mean(d.get(), 0)));
  EXPECT_EQ(fr::moments(d.get(), 0).count, 0);
  const fr::Moments<double> m = fr::reduce(d.get(), n, fr::MeanVar{});  // the op through reduce()
  EXPECT_EQ(m.count, static_cast<std::int64_t>(n));
  EXPECT_EQ(m.mean(), 2.0);
}

namespace {

template <class T>
void check_norms(const std::vector<T>& host, std::size_t offset, std::size_t n, const char* what) {
  auto d = to_device(host);
  const auto x = widened(host, offset, n);
  double linf = 0;
  bool nan = false;
  for (double v : x) {
    linf = std::max(linf, std::fabs(v));
    nan = nan || std::isnan(v);
  }
  // The references in quad, rounded once to double and then to the result type, as ours are (a
  // float result may overflow, or be subnormal with fewer digits): their own error is far below
  // the tolerances, which bound the engine's double accumulation (a chain of at most a few
  // thousand additions at these sizes: 1e-13 relative for L1) and the result's own rounding.
  using S = fr::stat_t<T>;
  const double l1 = quad_norm1(x.data(), n);
  const double l2 = double(S(quad_norm2(x.data(), n)));
  const double tol = std::is_same_v<S, float> ? 1.2e-7 : 1e-14;
  EXPECT_TRUE(close(double(fr::norm(d.get() + offset, n, fr::Norm::L2)), l2, tol)) << what << " n=" << n;
  EXPECT_TRUE(close(double(fr::norm(d.get() + offset, n, fr::Norm::L1)), nan ? NAN : double(S(l1)), std::max(tol, 1e-13)))
      << what << " n=" << n;
  EXPECT_TRUE(close(double(fr::norm(d.get() + offset, n, fr::Norm::Inf)), nan ? NAN : double(S(linf)), 0))
      << what << " n=" << n;
}

}  // namespace

TEST(Norms, EveryTypeAndOffset) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : edge_sizes()) {
    if (n > (std::size_t(1) << 21)) continue;  // the quad reference is slow
    std::mt19937_64 rng(test_seed());
    for (std::size_t offset : {0u, 1u, 3u}) {
      check_norms(random_values<float>(n + 3, rng), offset, n, "float");
      check_norms(random_values<double>(n + 3, rng), offset, n, "double");
      check_norms(random_values<__half>(n + 3, rng), offset, n, "half");
      check_norms(random_values<std::int32_t>(n + 3, rng), offset, n, "int32");
    }
  }
}

TEST(Norms, IntegerValuedDataIsExact) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 100003 : 10000019;
  std::mt19937_64 rng(test_seed());
  std::vector<float> v(n);
  double sq = 0, l1 = 0;
  for (auto& x : v) {
    x = float(int(rng() % 41) - 20);
    sq += double(x) * x;
    l1 += std::fabs(x);
  }
  auto d = to_device(v);
  EXPECT_EQ(fr::norm(d.get(), n, fr::Norm::L1), float(l1));
  EXPECT_EQ(fr::norm(d.get(), n, fr::Norm::L2), float(std::sqrt(sq)));  // the same two roundings
  EXPECT_EQ(fr::norm(d.get(), n, fr::Norm::Inf), 20.0f);
}

TEST(Norms, NoOverflowOrUnderflowNearTheLimits) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 65537 : 4000037;
  std::mt19937_64 rng(test_seed());
  std::uniform_real_distribution<double> u(0.5, 1.0);
  // Floats whose squares overflow float, and subnormals whose squares underflow it.
  for (double scale : {1e34, 1e25, 1e-40, 1e-44}) {  // norms stay below FLT_MAX
    std::vector<float> f(n);
    for (auto& x : f) x = float(u(rng) * scale);
    check_norms(f, 0, n, "float near a limit");
    EXPECT_GT(fr::norm(to_device(f).get(), n), 0.0f);
  }
  // Doubles: huge, tiny, subnormal, and all of them in one array.
  for (double scale : {1e300, 1e200, 1e-160, 1e-300, 1e-315}) {
    std::vector<double> x(n);
    for (auto& v : x) v = u(rng) * scale;
    check_norms(x, 0, n, "double near a limit");
  }
  std::vector<double> mixed(n);
  for (std::size_t i = 0; i < n; ++i) mixed[i] = u(rng) * (i % 3 == 0 ? 1e300 : i % 3 == 1 ? 1e-300 : 1.0);
  check_norms(mixed, 0, n, "double mixed");
  std::vector<double> small_and_medium(n);
  for (std::size_t i = 0; i < n; ++i) small_and_medium[i] = u(rng) * (i % 2 == 0 ? 1e-200 : 1e-150);
  check_norms(small_and_medium, 0, n, "double small and medium");
  // NaN gives NaN; infinity gives infinity; both give NaN.
  for (std::size_t at : {std::size_t(0), n / 2, n - 1}) {
    std::vector<double> x(n, 1.0);
    x[at] = INFINITY;
    auto d = to_device(x);
    for (auto which : {fr::Norm::L1, fr::Norm::L2, fr::Norm::Inf}) EXPECT_EQ(fr::norm(d.get(), n, which), INFINITY);
    x[(at + 1) % n] = NAN;
    upload(d, x);
    for (auto which : {fr::Norm::L1, fr::Norm::L2, fr::Norm::Inf}) EXPECT_TRUE(std::isnan(fr::norm(d.get(), n, which)));
    std::vector<float> y(n, 1.0f);
    y[at] = NAN;
    auto df = to_device(y);
    for (auto which : {fr::Norm::L1, fr::Norm::L2, fr::Norm::Inf}) EXPECT_TRUE(std::isnan(fr::norm(df.get(), n, which)));
  }
}

namespace {

// The bits of a half or bfloat16 significand.
template <class T>
constexpr unsigned kSignificand = std::is_same_v<T, __half> ? 10 : 7;

// Every finite half or bfloat16 value whose exponent field lies in [lo, hi), both signs (zeros and
// subnormals where lo is 0), shuffled, repeated to n elements.
template <class T>
std::vector<T> finite_patterns(unsigned lo, unsigned hi, std::size_t n, std::mt19937_64& rng) {
  std::vector<T> all;
  for (unsigned e = lo; e < hi; ++e) {
    for (unsigned m = 0; m < (1u << kSignificand<T>); ++m) {
      for (unsigned sign : {0u, 0x8000u}) {
        const auto bits = static_cast<std::uint16_t>(sign | (e << kSignificand<T>) | m);
        T x;
        std::memcpy(&x, &bits, 2);
        all.push_back(x);
      }
    }
  }
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % all.size() == 0) std::shuffle(all.begin(), all.end(), rng);
    v[i] = all[i % all.size()];
  }
  return v;
}

// The half types' norms, which widen a vector's elements to double by their bits: every finite
// value of an exponent window, 1-D at three offsets and along rows of several lengths, against
// quad references; then an infinity or NaN among them.
template <class T>
void check_every_pattern(const char* name, unsigned lo, unsigned hi, std::mt19937_64& rng) {
  const std::size_t n = 3 * std::size_t(hi - lo) * (2u << kSignificand<T>) + 5;
  std::vector<T> host = finite_patterns<T>(lo, hi, n + 3, rng);
  const auto where = ::testing::Message() << name << " exponents [" << lo << ", " << hi << ")";
  for (std::size_t offset : {0u, 1u, 3u}) check_norms(host, offset, n, name);
  auto d = to_device(host);
  // Rows at offset 1 (rows of 7 and 256 fold element by element there, longer rows by vectors)
  // and at offset 0 (rows of 2, 4 and 8: vectors of 2, 4 and 8 elements; 256: rows as one array
  // of vectors).
  for (auto [offset, length] : {std::pair<std::size_t, std::size_t>{1, 7}, {1, 256}, {1, 1000}, {1, 4099}, {0, 2}, {0, 4},
                                {0, 8}, {0, 256}}) {
    const std::size_t rows = n / length;
    const fr::Axis axis{rows, length, 1};
    for (auto which : {fr::Norm::L1, fr::Norm::L2, fr::Norm::Inf}) {
      DeviceBuffer<float> out(rows);
      out.poison();
      std::size_t bytes = 0;
      ASSERT_EQ(fr::norm_axis_async(nullptr, bytes, d.get() + offset, out.get(), axis, which), cudaSuccess);
      DeviceBuffer<char> temp(std::max<std::size_t>(bytes, 1));
      ASSERT_EQ(fr::norm_axis_async(temp.get(), bytes, d.get() + offset, out.get(), axis, which), cudaSuccess);
      CUDA_OK(cudaDeviceSynchronize());
      const auto got = host_copy(out.get(), rows);
      for (std::size_t r = 0; r < rows; ++r) {
        const auto row = widened(host, offset + r * length, length);
        double want = 0;
        if (which == fr::Norm::Inf) {
          for (double x : row) want = std::max(want, std::fabs(x));
        } else {
          want = which == fr::Norm::L1 ? quad_norm1(row.data(), length) : quad_norm2(row.data(), length);
        }
        ASSERT_TRUE(close(got[r], double(float(want)), which == fr::Norm::Inf ? 0.0 : 1.2e-7))
            << where << " rows of " << length << " at offset " << offset << ", row " << r << ", norm " << int(which);
      }
    }
  }
  // An infinity among them (beside zeros and subnormals where the window holds them): infinite;
  // a NaN too: NaN. (A bfloat16 infinity read as a finite double would be 2^128, whose norms
  // overflow float anyway: the NaN and half's infinity, read so as 65536, show the test.)
  for (std::size_t at : {std::size_t(0), n / 2 + 1, n - 1}) {
    std::vector<T> x = host;
    x[at] = T(INFINITY);
    upload(d, x);
    for (auto which : {fr::Norm::L1, fr::Norm::L2, fr::Norm::Inf})
      EXPECT_EQ(fr::norm(d.get(), n, which), INFINITY) << where << " inf at " << at;
    x[(at + 5) % n] = T(NAN);
    upload(d, x);
    for (auto which : {fr::Norm::L1, fr::Norm::L2, fr::Norm::Inf})
      EXPECT_TRUE(std::isnan(fr::norm(d.get(), n, which))) << where << " NaN at " << (at + 5) % n;
  }
}

}  // namespace

TEST(Norms, HalfTypesOnEveryFiniteValue) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  // bfloat16: zeros and subnormals up to 2^-103, the middle, values up to 2^101, and the largest
  // (whose L1 and L2 norms overflow float in 1-D: infinite, as the references rounded to float).
  for (auto [lo, hi] : {std::pair{0u, 24u}, {60u, 140u}, {180u, 228u}, {240u, 255u}})
    check_every_pattern<__nv_bfloat16>("bfloat16", lo, hi, rng);
  // half: every finite value, then zeros and subnormals alone.
  check_every_pattern<__half>("half", 0, 31, rng);
  check_every_pattern<__half>("half", 0, 1, rng);
}

TEST(Dot, ExactOnIntegerValuedDataAtEveryOffset) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : edge_sizes()) {
    std::mt19937_64 rng(test_seed());
    std::vector<float> x(n + 3), y(n + 3);
    std::vector<std::int32_t> a(n + 3), b(n + 3);
    for (std::size_t i = 0; i < n + 3; ++i) {
      x[i] = float(int(rng() % 2001) - 1000);
      y[i] = float(int(rng() % 2001) - 1000);
      a[i] = std::int32_t(rng());
      b[i] = std::int32_t(rng());
    }
    auto dx = to_device(x), dy = to_device(y);
    auto da = to_device(a), db = to_device(b);
    for (auto [ox, oy] : {std::pair<std::size_t, std::size_t>{0, 0}, {1, 1}, {1, 3}, {0, 2}}) {
      double want = 0;  // products up to 1e6, sums up to 1e13: exact in double
      std::uint64_t iwant = 0;
      for (std::size_t i = 0; i < n; ++i) {
        want += double(x[ox + i]) * y[oy + i];
        iwant += std::uint64_t(std::int64_t(a[ox + i])) * std::uint64_t(std::int64_t(b[oy + i]));
      }
      EXPECT_EQ(double(fr::dot(dx.get() + ox, dy.get() + oy, n)), double(float(want))) << "n=" << n << " " << ox << oy;
      EXPECT_EQ(fr::dot(da.get() + ox, db.get() + oy, n), std::int64_t(iwant)) << "n=" << n;
    }
  }
}

TEST(Dot, DoublesAgainstQuad) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 100003 : 10000019;
  std::mt19937_64 rng(test_seed());
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = u(rng);
    y[i] = u(rng);
  }
  auto dx = to_device(x), dy = to_device(y);
  EXPECT_TRUE(close(fr::dot(dx.get(), dy.get(), n), quad_dot(x.data(), y.data(), n), 1e-13));
  x[n / 3] = NAN;
  upload(dx, x);
  EXPECT_TRUE(std::isnan(fr::dot(dx.get(), dy.get(), n)));
}

TEST(Stats, MoreThanTwoToThe32Elements) {
  FASTREDUCE_REQUIRE_GPU();
  if (quick()) GTEST_SKIP() << "quick mode";
  const std::size_t n = (std::size_t(1) << 32) + 1000;
  DeviceBuffer<std::uint8_t> in(n);
  if (in.get() == nullptr) GTEST_SKIP() << "4 GB not available";
  CUDA_OK(cudaMemset(in.get(), 1, n));
  const std::uint8_t three = 3;
  CUDA_OK(cudaMemcpy(in.get() + n - 1, &three, 1, cudaMemcpyHostToDevice));
  const fr::Moments<double> m = fr::moments(in.get(), n);
  EXPECT_EQ(m.count, static_cast<std::int64_t>(n));
  const double mean = (double(n) + 2) / double(n);
  EXPECT_TRUE(close(m.mean(), mean, 1e-15));
  // M2 = (n - 1) (mean - 1)^2 + (3 - mean)^2
  const double m2 = double(n - 1) * (mean - 1) * (mean - 1) + (3 - mean) * (3 - mean);
  EXPECT_TRUE(close(m.m2, m2, 1e-9));
  EXPECT_EQ(fr::norm(in.get(), n, fr::Norm::L1), double(n) + 2);
  EXPECT_EQ(fr::dot(in.get(), in.get(), n), static_cast<std::int64_t>(n) + 8);
}

TEST(Stats, BadArguments) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> in(100);
  DeviceBuffer<float> out(1);
  std::size_t bytes = 0;
  ASSERT_EQ(fr::var_async(nullptr, bytes, in.get(), 100, out.get()), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  EXPECT_EQ(fr::var_async(temp.get(), bytes, in.get(), 100, out.get(), -1), cudaErrorInvalidValue);
  EXPECT_EQ(fr::reduce_axis_async(temp.get(), bytes, in.get(), out.get(), fr::Axis{.outer = 10, .length = 10}, fr::Std{-2}),
            cudaErrorInvalidValue);
  EXPECT_EQ(fr::var_async(temp.get(), bytes, static_cast<const float*>(nullptr), 100, out.get()), cudaErrorInvalidValue);
  EXPECT_EQ(fr::dot_async(temp.get(), bytes, in.get(), static_cast<const float*>(nullptr), 100, out.get()),
            cudaErrorInvalidValue);
  std::size_t norm_bytes = 0;
  ASSERT_EQ(fr::norm_async(nullptr, norm_bytes, in.get(), 100, out.get()), cudaSuccess);
  std::size_t small = norm_bytes - 1;
  EXPECT_EQ(fr::norm_async(temp.get(), small, in.get(), 100, out.get()), cudaErrorInvalidValue);
  EXPECT_THROW(fr::var(in.get(), 100, -3), fr::Error);
  fr::Axis huge{std::size_t(1) << 40, std::size_t(1) << 30, 1};
  EXPECT_EQ(fr::var_axis_async(nullptr, bytes, in.get(), out.get(), huge), cudaErrorInvalidValue);
}

// ---------------------------------------------------------------------------------------------
// Axis and segmented forms.

namespace {

struct ToAffine {  // depends on the element and its index along the axis
  __host__ __device__ Affine operator()(std::uint32_t v, std::size_t k) const {
    return {v | 1u, v ^ static_cast<std::uint32_t>(k * 2654435761u)};
  }
};

struct Shape {
  std::size_t outer, length, inner;
};

std::vector<Shape> shapes() {
  return {{1, 1, 1},      {3, 0, 2},     {0, 5, 3},       {7, 33, 1},     {1, 100003, 1}, {5, 9000, 1},
          {4097, 31, 1},  {2, 31, 4099}, {1, 5000, 64},   {3, 17, 9000},  {40, 257, 3},   {2, 20000, 2},
          {9000, 2, 1},   {1, 1, 40000},  {2048, 8192, 1}};  // the last: blocks take several rows each
}

// Element (o, k, i) of a contiguous (outer, length, inner) array.
inline std::size_t at(const Shape& s, std::size_t o, std::size_t k, std::size_t i) {
  return (o * s.length + k) * s.inner + i;
}

template <class T, class O, class Op>
std::size_t axis_temp(const T* in, O* out, const fr::Axis& axis, const Op& op) {
  std::size_t bytes = 0;
  EXPECT_EQ(fr::reduce_axis_async(nullptr, bytes, in, out, axis, op), cudaSuccess);
  return bytes;
}

template <class T, class O, class Op, class Offset>
std::size_t segments_temp(const T* in, O* out, std::size_t count, const Offset* begin, const Offset* end, const Op& op) {
  std::size_t bytes = 0;
  EXPECT_EQ(fr::reduce_segments_async(nullptr, bytes, in, out, count, begin, end, op), cudaSuccess);
  return bytes;
}

}  // namespace

TEST(AxisGeneric, ArgMaxMomentsNormsAndAnOrderedOpOnEveryShape) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  for (const Shape& s : shapes()) {
    const std::size_t count = s.outer * s.length * s.inner, outputs = s.outer * s.inner;
    std::vector<float> x(count);
    for (auto& v : x) v = float(int(rng() % 50));  // ties
    if (count > 10) x[count / 2] = NAN;
    std::vector<std::uint32_t> u(count);
    for (auto& v : u) v = std::uint32_t(rng());
    auto dx = to_device(x);
    auto du = to_device(u);
    DeviceBuffer<fr::Indexed<float>> arg(std::max<std::size_t>(outputs, 1));
    DeviceBuffer<fr::Moments<double>> mom(std::max<std::size_t>(outputs, 1));
    DeviceBuffer<float> var(std::max<std::size_t>(outputs, 1)), l2(std::max<std::size_t>(outputs, 1));
    DeviceBuffer<Affine> aff(std::max<std::size_t>(outputs, 1));
    arg.poison();
    mom.poison();
    var.poison();
    l2.poison();
    aff.poison();
    const fr::Axis axis{s.outer, s.length, s.inner};
    // The temporary storage each op asks for (they differ: their partials differ in size).
    std::size_t bytes = 0;
    for (const std::size_t b : {
             axis_temp(dx.get(), arg.get(), axis, fr::ArgMax{}), axis_temp(dx.get(), mom.get(), axis, fr::MeanVar{}),
             axis_temp(dx.get(), var.get(), axis, fr::Var{1}), axis_temp(dx.get(), l2.get(), axis, fr::NormL2{}),
             axis_temp(du.get(), aff.get(), axis, fr::transformed(ToAffine{}, Compose{}))}) {
      bytes = std::max(bytes, b);
    }
    DeviceBuffer<char> temp(bytes);
    ASSERT_EQ(fr::reduce_axis_async(temp.get(), bytes, dx.get(), arg.get(), axis, fr::ArgMax{}), cudaSuccess);
    ASSERT_EQ(fr::reduce_axis_async(temp.get(), bytes, dx.get(), mom.get(), axis, fr::MeanVar{}), cudaSuccess);
    ASSERT_EQ(fr::var_axis_async(temp.get(), bytes, dx.get(), var.get(), axis, 1), cudaSuccess);
    ASSERT_EQ(fr::norm_axis_async(temp.get(), bytes, dx.get(), l2.get(), axis, fr::Norm::L2), cudaSuccess);
    ASSERT_EQ(fr::transform_reduce_axis_async(temp.get(), bytes, du.get(), aff.get(), axis, ToAffine{}, Compose{}),
              cudaSuccess);
    CUDA_OK(cudaDeviceSynchronize());
    const auto h_arg = host_copy(arg.get(), outputs);
    const auto h_mom = host_copy(mom.get(), outputs);
    const auto h_var = host_copy(var.get(), outputs);
    const auto h_l2 = host_copy(l2.get(), outputs);
    const auto h_aff = host_copy(aff.get(), outputs);
    for (std::size_t o = 0; o < s.outer; ++o) {
      for (std::size_t i = 0; i < s.inner; ++i) {
        const std::size_t out = o * s.inner + i;
        std::int64_t best = s.length == 0 ? INT64_MAX : 0;
        std::vector<double> row(s.length);
        Affine f = Compose{}.identity();
        for (std::size_t k = 0; k < s.length; ++k) {
          const float v = x[at(s, o, k, i)], b = x[at(s, o, std::size_t(best), i)];
          if (!std::isnan(b) && (std::isnan(v) || v > b)) best = std::int64_t(k);
          row[k] = v;
          f = Compose{}(f, ToAffine{}(u[at(s, o, k, i)], k));
        }
        const auto where = ::testing::Message() << s.outer << "x" << s.length << "x" << s.inner << " output " << out;
        ASSERT_EQ(h_arg[out].index, best) << where;
        if (s.length > 0) ASSERT_TRUE(same_bits(h_arg[out].value, x[at(s, o, std::size_t(best), i)])) << where;
        ASSERT_EQ(h_aff[out].a, f.a) << where;
        ASSERT_EQ(h_aff[out].b, f.b) << where;
        ASSERT_EQ(h_mom[out].count, std::int64_t(s.length)) << where;
        const auto ref = quad_moments(row.data(), row.size());
        const double want = s.length > 1 ? ref.m2 / double(s.length - 1) : NAN;
        ASSERT_TRUE(close(h_mom[out].variance(1), want, 1e-12)) << where;
        ASSERT_TRUE(close(h_var[out], want, 1.2e-7)) << where;
        ASSERT_TRUE(close(h_l2[out], quad_norm2(row.data(), row.size()), 1.2e-7)) << where;
      }
    }
  }
}

TEST(AxisGeneric, StridedViewsAndBadShapes) {
  FASTREDUCE_REQUIRE_GPU();
  // A transposed 300 x 500 matrix's row maxima (columns of the stored one, negative outer stride).
  const std::size_t rows = 300, cols = 500;
  std::mt19937_64 rng(test_seed());
  std::vector<double> m(rows * cols);
  for (auto& v : m) v = double(int(rng() % 1000));
  auto d = to_device(m);
  fr::Axis axis{};
  axis.outer = cols;
  axis.length = rows;
  axis.inner = 1;
  axis.outer_stride = -1;  // output o is stored column cols - 1 - o
  axis.length_stride = static_cast<std::ptrdiff_t>(cols);
  axis.inner_stride = 1;
  DeviceBuffer<fr::Indexed<double>> out(cols);
  std::size_t bytes = 0;
  ASSERT_EQ(fr::reduce_axis_async(nullptr, bytes, d.get() + cols - 1, out.get(), axis, fr::ArgMin{}), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  ASSERT_EQ(fr::reduce_axis_async(temp.get(), bytes, d.get() + cols - 1, out.get(), axis, fr::ArgMin{}), cudaSuccess);
  const auto h = host_copy(out.get(), cols);
  for (std::size_t o = 0; o < cols; ++o) {
    const std::size_t c = cols - 1 - o;
    std::size_t best = 0;
    for (std::size_t r = 1; r < rows; ++r) best = m[r * cols + c] < m[best * cols + c] ? r : best;
    ASSERT_EQ(h[o].index, std::int64_t(best)) << o;
    ASSERT_EQ(h[o].value, m[best * cols + c]) << o;
  }
  fr::Axis huge{std::size_t(1) << 62, 4, 4};
  EXPECT_EQ(fr::reduce_axis_async(temp.get(), bytes, d.get(), out.get(), huge, fr::ArgMin{}), cudaErrorInvalidValue);
}

TEST(SegmentsGeneric, ArgMaxAndMomentsWithEmptyAndLongSegments) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  const std::size_t n = quick() ? 200003 : 3000017;
  std::vector<float> x(n);
  for (auto& v : x) v = float(int(rng() % 1000)) * 0.5f;
  auto dx = to_device(x);
  for (std::size_t segments : {std::size_t(3), std::size_t(700), std::size_t(5000)}) {
    std::vector<std::int64_t> begin(segments), end(segments);
    for (std::size_t s = 0; s < segments; ++s) {
      begin[s] = std::int64_t(rng() % n);
      const std::int64_t len = s % 7 == 0 ? 0 : std::int64_t(rng() % (s % 5 == 0 ? 100000 : 300));
      end[s] = s % 11 == 0 ? begin[s] - 1 : std::min<std::int64_t>(begin[s] + len, std::int64_t(n));  // some reversed
    }
    auto db = to_device(begin), de = to_device(end);
    DeviceBuffer<fr::Indexed<float>> arg(segments);
    DeviceBuffer<fr::Moments<double>> mom(segments);
    arg.poison();
    mom.poison();
    std::size_t bytes = std::max(segments_temp(dx.get(), arg.get(), segments, db.get(), de.get(), fr::ArgMax{}),
                                 segments_temp(dx.get(), mom.get(), segments, db.get(), de.get(), fr::MeanVar{}));
    DeviceBuffer<char> temp(bytes);
    ASSERT_EQ(fr::reduce_segments_async(temp.get(), bytes, dx.get(), arg.get(), segments, db.get(), de.get(), fr::ArgMax{}),
              cudaSuccess);
    ASSERT_EQ(fr::reduce_segments_async(temp.get(), bytes, dx.get(), mom.get(), segments, db.get(), de.get(),
                                        fr::MeanVar{}),
              cudaSuccess);
    CUDA_OK(cudaDeviceSynchronize());
    const auto ha = host_copy(arg.get(), segments);
    const auto hm = host_copy(mom.get(), segments);
    for (std::size_t s = 0; s < segments; ++s) {
      const std::int64_t len = std::max<std::int64_t>(end[s] - begin[s], 0);
      std::int64_t best = len == 0 ? INT64_MAX : 0;
      std::vector<double> seg(static_cast<std::size_t>(len));
      for (std::int64_t k = 0; k < len; ++k) {
        seg[std::size_t(k)] = x[std::size_t(begin[s] + k)];
        if (x[std::size_t(begin[s] + k)] > x[std::size_t(begin[s] + best)]) best = k;
      }
      ASSERT_EQ(ha[s].index, best) << "segment " << s << " of " << segments;
      ASSERT_EQ(hm[s].count, len) << "segment " << s;
      if (len > 0) {
        const auto ref = quad_moments(seg.data(), seg.size());
        ASSERT_TRUE(close(hm[s].mean(), ref.mean, 1e-14)) << "segment " << s;
        ASSERT_TRUE(close(hm[s].m2, ref.m2, 1e-11)) << "segment " << s;
      }
    }
  }
}
