// Mode::Reproducible: the same bits for any launch shape, and compensated accuracy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "fastreduce/detail/exact_sum.cuh"
#include "fastreduce/fastreduce.cuh"
#include "gpu_test.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
using namespace fastreduce::testing;

namespace {

template <class T>
fr::acc_t<T, fr::Sum> repro_sum(const T* in, std::size_t n, unsigned max_blocks = 0) {
  const fr::Options opt{.mode = fr::Mode::Reproducible, .max_blocks = max_blocks};
  std::size_t bytes = 0;
  EXPECT_EQ((fr::reduce_async<T, fr::Sum>(nullptr, bytes, in, nullptr, n, fr::Sum{}, 0, opt)), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  DeviceBuffer<fr::acc_t<T, fr::Sum>> out(1);
  out.poison();
  EXPECT_EQ((fr::reduce_async<T, fr::Sum>(temp.get(), bytes, in, out.get(), n, fr::Sum{}, 0, opt)), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return read_back(out.get());
}

template <class T>
void check_launch_shape_independence() {
  FASTREDUCE_REQUIRE_GPU();
  std::vector<std::size_t> sizes = edge_sizes();
  sizes.push_back(4095);
  sizes.push_back(4097);
  sizes.push_back(quick() ? 100003 : 10000019);
  if (!quick()) sizes.push_back((std::size_t(1) << 24) + 4097);  // every block with several tiles, the last one partial
  for (std::size_t n : sizes) {
    DeviceBuffer<T> in(n + 3);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n + 3, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const auto reference = repro_sum(in.get(), n);
    for (unsigned max_blocks : {1u, 3u, 7u, 64u, 132u}) {  // and below: offsets of 1-3 elements
      EXPECT_TRUE(same_bits(repro_sum(in.get(), n, max_blocks), reference)) << "n=" << n << " max_blocks=" << max_blocks;
    }
    DeviceBuffer<T> shifted(n + 3);
    for (std::size_t offset : {1u, 2u, 3u}) {
      CUDA_OK(cudaMemcpy(shifted.get() + offset, in.get(), n * sizeof(T), cudaMemcpyDeviceToDevice));
      EXPECT_TRUE(same_bits(repro_sum(shifted.get() + offset, n), reference)) << "n=" << n << " offset=" << offset;
    }
    // Against the exact sum: within a few ulps of the result.
    const auto host = fr::bench::to_host(in.get(), n);
    const double exact = fr::reference::exact_sum(host.data(), n);
    using A = fr::acc_t<T, fr::Sum>;
    const A rounded = static_cast<A>(exact);
    const double ulp = double(std::nextafter(std::fabs(rounded), std::numeric_limits<A>::infinity())) - std::fabs(double(rounded));
    EXPECT_LE(std::fabs(double(reference) - exact), 2.0 * ulp) << "n=" << n;
  }
}

}  // namespace

TEST(Reproducible, FloatBitsDoNotDependOnTheLaunch) { check_launch_shape_independence<float>(); }
TEST(Reproducible, DoubleBitsDoNotDependOnTheLaunch) { check_launch_shape_independence<double>(); }
TEST(Reproducible, HalfBitsDoNotDependOnTheLaunch) { check_launch_shape_independence<__half>(); }
TEST(Reproducible, Bfloat16BitsDoNotDependOnTheLaunch) { check_launch_shape_independence<__nv_bfloat16>(); }

TEST(Reproducible, HundredRunsIdentical) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 100003 : (std::size_t(1) << 24) + 5;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const float first = repro_sum(in.get(), n);
  for (int i = 0; i < (quick() ? 5 : 100); ++i) ASSERT_TRUE(same_bits(repro_sum(in.get(), n), first)) << i;
}

// d_temp is the caller's scratch: whatever it held before (a memset pattern, random bytes, a
// fast-mode call's partials), the result has the same bits.
template <class T>
void check_foreign_temp_contents(std::size_t n) {
  using A = fr::acc_t<T, fr::Sum>;
  DeviceBuffer<T> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const A reference = repro_sum(in.get(), n);
  const fr::Options opt{.mode = fr::Mode::Reproducible};
  std::size_t bytes = 0, fast_bytes = 0;
  ASSERT_EQ((fr::reduce_async<T, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{}, 0, opt)), cudaSuccess);
  ASSERT_EQ((fr::reduce_async<T, fr::Sum>(nullptr, fast_bytes, in.get(), nullptr, n, fr::Sum{}, 0, {})), cudaSuccess);
  const std::size_t words = (std::max(bytes, fast_bytes) + 7) / 8;
  DeviceBuffer<std::uint64_t> temp(words);
  DeviceBuffer<A> out(1);
  std::size_t temp_bytes = words * 8;
  for (int pattern : {0x00, 0xFF, 0xA5, 0x80, -1 /* random bytes */, -2 /* fast mode's partials */}) {
    if (pattern >= 0) {
      CUDA_OK(cudaMemset(temp.get(), pattern, words * 8));
    } else if (pattern == -1) {
      ASSERT_EQ(fr::bench::fill_random(reinterpret_cast<std::uint32_t*>(temp.get()), 2 * words, test_seed(),
                                       fr::bench::Distribution::Signed),
                cudaSuccess);
    } else {
      ASSERT_EQ((fr::reduce_async<T, fr::Sum>(temp.get(), temp_bytes, in.get(), out.get(), n, fr::Sum{}, 0, {})),
                cudaSuccess);
    }
    out.poison();
    ASSERT_EQ((fr::reduce_async<T, fr::Sum>(temp.get(), temp_bytes, in.get(), out.get(), n, fr::Sum{}, 0, opt)),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(same_bits(read_back(out.get()), reference)) << "n=" << n << " pattern " << pattern;
  }
}

TEST(Reproducible, ForeignBytesInTheTemporaryStorageChangeNothing) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : {std::size_t(100003), (std::size_t(1) << 22) + 5}) {
    check_foreign_temp_contents<float>(n);
    check_foreign_temp_contents<double>(n);
  }
}

