// Mode::Exact and Mode::Reproducible for the family's sum-like ops. The L1 norm of floating-point
// inputs runs on the sums' own kernels with each element's sign bit cleared as it is loaded, so on
// every shape (1-D, rows, columns, strided views, segments) and in both modes its bits must equal
// the built-in Sum's of the magnitudes, and in Mode::Exact the correctly rounded sum of |x| (the
// big-integer reference, bench/reference.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fastreduce/detail/describe.hpp"
#include "fastreduce/detail/exact_axis.cuh"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "exact_data.hpp"
#include "gpu_test.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;
using namespace fastreduce::testing;

namespace {

template <class T>
using Acc = fr::acc_t<T, fr::Sum>;

template <class A>
bool same_result(A got, A expected) {
  return same_bits(got, expected) || (std::isnan(double(got)) && std::isnan(double(expected)));
}

// |x| by the bits, as the kernels take it.
template <class T>
std::vector<T> magnitudes(const std::vector<T>& x) {
  std::vector<T> m(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &x[i], sizeof(T));
    bytes[sizeof(T) - 1] &= 0x7F;
    std::memcpy(&m[i], bytes, sizeof(T));
  }
  return m;
}

template <class T>
std::vector<Acc<T>> copy_back(const DeviceBuffer<Acc<T>>& out, std::size_t n) {
  std::vector<Acc<T>> h(n);
  if (n > 0) EXPECT_EQ(cudaMemcpy(h.data(), out.get(), n * sizeof(Acc<T>), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// The L1 norm of x and the built-in Sum of |x|, through the two-phase contract, outputs poisoned.
// `run(temp, bytes, out, l1)` makes one call (l1: the norm of x, else the Sum of |x|).
template <class T, class Run>
std::pair<std::vector<Acc<T>>, std::vector<Acc<T>>> both(std::size_t outputs, Run&& run) {
  std::vector<Acc<T>> results[2];
  for (int l1 = 0; l1 < 2; ++l1) {
    DeviceBuffer<Acc<T>> out(std::max<std::size_t>(outputs, 1));
    out.poison();
    std::size_t bytes = 0;
    EXPECT_EQ(run(nullptr, bytes, out.get(), l1 == 1), cudaSuccess);
    DeviceBuffer<char> temp(bytes);
    EXPECT_EQ(run(temp.get(), bytes, out.get(), l1 == 1), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    results[l1] = copy_back<T>(out, outputs);
  }
  return {results[1], results[0]};
}

std::string mode_name(fr::Mode m) { return m == fr::Mode::Exact ? "exact" : "reproducible"; }

// Elements of output (o, i) of an axis over `host` from `origin`, gathered with the layout's strides.
template <class T>
std::vector<T> axis_elements(const std::vector<T>& host, std::size_t origin, const fr::Axis& axis, std::size_t o,
                             std::size_t i) {
  const std::int64_t os = axis.outer_stride == fr::Axis::kContiguous ? std::int64_t(axis.length * axis.inner) : axis.outer_stride;
  const std::int64_t ls = axis.length_stride == fr::Axis::kContiguous ? std::int64_t(axis.inner) : axis.length_stride;
  const std::int64_t is = axis.inner_stride == fr::Axis::kContiguous ? 1 : axis.inner_stride;
  std::vector<T> e(axis.length);
  for (std::size_t k = 0; k < axis.length; ++k) {
    e[k] = host[std::size_t(std::int64_t(origin) + std::int64_t(o) * os + std::int64_t(k) * ls + std::int64_t(i) * is)];
  }
  return e;
}

template <class T>
void check_l1(int kind) {
  using A = Acc<T>;
  const bool q = quick();
  const std::size_t n = q ? 1100000 : 1500000;  // above the largest 1-D size, 2^20 + 3, and its offset
  const std::vector<T> x = exact_data<T>(kind, n, test_seed() + std::uint64_t(kind));
  const std::vector<T> m = magnitudes(x);
  DeviceBuffer<T> dx(n), dm(n);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dm.get(), m.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = std::string(kExactDataSets[kind]) + ", " + (sizeof(T) == 2 ? "16-bit" : sizeof(T) == 4 ? "float" : "double");
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const bool exact = mode == fr::Mode::Exact;
    // 1-D: sizes around the tile and the grid, aligned and an element off, two grids.
    for (std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(1) << 20 | 3}) {
      for (std::size_t offset : {0u, 1u}) {
        for (unsigned max_blocks : {0u, 3u}) {
          const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
          auto [l1, sum] = both<T>(1, [&](void* temp, std::size_t& bytes, A* out, bool norm) {
            return norm ? fr::reduce_async(temp, bytes, dx.get() + offset, out, size, fr::NormL1{}, 0, opt)
                        : fr::reduce_async<T, fr::Sum>(temp, bytes, dm.get() + offset, out, size, fr::Sum{}, 0, opt);
          });
          EXPECT_TRUE(same_result(l1[0], sum[0])) << what << ", " << mode_name(mode) << ", n " << size << " + " << offset
                                                  << std::hexfloat << ": L1 " << double(l1[0]) << ", Sum of |x| " << double(sum[0]);
          if (exact) {
            const A expected = static_cast<A>(fr::reference::exact_rounded<A>(m.data() + offset, size));
            EXPECT_TRUE(same_result(l1[0], expected)) << what << ", n " << size << " + " << offset << std::hexfloat << ": L1 "
                                                      << double(l1[0]) << ", exact rounded " << double(expected);
          }
        }
      }
    }
    // Along axes: rows on both sides of the exact check's bound, columns, views; segments.
    constexpr std::size_t kMax = eng::kExactCheckMaxLength<A>;
    struct Shape {
      fr::Axis axis;
      std::size_t origin;
    };
    std::vector<Shape> shapes = {
        {{2053, 1, 1}, 0},     {{1031, 3, 1}, 1},      {{1000, 33, 1}, 0},        {{300, 256, 1}, 0},
        {{37, kMax, 1}, 0},    {{5, kMax + 1, 1}, 0},  {{2, 70001, 1}, 1},        {{3, 5, 100}, 0},
        {{3, 4099, 32}, 0},    {{2, 1000, 33}, 0},     {{1, n / 3, 3}, 0},
        {{1, 300, 200, fr::Axis::kContiguous, 1, 300}, 0},
        {{1, 300, 200, fr::Axis::kContiguous, -200, -1}, 299 * 200 + 199},
        {{1, 4099, 200, fr::Axis::kContiguous, 1, 4099}, 0},  // transposed, past the check's bound
    };
    for (const Shape& s : shapes) {
      const fr::Axis& axis = s.axis;
      const std::size_t outputs = axis.outer * axis.inner;
      const fr::Options opt{.mode = mode};
      auto [l1, sum] = both<T>(outputs, [&](void* temp, std::size_t& bytes, A* out, bool norm) {
        return norm ? fr::reduce_axis_async(temp, bytes, dx.get() + s.origin, out, axis, fr::NormL1{}, 0, opt)
                    : fr::reduce_axis_async<T, fr::Sum>(temp, bytes, dm.get() + s.origin, out, axis, fr::Sum{}, 0, opt);
      });
      if (exact && axis.length > 1 && axis.length <= kMax) {
        // The short axes take the fast paths with the exact check, as the Sum does.
        eng::AxisPlan plan{};
        ASSERT_EQ(eng::describe_axis_reduction<eng::l1_reduction<T>>({dx.get() + s.origin}, axis, opt, plan), cudaSuccess);
        EXPECT_NE(plan.path, eng::AxisPath::ReproRows) << what << ": " << axis.outer << " x " << axis.length;
        EXPECT_NE(plan.path, eng::AxisPath::ReproColumns) << what << ": " << axis.outer << " x " << axis.length;
      }
      int failures = 0;
      for (std::size_t o = 0; o < axis.outer; ++o) {
        for (std::size_t i = 0; i < axis.inner; ++i) {
          const std::size_t q_ = o * axis.inner + i;
          bool ok = same_result(l1[q_], sum[q_]);
          A expected = sum[q_];
          if (exact) {
            const std::vector<T> e = axis_elements(m, s.origin, axis, o, i);
            expected = static_cast<A>(fr::reference::exact_rounded<A>(e.data(), e.size()));
            ok = ok && same_result(l1[q_], expected);
          }
          if (!ok && ++failures <= 3) {
            ADD_FAILURE() << what << ", " << mode_name(mode) << ": output (" << o << ", " << i << ") of " << axis.outer
                          << " x " << axis.length << " x " << axis.inner << std::hexfloat << ": L1 " << double(l1[q_])
                          << ", Sum of |x| " << double(sum[q_]) << ", expected " << double(expected);
          }
        }
      }
    }
    // Segments: empty, reversed, short and long.
    std::mt19937_64 rng(test_seed() + 17);
    const std::size_t count = 300;
    std::vector<std::int64_t> begin(count), end(count);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t length =
          k % 17 == 0 ? 0 : static_cast<std::size_t>(std::pow(2.0, 20.0 * std::pow(double(rng() % 1000) / 1000.0, 3)));
      begin[k] = std::int64_t(rng() % (n - std::min(length, n - 1)));
      end[k] = k % 23 == 5 ? begin[k] - 3 : std::int64_t(std::min<std::size_t>(std::size_t(begin[k]) + length, n));
    }
    DeviceBuffer<std::int64_t> db(count), de(count);
    CUDA_OK(cudaMemcpy(db.get(), begin.data(), count * 8, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(de.get(), end.data(), count * 8, cudaMemcpyHostToDevice));
    const fr::Options opt{.mode = mode};
    auto [l1, sum] = both<T>(count, [&](void* temp, std::size_t& bytes, A* out, bool norm) {
      return norm ? fr::reduce_segments_async(temp, bytes, dx.get(), out, count, db.get(), de.get(), fr::NormL1{}, 0, opt)
                  : fr::reduce_segments_async<T, fr::Sum>(temp, bytes, dm.get(), out, count, db.get(), de.get(),
                                                          fr::Sum{}, 0, opt);
    });
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t length = std::size_t(std::max<std::int64_t>(end[k] - begin[k], 0));
      A expected = sum[k];
      if (exact) expected = static_cast<A>(fr::reference::exact_rounded<A>(m.data() + begin[k], length));
      EXPECT_TRUE(same_result(l1[k], sum[k]) && same_result(l1[k], expected))
          << what << ", " << mode_name(mode) << ": segment " << k << " of length " << length << std::hexfloat << ": L1 "
          << double(l1[k]) << ", Sum of |x| " << double(sum[k]) << ", expected " << double(expected);
    }
  }
}

template <class T>
void check_l1_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  // normal, wide range, cancellation, subnormal, sum overflows (|x| sums overflow where signed ones
  // cancel), every exponent, NaN and infinities
  for (int kind : {1, 2, 3, 4, 6, 7, 8}) check_l1<T>(kind);
}

}  // namespace