// Calls on several streams at once, each with its own d_temp, do not meet.
TEST(Reproducible, ConcurrentStreamsGiveTheSameBits) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = (std::size_t(1) << 22) + 5;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const float reference = repro_sum(in.get(), n);
  constexpr int kStreams = 4, kCalls = 25;
  // A cap below the resident limit, so that several grids can run at once.
  const fr::Options opt{.mode = fr::Mode::Reproducible, .max_blocks = 33};
  std::size_t bytes = 0;
  ASSERT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{}, 0, opt)), cudaSuccess);
  const std::size_t stride = (bytes + 255) / 256 * 256;  // each stream's d_temp as aligned as cudaMalloc's
  DeviceBuffer<char> temps(kStreams * stride);
  std::vector<cudaStream_t> streams(kStreams);
  DeviceBuffer<float> out(kStreams * kCalls);
  out.poison();
  for (cudaStream_t& st : streams) CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int c = 0; c < kCalls; ++c) {
    for (int s = 0; s < kStreams; ++s) {
      ASSERT_EQ((fr::reduce_async<float, fr::Sum>(temps.get() + s * stride, bytes, in.get(), out.get() + s * kCalls + c, n,
                                                  fr::Sum{}, streams[s], opt)),
                cudaSuccess);
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> results(kStreams * kCalls);
  CUDA_OK(cudaMemcpy(results.data(), out.get(), results.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < results.size(); ++i) EXPECT_TRUE(same_bits(results[i], reference)) << i;
  for (cudaStream_t st : streams) CUDA_OK(cudaStreamDestroy(st));
}

// Adversarial data against the exact (correctly rounded) sum.
template <class T>
std::vector<T> adversarial(int kind, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0:  // magnitudes spanning 1e-8 .. 1e8, random signs
        v[i] = static_cast<T>((unit(rng) < 0.5 ? -1 : 1) * std::pow(10.0, -8 + 16 * unit(rng)));
        break;
      case 1:  // large cancelling pairs with small values in between
        v[i] = i % 3 == 2 ? static_cast<T>(1e-3 * unit(rng)) : static_cast<T>(0);
        if (i % 3 == 0) {
          const T big = static_cast<T>(1e7 * (1 + unit(rng)));
          v[i] = big;
          if (i + 1 < n) v[i + 1] = -big;
        }
        break;
      default:  // sum near zero from values of order one
        v[i] = static_cast<T>(unit(rng) - 0.5);
        break;
    }
  }
  if (kind == 1) std::shuffle(v.begin(), v.end(), rng);
  return v;
}

template <class T>
void check_accuracy() {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = quick() ? 50001 : 2000003;
  for (int kind = 0; kind < 3; ++kind) {
    for (bool sorted : {false, true}) {
      auto host = adversarial<T>(kind, n, test_seed());
      if (sorted) std::sort(host.begin(), host.end(), [](T a, T b) { return std::fabs(a) < std::fabs(b); });
      DeviceBuffer<T> in(n);
      CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
      const double exact = fr::reference::exact_sum(host.data(), n);
      const T got = repro_sum(in.get(), n);
      const T rounded = static_cast<T>(exact);
      const double ulp = double(std::nextafter(std::fabs(rounded), std::numeric_limits<T>::infinity())) - std::fabs(double(rounded));
      EXPECT_LE(std::fabs(double(got) - exact), 2.0 * ulp) << "kind " << kind << " sorted " << sorted << " exact " << exact
                                                           << " got " << double(got);
    }
  }
}

TEST(Reproducible, FloatWithinTwoUlpsOnAdversarialData) { check_accuracy<float>(); }
TEST(Reproducible, DoubleWithinTwoUlpsOnAdversarialData) { check_accuracy<double>(); }

TEST(Reproducible, NonSumOpsTakeTheExactFastPath) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 100003;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), n);
  EXPECT_EQ(fr::reduce(in.get(), n, fr::Max{}, {.mode = fr::Mode::Reproducible}), fr::reference::reduce(host.data(), n, fr::Max{}));
  DeviceBuffer<std::int64_t> ints(n);
  ASSERT_EQ(fr::bench::fill_random(ints.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const auto hi = fr::bench::to_host(ints.get(), n);
  EXPECT_EQ(fr::reduce(ints.get(), n, fr::Sum{}, {.mode = fr::Mode::Reproducible}), fr::reference::reduce(hi.data(), n, fr::Sum{}));
  EXPECT_THROW((void)fr::reduce(in.get(), n, fr::Prod{}, {.mode = fr::Mode::Reproducible}), fr::Error);
}

// n elements of T, zero but for the (index, value) pairs of `placed`, summed in reproducible
// mode with each of `max_blocks`: the result must have the bits of `expected` (any NaN for NaN).
template <class T>
using Placed = std::vector<std::pair<std::size_t, fr::acc_t<T, fr::Sum>>>;

template <class T>
void expect_placed_sum(std::size_t n, const Placed<T>& placed, fr::acc_t<T, fr::Sum> expected,
                       std::initializer_list<unsigned> max_blocks) {
  std::vector<T> host(n, T(0.0f));
  for (const auto& [index, value] : placed) host[index] = T(value);
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  for (unsigned blocks : max_blocks) {
    const auto got = repro_sum(in.get(), n, blocks);
    EXPECT_TRUE(same_bits(got, expected) || (std::isnan(got) && std::isnan(expected)))
        << "got " << std::hexfloat << got << " expected " << expected << " max_blocks " << blocks;
  }
}

// Tile partials meet in an exact accumulator and are rounded once: values placed in different
// tiles (4096 elements apart) give the correctly rounded sum, ties to even, sticky bits below
// the tie, subnormal results, and intermediate sums beyond the type's range.
template <class T>
void check_rounds_once_across_tiles(const std::vector<T>& values, T expected) {
  const std::size_t tile = 4096;
  Placed<T> placed;
  for (std::size_t i = 0; i < values.size(); ++i) placed.emplace_back(i * tile + 7 * i, values[i]);  // a different lane each time
  expect_placed_sum<T>(values.size() * tile + 5, placed, expected, {0u, 1u, 2u});
}

TEST(Reproducible, FloatTilePartialsAreRoundedOnce) {
  FASTREDUCE_REQUIRE_GPU();
  const float one_up = std::nextafter(1.0f, 2.0f);
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float inf = std::numeric_limits<float>::infinity();
  check_rounds_once_across_tiles<float>({1.0f, 0x1p-24f}, 1.0f);                  // a tie: to even
  check_rounds_once_across_tiles<float>({1.0f, 0x1p-24f, 0x1p-60f}, one_up);      // just above the tie
  check_rounds_once_across_tiles<float>({1.0f, 0x1p-24f, 0x1p-100f}, one_up);     // sticky bit three limbs down
  check_rounds_once_across_tiles<float>({-1.0f, -0x1p-24f, -0x1p-60f}, -one_up);  // the same, negative
  check_rounds_once_across_tiles<float>({1.0f, -1.0f, tiny}, tiny);               // a subnormal result
  check_rounds_once_across_tiles<float>({3e38f, 3e38f, -3e38f}, 3e38f);           // 6e38 on the way
  check_rounds_once_across_tiles<float>({-0x1p100f, 0x1p100f, -0x1p-100f}, -0x1p-100f);
  check_rounds_once_across_tiles<float>({inf, 1.0f}, inf);
  check_rounds_once_across_tiles<float>({-inf, 1.0f}, -inf);
  check_rounds_once_across_tiles<float>({inf, -inf}, std::numeric_limits<float>::quiet_NaN());
}

TEST(Reproducible, DoubleTilePartialsAreRoundedOnce) {
  FASTREDUCE_REQUIRE_GPU();
  const double one_up = std::nextafter(1.0, 2.0);
  const double tiny = std::numeric_limits<double>::denorm_min();
  check_rounds_once_across_tiles<double>({1.0, 0x1p-53}, 1.0);
  check_rounds_once_across_tiles<double>({1.0, 0x1p-53, 0x1p-100}, one_up);
  check_rounds_once_across_tiles<double>({1e300, -1e300, 1e-300}, 1e-300);
  check_rounds_once_across_tiles<double>({1.0, -1.0, tiny}, tiny);
  check_rounds_once_across_tiles<double>({-1e308, -1e308, 1e308}, -1e308);
  check_rounds_once_across_tiles<double>({std::numeric_limits<double>::quiet_NaN(), 1.0},
                                         std::numeric_limits<double>::quiet_NaN());
}

// Float-valued sums add every lane's partial exactly (no rounding between lanes): values in
// one tile, each in a lane of its own, give the correctly rounded sum. The last value sits more
// than 106 bits under the first: a double-double combine of the lanes would drop it, leave the
// tie 1 + 2^-24 and round it to even, 1.0.
template <class T>
void check_rounds_once_across_lanes(const std::vector<float>& values, float expected) {
  // Elements 4, 24, 44, ...: lanes 1, 6, 11, ... for float, 0, 3, 5, ... for 8-element vectors.
  Placed<T> placed;
  for (std::size_t i = 0; i < values.size(); ++i) placed.emplace_back(4 * (5 * i + 1), values[i]);
  expect_placed_sum<T>(4096 + 3, placed, expected, {0u, 1u});
}

TEST(Reproducible, FloatLanePartialsAreRoundedOnce) {
  FASTREDUCE_REQUIRE_GPU();
  const float one_up = std::nextafter(1.0f, 2.0f);
  check_rounds_once_across_lanes<float>({1.0f, 0x1p-24f, 0x1p-60f, -0x1p-60f, 0x1p-130f}, one_up);
  check_rounds_once_across_lanes<float>({0x1p-130f, 0x1p-60f, -0x1p-60f, 0x1p-24f, 1.0f}, one_up);
  check_rounds_once_across_lanes<float>({-1.0f, -0x1p-24f, -0x1p-60f, 0x1p-60f, -0x1p-130f}, -one_up);
  check_rounds_once_across_lanes<float>({1.0f, 0x1p-24f}, 1.0f);  // the tie itself: to even
  check_rounds_once_across_lanes<__nv_bfloat16>({1.0f, 0x1p-24f, 0x1p-60f, -0x1p-60f, 0x1p-130f}, one_up);
}

// A lane's even and odd elements are two float chains, joined in double with TwoSum: their
// sum may exceed the float range while the whole sum does not (no overflow, no NaN), and the
// join's own rounding error is kept.
template <class T>
void check_lane_chain_joins() {
  const float big = static_cast<float>(T(3e38f));  // the value as T holds it
  const float one_up = std::nextafter(1.0f, 2.0f);
  struct Case {
    Placed<T> values;
    float expected;
  };
  const Case cases[] = {
      {{{0, big}, {1, big}, {4096, -big}}, big},                    // lane 0's chains meet at 2 big
      {{{0, big}, {1, big}, {16, -big}, {17, -big}}, 0.0f},         // and cancel in another lane
      {{{2 * 4096 + 1, big}, {2 * 4096 + 2, big}, {0, -big}}, big},  // in the last, partial tile
      // 1 + 2^-100 rounds to 1 in double: the join's error carries 2^-100, which lifts the tie
      // 1 + 2^-24 (2^-24 in another lane) above it.
      {{{0, 1.0f}, {1, 0x1p-100f}, {16, 0x1p-24f}}, one_up},
  };
  for (const Case& c : cases) expect_placed_sum<T>(2 * 4096 + 5, c.values, c.expected, {0u, 1u});
}

TEST(Reproducible, FloatLaneChainsJoinExactlyWithoutOverflow) {
  FASTREDUCE_REQUIRE_GPU();
  check_lane_chain_joins<float>();
  check_lane_chain_joins<__nv_bfloat16>();
}

// The exact accumulators hold up to 2^40 elements' partials: beyond that the call is refused
// with the documented error, at the size query already and before anything is launched or written.
TEST(Reproducible, MoreThan2To40ElementsAreRefusedAndNothingIsWritten) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = std::size_t(1) << 40;  // never read: the call must stop before the launch
  const fr::Options opt{.mode = fr::Mode::Reproducible};
  DeviceBuffer<float> in(16), out(1);
  std::size_t bytes = 0;
  EXPECT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{}, 0, opt)),
            cudaErrorNotSupported);
  ASSERT_EQ((fr::reduce_async<float, fr::Sum>(nullptr, bytes, in.get(), nullptr, n - 1, fr::Sum{}, 0, opt)), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  out.poison();
  const float poisoned = read_back(out.get());
  EXPECT_EQ((fr::reduce_async<float, fr::Sum>(temp.get(), bytes, in.get(), out.get(), n, fr::Sum{}, 0, opt)),
            cudaErrorNotSupported);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(same_bits(read_back(out.get()), poisoned));
  try {
    (void)fr::reduce(in.get(), n, fr::Sum{}, opt);
    ADD_FAILURE() << "no exception";
  } catch (const fr::Error& e) {
    EXPECT_EQ(e.code(), cudaErrorNotSupported);
    EXPECT_NE(std::string(e.what()).find("2^40"), std::string::npos) << e.what();
  }
}