TEST(ExactOps, FloatNormL1IsTheExactSumOfMagnitudes) { check_l1_every_data_set<float>(); }
TEST(ExactOps, DoubleNormL1IsTheExactSumOfMagnitudes) { check_l1_every_data_set<double>(); }
TEST(ExactOps, HalfNormL1IsTheExactSumOfMagnitudes) { check_l1_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16NormL1IsTheExactSumOfMagnitudes) { check_l1_every_data_set<__nv_bfloat16>(); }

// The family's other sum-like ops keep refusing the modes, with the message naming what has them.
TEST(ExactOps, OpsWithoutAnExactFormAreRefused) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> in(1000);
  DeviceBuffer<float> out(1);
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const fr::Options opt{.mode = mode};
    std::size_t bytes = 0;
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, in.get(), out.get(), 1000, fr::NormL2{}, 0, opt), cudaErrorNotSupported);
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, in.get(), out.get(), 1000, fr::Mean{}, 0, opt), cudaErrorNotSupported);
    // Integers' L1 norm (a double of int64 magnitudes) has no such form either.
    DeviceBuffer<std::int32_t> ints(10);
    DeviceBuffer<double> dout(1);
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, ints.get(), dout.get(), 10, fr::NormL1{}, 0, opt), cudaErrorNotSupported);
  }
}