// The block layout the size query counts (tests/cpu/plan_test.cpp uses these numbers).
static_assert(fr::primitives::kExactRowWords<float> == 33 && fr::primitives::kExactRowWords<double> == 97);

// Thousands of tiles, each holding one value (so each tile partial is that value, exactly), of
// both signs and many magnitudes: every carry and borrow between limbs is exercised, and the
// result must be the correctly rounded sum, bit for bit, for any grid.
template <class T>
void check_exact_over_many_tiles(int min_exponent, int max_exponent) {
  const std::size_t tiles = 3001, tile = 4096, n = tiles * tile;
  std::mt19937_64 rng(test_seed());
  std::uniform_int_distribution<int> exponent(min_exponent, max_exponent);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::vector<T> host(n, T(0));
  std::vector<double> values;
  for (std::size_t t = 0; t < tiles; ++t) {
    const double sign = rng() % 2 ? -1.0 : 1.0;
    const T v = static_cast<T>(sign * std::ldexp(mantissa(rng), exponent(rng)));
    host[t * tile + (t * 37) % tile] = v;
    values.push_back(double(v));
  }
  // float: every value is a multiple of 2^(min_exponent - 23) below 2^(max_exponent + 13), so
  // the exact sum fits a double and one rounding to float is the correct one.
  const T expected = static_cast<T>(fr::reference::exact_sum(values.data(), values.size()));
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  for (unsigned max_blocks : {0u, 1u, 7u}) {
    const T got = repro_sum(in.get(), n, max_blocks);
    EXPECT_TRUE(same_bits(got, expected)) << std::hexfloat << "got " << got << " expected " << expected
                                          << " max_blocks " << max_blocks;
  }
}

TEST(Reproducible, FloatIsCorrectlyRoundedWhenTilePartialsAreExact) {
  FASTREDUCE_REQUIRE_GPU();
  check_exact_over_many_tiles<float>(-8, 7);
}

TEST(Reproducible, DoubleIsCorrectlyRoundedWhenTilePartialsAreExact) {
  FASTREDUCE_REQUIRE_GPU();
  check_exact_over_many_tiles<double>(-300, 300);
}
