// Mode::Exact and Mode::Reproducible for the family's sum-like ops. The L1 norm of floating-point
// inputs runs on the sums' own kernels with each element's sign bit cleared as it is loaded, so on
// every shape (1-D, rows, columns, strided views, segments) and in both modes its bits must equal
// the built-in Sum's of the magnitudes, and in Mode::Exact the correctly rounded sum of |x| (the
// big-integer reference, bench/reference.hpp). The mean runs on the same kernels and divides the
// exact total by the count: in Mode::Exact it must be the exact quotient rounded once (the
// reference's long division) on every shape, ties included; in Mode::Reproducible its bits must
// not depend on the grid, and an output along an axis or a segment must equal the 1-D mean of its
// elements alone. The L2 norm of float, half and bfloat16 inputs is the square root of the exact
// sum of squares: in both modes its bits must equal the big-integer reference's sum of the squares
// rounded to double, its square root rounded to double, then to float. The dot product of the same
// types must be the big-integer reference's sum of the products rounded once to float (both: 1-D,
// and every output of rows, columns, strided views and segments); the variance and standard
// deviation (1-D), n sum x^2 - (sum x)^2 from the exact sums (the reference's own big integers),
// rounded to double and divided as the library documents.
#include <algorithm>
#include <bit>
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

// One call (1-D, an axis, segments) through the two-phase contract, outputs poisoned:
// `run(temp, bytes, out)`.
template <class T, class Run>
std::vector<Acc<T>> run_call(std::size_t outputs, Run&& run) {
  DeviceBuffer<Acc<T>> out(std::max<std::size_t>(outputs, 1));
  out.poison();
  std::size_t bytes = 0;
  EXPECT_EQ(run(nullptr, bytes, out.get()), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  EXPECT_EQ(run(temp.get(), bytes, out.get()), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return copy_back<T>(out, outputs);
}

// The L1 norm of x and the built-in Sum of |x|: `run(temp, bytes, out, l1)` makes one call (l1:
// the norm of x, else the Sum of |x|).
template <class T, class Run>
std::pair<std::vector<Acc<T>>, std::vector<Acc<T>>> both(std::size_t outputs, Run&& run) {
  std::vector<Acc<T>> sum = run_call<T>(outputs, [&](void* temp, std::size_t& bytes, Acc<T>* out) {
    return run(temp, bytes, out, false);
  });
  std::vector<Acc<T>> l1 = run_call<T>(outputs, [&](void* temp, std::size_t& bytes, Acc<T>* out) {
    return run(temp, bytes, out, true);
  });
  return {l1, sum};
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

// The axes the L2 norm's, dot product's and variance's exact tests take over an input of n
// elements (from `origin`): short rows and columns (the fast paths with their checks), rows of the
// exact lanes' warp and block kernels (long rows in pieces), columns (in pieces too), transposed and
// reversed views, and one strided output.
struct AxisShape {
  fr::Axis axis;
  std::size_t origin;
};
std::vector<AxisShape> every_axis_shape(std::size_t n) {
  constexpr std::int64_t C = fr::Axis::kContiguous;
  return {
      {{2053, 1, 1}, 0},      {{1031, 3, 1}, 1},      {{1000, 33, 1}, 0},    {{37, 1025, 1}, 0},
      {{20, 4097, 1}, 1},     {{2, 70001, 1}, 0},     {{2, n / 2 - 1, 1}, 1}, {{3, 5, 100}, 0},
      {{3, 4099, 32}, 0},     {{2, 1000, 33}, 1},     {{1, n / 3, 3}, 0},
      {{1, 300, 200, C, 1, 300}, 0},
      {{1, 300, 200, C, -200, -1}, 299 * 200 + 199},
      {{1, 500, 1, C, 2, C}, 1},  // one output, every other element
  };
}

// 300 segments of an input of n elements, on the host and the device: every 17th empty, every
// 23rd reversed (end before begin), the others of power-law lengths up to 2^20.
struct Segments {
  std::size_t count = 300;
  std::vector<std::int64_t> begin, end;
  DeviceBuffer<std::int64_t> d_begin{300}, d_end{300};
  Segments(std::size_t n, std::uint64_t seed) : begin(count), end(count) {
    std::mt19937_64 rng(seed);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t length =
          k % 17 == 0 ? 0 : static_cast<std::size_t>(std::pow(2.0, 20.0 * std::pow(double(rng() % 1000) / 1000.0, 3)));
      begin[k] = std::int64_t(rng() % (n - std::min(length, n - 1)));
      end[k] = k % 23 == 5 ? begin[k] - 3 : std::int64_t(std::min<std::size_t>(std::size_t(begin[k]) + length, n));
    }
    EXPECT_EQ(cudaMemcpy(d_begin.get(), begin.data(), count * 8, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d_end.get(), end.data(), count * 8, cudaMemcpyHostToDevice), cudaSuccess);
  }
};

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
        {{257, 2048 / sizeof(T), 1}, 0},  // rows of 2 KB: a warp's run each (RowsLanes)
        {{37, kMax, 1}, 0},    {{5, kMax + 1, 1}, 0},  {{2, 70001, 1}, 1},        {{3, 5, 100}, 0},
        {{200, 3000, 1}, 1},   {{3, 2000, 50}, 0},  // (float-valued: the wide check)
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
    Segments segs(n, test_seed() + 17);
    const fr::Options opt{.mode = mode};
    auto [l1, sum] = both<T>(segs.count, [&](void* temp, std::size_t& bytes, A* out, bool norm) {
      const std::int64_t *b = segs.d_begin.get(), *e = segs.d_end.get();
      return norm ? fr::reduce_segments_async(temp, bytes, dx.get(), out, segs.count, b, e, fr::NormL1{}, 0, opt)
                  : fr::reduce_segments_async<T, fr::Sum>(temp, bytes, dm.get(), out, segs.count, b, e,
                                                          fr::Sum{}, 0, opt);
    });
    for (std::size_t k = 0; k < segs.count; ++k) {
      const std::size_t length = std::size_t(std::max<std::int64_t>(segs.end[k] - segs.begin[k], 0));
      A expected = sum[k];
      if (exact) expected = static_cast<A>(fr::reference::exact_rounded<A>(m.data() + segs.begin[k], length));
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

namespace {

template <class T>
using MeanR = eng::mean_reduction<T>;

// The reproducible 1-D mean of `e` (copied to the device).
template <class T>
Acc<T> mean_1d(const std::vector<T>& e, fr::Mode mode) {
  DeviceBuffer<T> d(std::max<std::size_t>(e.size(), 1));
  if (!e.empty()) EXPECT_EQ(cudaMemcpy(d.get(), e.data(), e.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  const fr::Options opt{.mode = mode};
  return run_call<T>(1, [&](void* temp, std::size_t& bytes, Acc<T>* out) {
    return fr::reduce_async(temp, bytes, d.get(), out, e.size(), fr::Mean{}, 0, opt);
  })[0];
}

// Data set `kind` (kExactDataSets), or kind -1: integer values, whose reproducible sums are exact
// (so Mode::Reproducible's mean is the exact one there too).
template <class T>
std::vector<T> mean_data(int kind, std::size_t n, std::uint64_t seed) {
  if (kind >= 0) return exact_data<T>(kind, n, seed);
  std::mt19937_64 rng(seed);
  const long range = sizeof(T) == 2 ? 1000 : 1000000;
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(static_cast<float>(static_cast<long>(rng() % (2 * range + 1)) - range));
  return v;
}

template <class T>
void check_mean(int kind) {
  using A = Acc<T>;
  const bool q = quick();
  const std::size_t n = q ? 1100000 : 1500000;
  const std::vector<T> x = mean_data<T>(kind, n, test_seed() + 31 + std::uint64_t(kind + 1));
  DeviceBuffer<T> dx(n);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = std::string(kind >= 0 ? kExactDataSets[kind] : "integers") + ", " +
                           (sizeof(T) == 2 ? "16-bit" : sizeof(T) == 4 ? "float" : "double");
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const bool reference = mode == fr::Mode::Exact || kind < 0;  // held to the exact quotient
    // 1-D: sizes around the tile and the grid, aligned and an element off, two grids (the same bits).
    for (std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(33), std::size_t(4097),
                             std::size_t(1) << 20 | 3}) {
      for (std::size_t offset : {0u, 1u}) {
        A first{};
        for (unsigned max_blocks : {0u, 3u}) {
          const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
          const A got = run_call<T>(1, [&](void* temp, std::size_t& bytes, A* out) {
            return fr::reduce_async(temp, bytes, dx.get() + offset, out, size, fr::Mean{}, 0, opt);
          })[0];
          if (max_blocks == 0) first = got;
          EXPECT_TRUE(same_result(got, first)) << what << ", " << mode_name(mode) << ", n " << size << " + " << offset
                                               << std::hexfloat << ": " << double(got) << " with 3 blocks, "
                                               << double(first) << " with any";
          if (reference) {
            const A expected = static_cast<A>(fr::reference::exact_mean_rounded<A>(x.data() + offset, size));
            EXPECT_TRUE(same_result(got, expected)) << what << ", " << mode_name(mode) << ", n " << size << " + " << offset
                                                    << std::hexfloat << ": mean " << double(got) << ", exact "
                                                    << double(expected);
          }
        }
      }
    }
    constexpr std::size_t kMax = eng::kExactCheckMaxLength<A>;
    struct Shape {
      fr::Axis axis;
      std::size_t origin;
    };
    const std::vector<Shape> shapes = {
        {{100, 1, 1}, 0},      {{2053, 2, 1}, 0},      {{1031, 3, 1}, 1},      {{1000, 33, 1}, 0},        {{300, 256, 1}, 0},
        {{257, 2048 / sizeof(T), 1}, 0},  // rows of 2 KB: a warp's run each (RowsLanes)
        {{37, kMax, 1}, 0},    {{5, kMax + 1, 1}, 0},  {{2, 70001, 1}, 1},        {{3, 5, 100}, 0},
        {{3, 4099, 32}, 0},    {{2, 1000, 33}, 0},     {{1, n / 3, 3}, 0},
        {{1, 300, 200, fr::Axis::kContiguous, 1, 300}, 0},
        {{1, 300, 200, fr::Axis::kContiguous, -200, -1}, 299 * 200 + 199},
        {{1, 4099, 200, fr::Axis::kContiguous, 1, 4099}, 0},
    };
    for (const Shape& s : shapes) {
      const fr::Axis& axis = s.axis;
      const std::size_t outputs = axis.outer * axis.inner;
      const fr::Options opt{.mode = mode};
      const std::vector<A> got = run_call<T>(outputs, [&](void* temp, std::size_t& bytes, A* out) {
        return fr::reduce_axis_async(temp, bytes, dx.get() + s.origin, out, axis, fr::Mean{}, 0, opt);
      });
      if (mode == fr::Mode::Exact && axis.length > 1 && axis.length <= kMax) {
        eng::AxisPlan plan{};
        ASSERT_EQ(eng::describe_axis_reduction<MeanR<T>>({dx.get() + s.origin}, axis, opt, plan), cudaSuccess);
        EXPECT_NE(plan.path, eng::AxisPath::ReproRows) << what << ": " << axis.outer << " x " << axis.length;
        EXPECT_NE(plan.path, eng::AxisPath::ReproColumns) << what << ": " << axis.outer << " x " << axis.length;
      }
      int failures = 0, compared = 0;
      for (std::size_t o = 0; o < axis.outer; ++o) {
        for (std::size_t i = 0; i < axis.inner; ++i) {
          const std::size_t k = o * axis.inner + i;
          const std::vector<T> e = axis_elements(x, s.origin, axis, o, i);
          A expected{};
          if (reference) {
            expected = static_cast<A>(fr::reference::exact_mean_rounded<A>(e.data(), e.size()));
          } else if (k % 97 == 0 && compared++ < 4) {
            expected = mean_1d(e, mode);  // the output's elements alone, as a 1-D mean
          } else {
            continue;
          }
          if (!same_result(got[k], expected) && ++failures <= 3) {
            ADD_FAILURE() << what << ", " << mode_name(mode) << ": output (" << o << ", " << i << ") of " << axis.outer
                          << " x " << axis.length << " x " << axis.inner << std::hexfloat << ": mean " << double(got[k])
                          << ", expected " << double(expected);
          }
        }
      }
    }
    // Segments: empty (NaN), reversed, short and long.
    Segments segs(n, test_seed() + 19);
    const fr::Options opt{.mode = mode};
    const std::vector<A> got = run_call<T>(segs.count, [&](void* temp, std::size_t& bytes, A* out) {
      return fr::reduce_segments_async(temp, bytes, dx.get(), out, segs.count, segs.d_begin.get(), segs.d_end.get(),
                                       fr::Mean{}, 0, opt);
    });
    for (std::size_t k = 0; k < segs.count; ++k) {
      const std::size_t length = std::size_t(std::max<std::int64_t>(segs.end[k] - segs.begin[k], 0));
      A expected{};
      if (reference) {
        expected = static_cast<A>(fr::reference::exact_mean_rounded<A>(x.data() + segs.begin[k], length));
      } else if (k % 29 == 0) {
        expected = mean_1d(std::vector<T>(x.begin() + segs.begin[k], x.begin() + segs.begin[k] + std::int64_t(length)), mode);
      } else {
        continue;
      }
      EXPECT_TRUE(same_result(got[k], expected)) << what << ", " << mode_name(mode) << ": segment " << k << " of length "
                                                 << length << std::hexfloat << ": mean " << double(got[k])
                                                 << ", expected " << double(expected);
    }
  }
}

// Rows (and their columns, and 1-D) whose exact mean is a midpoint of the result type, or a tiny
// step from one: the exact sum n M (+ d) split into elements that add exactly. Ties go to even; the
// steps decide the rounding. Lengths 3 and 5 take the exact check (doubles: the near-midpoint test
// and the fix-up), 5000 the exact lanes.
template <class T>
void check_mean_ties() {
  using A = Acc<T>;
  constexpr int p = std::is_same_v<A, double> ? 53 : 24;
  std::mt19937_64 rng(test_seed() + 23);
  for (std::size_t length : {std::size_t(3), std::size_t(5), std::size_t(5000)}) {
    const std::size_t rows = 64;
    std::vector<T> x(rows * length, T(0.0f));
    for (std::size_t r = 0; r < rows; ++r) {
      // M = (2k + 1) 2^(e - p): halfway between two neighbours of A with exponent e.
      const int e = static_cast<int>(rng() % 40) - 20;
      const std::uint64_t k = (std::uint64_t(1) << (p - 1)) | (rng() >> (64 - (p - 1)));
      const unsigned __int128 total = static_cast<unsigned __int128>(2 * k + 1) * length;  // n M in units of 2^(e - p)
      // Steps of the total (in units of 2^(e - p - 40)): none, or a small one either way.
      const int step = static_cast<int>(r % 5) - 2;
      std::vector<double> parts;
      const double unit = std::ldexp(1.0, e - p);
      // total in pieces of T's precision (exact: each piece is the top bits of what is left).
      unsigned __int128 left = total;
      while (left != 0) {
        const int bits = 128 - (left >> 64 != 0 ? std::countl_zero(static_cast<std::uint64_t>(left >> 64))
                                                : 64 + std::countl_zero(static_cast<std::uint64_t>(left)));
        const int drop = std::max(0, bits - p);
        const unsigned __int128 piece = (left >> drop) << drop;
        parts.push_back(std::ldexp(static_cast<double>(static_cast<std::uint64_t>(piece >> drop)), drop) * unit);
        left -= piece;
      }
      if (step != 0) parts.push_back(step * std::ldexp(unit, step % 2 == 0 ? -40 : -3));
      if (parts.size() > length) parts.resize(length);  // never: at most three pieces and a step
      const bool negative = rng() % 2 != 0;
      for (std::size_t j = 0; j < parts.size(); ++j) x[r * length + j] = static_cast<T>(negative ? -parts[j] : parts[j]);
      std::shuffle(x.begin() + std::int64_t(r * length), x.begin() + std::int64_t((r + 1) * length), rng);
    }
    // The columns' layout: element j of row r at j * rows + r.
    std::vector<T> xt(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < length; ++j) xt[j * rows + r] = x[r * length + j];
    }
    DeviceBuffer<T> dx(x.size()), dt(x.size());
    CUDA_OK(cudaMemcpy(dx.get(), x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dt.get(), xt.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    const fr::Options opt{.mode = fr::Mode::Exact};
    const std::vector<A> by_rows = run_call<T>(rows, [&](void* temp, std::size_t& bytes, A* out) {
      return fr::reduce_axis_async(temp, bytes, dx.get(), out, fr::Axis{rows, length, 1}, fr::Mean{}, 0, opt);
    });
    const std::vector<A> by_columns = run_call<T>(rows, [&](void* temp, std::size_t& bytes, A* out) {
      return fr::reduce_axis_async(temp, bytes, dt.get(), out, fr::Axis{1, length, rows}, fr::Mean{}, 0, opt);
    });
    int ties = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const A expected = static_cast<A>(fr::reference::exact_mean_rounded<A>(x.data() + r * length, length));
      const A one = r % 8 == 0 ? mean_1d(std::vector<T>(x.begin() + std::int64_t(r * length),
                                                        x.begin() + std::int64_t((r + 1) * length)), fr::Mode::Exact)
                               : expected;
      if (r % 5 == 2) {  // a tie (no step): the reference rounds it to the even neighbour
        ++ties;
        std::uint64_t bits = 0;
        std::memcpy(&bits, &expected, sizeof(A));
        EXPECT_EQ(bits & 1, 0u) << "row " << r << " of length " << length << " is not a tie: " << std::hexfloat
                                << double(expected);
      }
      EXPECT_TRUE(same_result(by_rows[r], expected) && same_result(by_columns[r], expected) && same_result(one, expected))
          << "row " << r << " of length " << length << std::hexfloat << ": rows " << double(by_rows[r]) << ", columns "
          << double(by_columns[r]) << ", 1-D " << double(one) << ", exact " << double(expected);
    }
    EXPECT_GT(ties, 10);
  }
}

template <class T>
void check_mean_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  // integers, uniform, normal, wide range, cancellation, subnormal, near the limit, sums that
  // overflow (the mean does not), every exponent, NaN and infinities
  for (int kind : {-1, 0, 1, 2, 3, 4, 5, 6, 7, 8}) check_mean<T>(kind);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) check_mean_ties<T>();
}

}  // namespace

TEST(ExactOps, FloatMeanIsTheExactQuotient) { check_mean_every_data_set<float>(); }
TEST(ExactOps, DoubleMeanIsTheExactQuotient) { check_mean_every_data_set<double>(); }
TEST(ExactOps, HalfMeanIsTheExactQuotient) { check_mean_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16MeanIsTheExactQuotient) { check_mean_every_data_set<__nv_bfloat16>(); }

namespace {

// The exact L2 norm's fixed rounding, on the host: the exact sum of the squares (each exact in
// double) rounded once to double by the big-integer reference, its square root (IEEE, correctly
// rounded) and that rounded to float.
template <class T>
double reference_sum_of_squares(const T* x, std::size_t n) {
  fr::reference::ExactReference exact;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(fr::reference::widen(x[i]));
    exact.add(d * d);
  }
  return exact.template rounded<double>();
}
template <class T>
float reference_norm2(const T* x, std::size_t n) {
  return static_cast<float>(std::sqrt(reference_sum_of_squares(x, n)));
}

template <class T>
void check_l2(int kind) {
  const std::size_t n = quick() ? 1100000 : 1500000;
  const std::vector<T> x = exact_data<T>(kind, n, test_seed() + 40 + std::uint64_t(kind));
  DeviceBuffer<T> dx(n);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = std::string(kExactDataSets[kind]) + ", " + (sizeof(T) == 2 ? "16-bit" : "float");
  // 1-D: sizes around the tile and the grid, aligned and an element off, grids of 1, 3 and every
  // resident block; both modes, and the one output of an Axis over the same elements.
  for (std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(70001),
                           std::size_t(1) << 20 | 3}) {
    for (std::size_t offset : {0u, 1u}) {
      const float expected = reference_norm2(x.data() + offset, size);
      for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
        for (unsigned max_blocks : {0u, 1u, 3u}) {
          const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
          const std::vector<float> got = run_call<float>(1, [&](void* temp, std::size_t& bytes, float* out) {
            return fr::reduce_async(temp, bytes, dx.get() + offset, out, size, fr::NormL2{}, 0, opt);
          });
          EXPECT_TRUE(same_result(got[0], expected)) << what << ", " << mode_name(mode) << ", n " << size << " + " << offset
                                                     << ", max_blocks " << max_blocks << std::hexfloat << ": L2 "
                                                     << got[0] << ", expected " << expected;
        }
        const fr::Axis axis{1, size, 1};
        const std::vector<float> row = run_call<float>(1, [&](void* temp, std::size_t& bytes, float* out) {
          return fr::reduce_axis_async(temp, bytes, dx.get() + offset, out, axis, fr::NormL2{}, 0, fr::Options{.mode = mode});
        });
        EXPECT_TRUE(same_result(row[0], expected)) << what << ", " << mode_name(mode) << ": one row of " << size
                                                   << std::hexfloat << ": L2 " << row[0] << ", expected " << expected;
      }
    }
  }
}

// The float norm hides small errors of the sum of squares (a lost or doubled square far under
// 2^-24 of the sum rounds away), so the sum itself is checked too: the library's block rows
// (repro_block_row with squares, as exact_terms_kernel runs them), gathered and rounded once to
// double as store_term_total rounds them before the root, against the big-integer reference's sum
// rounded to double, 29 bits finer.
template <class T>
__global__ void __launch_bounds__(eng::kReproThreads, 2) squares_rows_kernel(eng::TermArgs<T> args) {
  __shared__ eng::ReproShared<double> shared;
  const eng::ReproSpan<T> spans[1] = {{args.x, args.n, args.tiles, args.aligned}};
  eng::repro_block_row<T, 1, true, false, eng::LaneTerm::Square>(spans, args.rows, shared);
}
__global__ void __launch_bounds__(eng::kReproThreads) squares_total_kernel(const unsigned long long* rows, unsigned count,
                                                                         double* out) {
  __shared__ eng::ReproShared<double> shared;
  const fr::primitives::ExactTotal<double> total =
      fr::primitives::gather_exact_rows<double, eng::kReproThreads / 32>(rows, count, shared);
  if (total.limbs == nullptr) return;
  const double squares = fr::primitives::round_exact<double>(total.limbs, total.negative, total.special, threadIdx.x % 32);
  if (threadIdx.x == 0) *out = squares;
}

template <class T>
double device_sum_of_squares(const T* d, std::size_t n, unsigned grid) {
  DeviceBuffer<unsigned long long> rows(std::size_t(grid) * fr::primitives::kExactRowWords<double>);
  DeviceBuffer<double> out(1);
  out.poison();
  const eng::TermArgs<T> args{d, nullptr, n, (n + eng::kReproTile - 1) / eng::kReproTile,
                              reinterpret_cast<std::uintptr_t>(d) % 16 == 0, rows.get(), nullptr};
  squares_rows_kernel<T><<<grid, eng::kReproThreads>>>(args);
  squares_total_kernel<<<1, eng::kReproThreads>>>(rows.get(), grid, out.get());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return read_back(out.get());
}


template <class T>
void check_sum_of_squares(const std::vector<T>& x, const std::string& what) {
  DeviceBuffer<T> dx(x.size());
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
  for (std::size_t size : {std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(70001), x.size() - 1}) {
    for (std::size_t offset : {0u, 1u}) {
      if (size + offset > x.size()) continue;
      const double expected = reference_sum_of_squares(x.data() + offset, size);
      for (unsigned grid : {1u, 3u, 264u}) {
        const double got = device_sum_of_squares(dx.get() + offset, size, grid);
        EXPECT_TRUE(same_result(got, expected)) << what << ", n " << size << " + " << offset << ", grid " << grid
                                                << std::hexfloat << ": sum of squares " << got << ", expected " << expected;
      }
    }
  }
}

// A big element among k tiny ones whose squares are a quarter of the big square's double ulp:
// k = 4098 puts the sum on a tie (a doubled square rounds it up), k = 4099 three quarters past
// (a lost square lands on the tie, which rounds down). Random signs and places.
template <class T>
std::vector<T> quarter_ulp_data(std::size_t k, std::uint64_t seed) {
  const double tiny = std::is_same_v<T, __half> ? std::ldexp(1.0, -14) : std::ldexp(1.0, -27);
  std::vector<T> x(k + 1);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < k; ++i) x[i] = static_cast<T>(rng() % 2 ? tiny : -tiny);
  x[k] = static_cast<T>(tiny * std::ldexp(1.0, 27));  // its square's double ulp is 4 tiny squares
  std::shuffle(x.begin(), x.end(), rng);
  return x;
}

template <class T>
void check_l2_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  for (int kind = 0; kind < kExactDataSetCount; ++kind) check_l2<T>(kind);
  const std::size_t n = quick() ? 1100000 : 1500000;
  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    check_sum_of_squares(exact_data<T>(kind, n, test_seed() + 80 + std::uint64_t(kind)),
                         std::string("sum of squares, ") + kExactDataSets[kind]);
  }
  for (std::size_t k : {std::size_t(4098), std::size_t(4099)}) {
    const std::vector<T> x = quarter_ulp_data<T>(k, test_seed() + k);
    const double expected = reference_sum_of_squares(x.data(), x.size());
    const double big = std::ldexp(static_cast<double>(std::is_same_v<T, __half> ? std::ldexp(1.0, -14) : std::ldexp(1.0, -27)), 27);
    // The data are what they claim: the sum rounds to the even neighbour (k = 4098) or up (4099).
    EXPECT_EQ(expected, big * big + (k == 4098 ? 1024.0 : 1025.0) * 4 * std::ldexp(big * big, -54)) << k;
    DeviceBuffer<T> dx(x.size());
    CUDA_OK(cudaMemcpy(dx.get(), x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    for (unsigned grid : {1u, 3u, 264u}) {
      const double got = device_sum_of_squares(dx.get(), x.size(), grid);
      EXPECT_TRUE(same_bits(got, expected)) << "quarter-ulp squares, k " << k << ", grid " << grid << std::hexfloat
                                            << ": " << got << ", expected " << expected;
    }
  }
}

}  // namespace

TEST(ExactOps, FloatNormL2IsTheRootOfTheExactSumOfSquares) { check_l2_every_data_set<float>(); }
TEST(ExactOps, HalfNormL2IsTheRootOfTheExactSumOfSquares) { check_l2_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16NormL2IsTheRootOfTheExactSumOfSquares) { check_l2_every_data_set<__nv_bfloat16>(); }



namespace {

// The exact dot product's reference: the big-integer sum of the products (each exact in double),
// rounded once to float.
template <class T>
float reference_dot(const T* x, const T* y, std::size_t n) {
  fr::reference::ExactReference exact;
  for (std::size_t i = 0; i < n; ++i) {
    exact.add(static_cast<double>(fr::reference::widen(x[i])) * static_cast<double>(fr::reference::widen(y[i])));
  }
  return static_cast<float>(exact.template rounded<float>());
}

// The second input of data set `kind` for x (uniform and normal: a set of its own). The sets were
// made for sums: their products would mostly overflow or vanish, so y scales each x[i] to a
// product of 2^k with k in [-20, 20] (8 significant bits, within T's range), except:
// - cancellation: pairs x[i + 1] = -x[i], y[i + 1] = y[i] of products near 2^35, small ones between;
// - subnormal: products near 2^-140 (float and bfloat16: subnormal results for short sums);
// - sum overflows: y from the same set (products beyond the float range: a result of +-inf);
// - NaN and infinities: every 50th y zero (infinity times zero: NaN).
template <class T>
std::vector<T> dot_partner(std::vector<T>& x, int kind, std::uint64_t seed) {
  using Range = ValueRange<T>;
  if (kind <= 1 || kind == 6) return exact_data<T>(kind, x.size(), seed);
  std::mt19937_64 rng(seed);
  std::vector<T> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = static_cast<double>(fr::reference::widen(x[i]));
    int e = 0;
    if (std::isfinite(v) && v != 0.0) std::frexp(v, &e);
    if (kind == 8 && rng() % 50 == 0) {
      y[i] = static_cast<T>(0.0f);
      continue;
    }
    const int k = kind == 3 ? (i % 3 == 2 ? -int(rng() % 20) : 30 + int(rng() % 10))
                  : kind == 4 ? -130 - int(rng() % 20)
                              : int(rng() % 41) - 20;
    const int target = std::clamp(k - e, Range::min_exponent, Range::max_exponent - 1);
    const double m = 1.0 + double(rng() % 128) / 128.0;
    y[i] = static_cast<T>((rng() % 2 ? -1.0 : 1.0) * std::ldexp(m, target));
  }
  if (kind == 3) {
    for (std::size_t i = 1; i < x.size(); i += 3) {
      x[i] = static_cast<T>(-static_cast<double>(fr::reference::widen(x[i - 1])));
      y[i] = y[i - 1];
    }
  }
  return y;
}

template <class T>
float dot_1d(const T* dx, const T* dy, std::size_t n, const fr::Options& opt) {
  return run_call<float>(1, [&](void* temp, std::size_t& bytes, float* out) {
    return fr::reduce_async(temp, bytes, dx, dy, out, n, fr::Dot{}, 0, opt);
  })[0];
}

// x from data set `kind`, y its partner (dot_partner), sizes around the tile and the grid, each
// input aligned or an element off, grids of 1, 3 and every resident block, both modes, and the
// one output of an Axis over the same elements.
template <class T>
void check_dot(int kind) {
  const std::size_t n = quick() ? 1100000 : 1500000;
  std::vector<T> x = exact_data<T>(kind, n, test_seed() + 120 + std::uint64_t(kind));
  const std::vector<T> y = dot_partner(x, kind, test_seed() + 140 + std::uint64_t(kind));
  // y again one element further on (dy_off + 1 holds y): x and y then lie differently aligned.
  DeviceBuffer<T> dx(n), dy(n), dy_off(n + 1);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dy.get(), y.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dy_off.get() + 1, y.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = std::string(kExactDataSets[kind]) + ", " + (sizeof(T) == 2 ? "16-bit" : "float");
  for (std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(70001),
                           std::size_t(1) << 20 | 3}) {
    // Both aligned, both an element off, x aligned and y an element off (the same elements).
    for (const auto [ox, oy] : {std::pair{0u, 0u}, std::pair{1u, 1u}, std::pair{0u, 1u}}) {
      const bool apart = ox != oy;
      const float expected = reference_dot(x.data() + ox, y.data() + ox, size);
      // The partner keeps the sum finite and non-zero (from 33 elements: a single subnormal draw may be 0).
      if (size >= 33 && kind != 6 && kind != 8) {
        EXPECT_TRUE(std::isfinite(expected) && expected != 0.0f) << what << ", n " << size << ": " << expected;
      }
      const T* d_y = apart ? dy_off.get() + 1 : dy.get() + oy;
      for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
        for (unsigned max_blocks : {0u, 1u, 3u}) {
          const float got = dot_1d(dx.get() + ox, d_y, size, fr::Options{.mode = mode, .max_blocks = max_blocks});
          EXPECT_TRUE(same_result(got, expected)) << what << ", " << mode_name(mode) << ", n " << size << ", offsets "
                                                  << ox << " and " << oy << ", max_blocks " << max_blocks
                                                  << std::hexfloat << ": dot " << got << ", expected " << expected;
        }
        const std::vector<float> row = run_call<float>(1, [&](void* temp, std::size_t& bytes, float* out) {
          return fr::reduce_axis_async(temp, bytes, dx.get() + ox, d_y, out, fr::Axis{1, size, 1}, fr::Dot{}, 0,
                                       fr::Options{.mode = mode});
        });
        EXPECT_TRUE(same_result(row[0], expected)) << what << ", " << mode_name(mode) << ": one row of " << size
                                                   << std::hexfloat << ": dot " << row[0] << ", expected " << expected;
      }
    }
  }
}

// Products whose exact sum lies next to a float tie, hidden among cancelling pairs (x y and x (-y))
// and shuffled; s is a power of two (half: 2^15, else 1) that keeps every value in T's range.
// - "rounded once": s^2 (1 + 2^-24 + 2^-60). Through a double it is the tie s^2 (1 + 2^-24), which
//   rounds to even, s^2; rounded once, s^2 (1 + 2^-23).
// - "many tiny": s^2 plus k products of s^2 2^-40 (net k of random signs): k = 2^16 is the tie
//   (s^2; a doubled product rounds up), k = 2^16 + 1 is past it (s^2 (1 + 2^-23); a lost product
//   lands on the tie and rounds down).
template <class T>
void check_dot_ties() {
  const double s = std::is_same_v<T, __half> ? 32768.0 : 1.0;
  const double tiny = s * std::ldexp(1.0, -20);  // tiny^2 = s^2 2^-40
  std::mt19937_64 rng(test_seed() + 160);
  auto run = [&](std::vector<std::pair<double, double>> products, float expected, const std::string& what) {
    for (int i = 0; i < 100000; ++i) {
      const double a = std::ldexp(double(rng() % 128 + 1), -int(rng() % 8)), b = double(rng() % 64 + 1);
      products.push_back({a, b});
      products.push_back({a, -b});
    }
    std::shuffle(products.begin(), products.end(), rng);
    std::vector<T> x(products.size()), y(products.size());
    for (std::size_t i = 0; i < products.size(); ++i) {
      x[i] = static_cast<T>(products[i].first);
      y[i] = static_cast<T>(products[i].second);
      ASSERT_EQ(double(fr::reference::widen(x[i])) * double(fr::reference::widen(y[i])),
                products[i].first * products[i].second);  // every value is T's
    }
    ASSERT_TRUE(same_bits(reference_dot(x.data(), y.data(), x.size()), expected)) << what;  // the data are what they claim
    DeviceBuffer<T> dx(x.size()), dy(y.size());
    CUDA_OK(cudaMemcpy(dx.get(), x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dy.get(), y.data(), y.size() * sizeof(T), cudaMemcpyHostToDevice));
    for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
      for (unsigned max_blocks : {0u, 1u, 3u}) {
        const float got = dot_1d(dx.get(), dy.get(), x.size(), fr::Options{.mode = mode, .max_blocks = max_blocks});
        EXPECT_TRUE(same_bits(got, expected)) << what << ", " << mode_name(mode) << ", max_blocks " << max_blocks
                                              << std::hexfloat << ": dot " << got << ", expected " << expected;
      }
    }
    const std::vector<float> row = run_call<float>(1, [&](void* temp, std::size_t& bytes, float* out) {
      return fr::reduce_axis_async(temp, bytes, dx.get(), dy.get(), out, fr::Axis{1, x.size(), 1}, fr::Dot{}, 0,
                                   fr::Options{.mode = fr::Mode::Exact});
    });
    EXPECT_TRUE(same_bits(row[0], expected)) << what << ", one row" << std::hexfloat << ": dot " << row[0] << ", expected "
                                             << expected;
  };
  const float one = static_cast<float>(s * s), up = static_cast<float>(s * s * (1 + std::ldexp(1.0, -23)));
  for (double sign : {1.0, -1.0}) {
    run({{s, sign * s}, {s * std::ldexp(1.0, -12), sign * s * std::ldexp(1.0, -12)},
         {s * std::ldexp(1.0, -30), sign * s * std::ldexp(1.0, -30)}},
        float(sign) * up, "rounded once");
  }
  for (int k : {65536, 65537}) {
    std::vector<std::pair<double, double>> products{{s, s}};
    const int minus = int(rng() % 20000);
    for (int i = 0; i < k + 2 * minus; ++i) products.push_back({tiny, i < minus ? -tiny : tiny});
    run(products, k == 65536 ? one : up, "many tiny, k " + std::to_string(k));
  }
}

template <class T>
void check_dot_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  for (int kind = 0; kind < kExactDataSetCount; ++kind) check_dot<T>(kind);
  check_dot_ties<T>();
}

}  // namespace

TEST(ExactOps, FloatDotIsTheCorrectlyRoundedSumOfProducts) { check_dot_every_data_set<float>(); }
TEST(ExactOps, HalfDotIsTheCorrectlyRoundedSumOfProducts) { check_dot_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16DotIsTheCorrectlyRoundedSumOfProducts) { check_dot_every_data_set<__nv_bfloat16>(); }

namespace {

// The exact L2 norm and dot product along axes and over segments: every output must be the 1-D
// exact result of its own elements (the big-integer references above), in both modes, with every
// resident block and with 3: short rows and columns (the fast paths with TermCheck, and its fix-up
// for the rows the data sets make it fail), rows of the exact lanes' warp and block kernels (long
// rows in pieces, summed by the finish kernel), columns (in pieces too), strided views, one
// strided output, and segments (empty, reversed, short and long; cut across warps and joined).
template <class T>
void check_terms(int kind) {
  const std::size_t n = quick() ? 1100000 : 1500000;
  std::vector<T> x = exact_data<T>(kind, n, test_seed() + 500 + std::uint64_t(kind));
  const std::vector<T> y = dot_partner(x, kind, test_seed() + 520 + std::uint64_t(kind));
  DeviceBuffer<T> dx(n), dy(n);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dy.get(), y.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = std::string(kExactDataSets[kind]) + ", " + (sizeof(T) == 2 ? "16-bit" : "float");
  for (const AxisShape& s : every_axis_shape(n)) {
    const fr::Axis& axis = s.axis;
    const std::size_t outputs = axis.outer * axis.inner;
    std::vector<float> want_l2(outputs), want_dot(outputs);
    for (std::size_t o = 0; o < axis.outer; ++o) {
      for (std::size_t i = 0; i < axis.inner; ++i) {
        const std::vector<T> ex = axis_elements(x, s.origin, axis, o, i), ey = axis_elements(y, s.origin, axis, o, i);
        want_l2[o * axis.inner + i] = reference_norm2(ex.data(), ex.size());
        want_dot[o * axis.inner + i] = reference_dot(ex.data(), ey.data(), ex.size());
      }
    }
    for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
      for (unsigned max_blocks : {0u, 3u}) {
        const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
        const std::vector<float> l2 = run_call<float>(outputs, [&](void* temp, std::size_t& bytes, float* out) {
          return fr::reduce_axis_async(temp, bytes, dx.get() + s.origin, out, axis, fr::NormL2{}, 0, opt);
        });
        const std::vector<float> dot = run_call<float>(outputs, [&](void* temp, std::size_t& bytes, float* out) {
          return fr::reduce_axis_async(temp, bytes, dx.get() + s.origin, dy.get() + s.origin, out, axis, fr::Dot{}, 0,
                                       opt);
        });
        int failures = 0;
        for (std::size_t q = 0; q < outputs; ++q) {
          if ((!same_result(l2[q], want_l2[q]) || !same_result(dot[q], want_dot[q])) && ++failures <= 3) {
            ADD_FAILURE() << what << ", " << mode_name(mode) << ", max_blocks " << max_blocks << ": output " << q
                          << " of " << axis.outer << " x " << axis.length << " x " << axis.inner << std::hexfloat
                          << ": L2 " << l2[q] << " (expected " << want_l2[q] << "), dot " << dot[q] << " (expected "
                          << want_dot[q] << ")";
          }
        }
      }
    }
  }
  Segments segs(n, test_seed() + 540 + std::uint64_t(kind));
  std::vector<float> want_l2(segs.count), want_dot(segs.count);
  for (std::size_t k = 0; k < segs.count; ++k) {
    const std::size_t length = std::size_t(std::max<std::int64_t>(segs.end[k] - segs.begin[k], 0));
    want_l2[k] = reference_norm2(x.data() + segs.begin[k], length);
    want_dot[k] = reference_dot(x.data() + segs.begin[k], y.data() + segs.begin[k], length);
  }
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    for (unsigned max_blocks : {0u, 3u}) {
      const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
      const std::int64_t *b = segs.d_begin.get(), *e = segs.d_end.get();
      const std::vector<float> l2 = run_call<float>(segs.count, [&](void* temp, std::size_t& bytes, float* out) {
        return fr::reduce_segments_async(temp, bytes, dx.get(), out, segs.count, b, e, fr::NormL2{}, 0, opt);
      });
      const std::vector<float> dot = run_call<float>(segs.count, [&](void* temp, std::size_t& bytes, float* out) {
        return fr::reduce_segments_async(temp, bytes, dx.get(), dy.get(), out, segs.count, b, e, fr::Dot{}, 0, opt);
      });
      int failures = 0;
      for (std::size_t k = 0; k < segs.count; ++k) {
        if ((!same_result(l2[k], want_l2[k]) || !same_result(dot[k], want_dot[k])) && ++failures <= 3) {
          ADD_FAILURE() << what << ", " << mode_name(mode) << ", max_blocks " << max_blocks << ": segment " << k
                        << " of length " << std::max<std::int64_t>(segs.end[k] - segs.begin[k], 0) << std::hexfloat
                        << ": L2 " << l2[k] << " (expected " << want_l2[k] << "), dot " << dot[k] << " (expected "
                        << want_dot[k] << ")";
        }
      }
    }
  }
}

// Short rows and columns (up to kExactCheckMaxLength<double>) take the fast paths with TermCheck:
// the plan says so, and rows of the products s^2, s^2 2^-24 and s^2 2^-60 in every order and sign
// (the "rounded once" tie of check_dot_ties: through a double, s^2 (1 + 2^-24), a float tie that
// rounds to even) come out rounded once, s^2 (1 + 2^-23), as rows and as columns.
template <class T>
void check_short_term_ties() {
  const double s = std::is_same_v<T, __half> ? 32768.0 : 1.0;
  const double factors[3] = {s, s * std::ldexp(1.0, -12), s * std::ldexp(1.0, -30)};
  std::vector<T> x, y;
  std::vector<float> want;
  int order[3] = {0, 1, 2};
  do {
    for (double sign : {1.0, -1.0}) {
      for (int k : order) {
        x.push_back(static_cast<T>(factors[k]));
        y.push_back(static_cast<T>(sign * factors[k]));
      }
      want.push_back(static_cast<float>(sign * s * s * (1 + std::ldexp(1.0, -23))));
    }
  } while (std::next_permutation(order, order + 3));
  const std::size_t rows = want.size();
  std::vector<T> xt(x.size()), yt(y.size());  // the same rows as columns
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < 3; ++k) {
      xt[k * rows + r] = x[r * 3 + k];
      yt[k * rows + r] = y[r * 3 + k];
    }
  }
  for (std::size_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(same_bits(reference_dot(x.data() + 3 * r, y.data() + 3 * r, 3), want[r])) << r;  // the data are what they claim
  }
  DeviceBuffer<T> dx(x.size()), dy(y.size()), dxt(x.size()), dyt(y.size());
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dy.get(), y.data(), y.size() * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dxt.get(), xt.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dyt.get(), yt.data(), y.size() * sizeof(T), cudaMemcpyHostToDevice));
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const fr::Options opt{.mode = mode};
    for (bool columns : {false, true}) {
      const fr::Axis axis = columns ? fr::Axis{1, 3, rows} : fr::Axis{rows, 3, 1};
      const T* px = columns ? dxt.get() : dx.get();
      const T* py = columns ? dyt.get() : dy.get();
      eng::AxisPlan plan{};
      ASSERT_EQ(eng::describe_axis_reduction<eng::dot_reduction<T>>({px, py}, axis, opt, plan), cudaSuccess);
      EXPECT_NE(plan.path, eng::AxisPath::ReproRows) << mode_name(mode);
      EXPECT_NE(plan.path, eng::AxisPath::ReproColumns) << mode_name(mode);
      const std::vector<float> got = run_call<float>(rows, [&](void* temp, std::size_t& bytes, float* out) {
        return fr::reduce_axis_async(temp, bytes, px, py, out, axis, fr::Dot{}, 0, opt);
      });
      for (std::size_t r = 0; r < rows; ++r) {
        EXPECT_TRUE(same_bits(got[r], want[r])) << mode_name(mode) << (columns ? ", column " : ", row ") << r
                                                << std::hexfloat << ": dot " << got[r] << ", expected " << want[r];
      }
    }
  }
  // And the L2 norm's short axes take them too.
  eng::AxisPlan plan{};
  ASSERT_EQ(eng::describe_axis_reduction<eng::l2_reduction<T>>({dx.get()}, fr::Axis{rows, 3, 1},
                                                               fr::Options{.mode = fr::Mode::Exact}, plan),
            cudaSuccess);
  EXPECT_NE(plan.path, eng::AxisPath::ReproRows);
}

template <class T>
void check_terms_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  for (int kind = 0; kind < kExactDataSetCount; ++kind) check_terms<T>(kind);
  check_short_term_ties<T>();
}

}  // namespace

TEST(ExactOps, FloatNormL2AndDotOnEveryShape) { check_terms_every_data_set<float>(); }
TEST(ExactOps, HalfNormL2AndDotOnEveryShape) { check_terms_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16NormL2AndDotOnEveryShape) { check_terms_every_data_set<__nv_bfloat16>(); }

// The L2 norm and dot product of doubles (whose squares and products need more than a double)
// have neither mode: 1-D, along an axis and over segments, refused before anything is written,
// the message naming the ops that have them; the same calls in fast mode run.
TEST(ExactOps, DoubleNormL2AndDotAreRefused) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<double> x(1000);
  CUDA_OK(cudaMemset(x.get(), 0, 1000 * sizeof(double)));
  DeviceBuffer<std::int64_t> offsets(3);
  const std::int64_t host_offsets[3] = {0, 400, 1000};
  CUDA_OK(cudaMemcpy(offsets.get(), host_offsets, sizeof(host_offsets), cudaMemcpyHostToDevice));
  DeviceBuffer<char> temp(1 << 20);
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible, fr::Mode::Fast}) {
    const fr::Options opt{.mode = mode};
    const cudaError_t want = mode == fr::Mode::Fast ? cudaSuccess : cudaErrorNotSupported;
    DeviceBuffer<double> out(2);
    out.poison();
    std::vector<cudaError_t> e;
    std::size_t bytes = 1 << 20;
    e.push_back(fr::reduce_async(temp.get(), bytes, x.get(), out.get(), 1000, fr::NormL2{}, 0, opt));
    bytes = 1 << 20;
    e.push_back(fr::reduce_async(temp.get(), bytes, x.get(), x.get(), out.get(), 1000, fr::Dot{}, 0, opt));
    bytes = 1 << 20;
    e.push_back(fr::reduce_axis_async(temp.get(), bytes, x.get(), out.get(), fr::Axis{2, 500, 1}, fr::NormL2{}, 0, opt));
    bytes = 1 << 20;
    e.push_back(fr::reduce_axis_async(temp.get(), bytes, x.get(), x.get(), out.get(), fr::Axis{1, 500, 2}, fr::Dot{}, 0,
                                      opt));
    bytes = 1 << 20;
    e.push_back(fr::reduce_segments_async(temp.get(), bytes, x.get(), out.get(), 2, offsets.get(), offsets.get() + 1,
                                          fr::NormL2{}, 0, opt));
    bytes = 1 << 20;
    e.push_back(fr::reduce_segments_async(temp.get(), bytes, x.get(), x.get(), out.get(), 2, offsets.get(),
                                          offsets.get() + 1, fr::Dot{}, 0, opt));
    for (std::size_t i = 0; i < e.size(); ++i) EXPECT_EQ(e[i], want) << "call " << i << ", mode " << int(mode);
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<double> after = copy_back<double>(out, 2);
    if (mode != fr::Mode::Fast) {
      for (double v : after) EXPECT_EQ(std::bit_cast<std::uint64_t>(v), 0xA5A5A5A5A5A5A5A5ull) << "written";
    } else {
      EXPECT_EQ(after[0], 0.0);  // the zeros' dot product, the calls' last output
    }
    std::size_t size = 0;
    const char* message = nullptr;
    if (mode != fr::Mode::Fast) {
      EXPECT_EQ(eng::axis_temp_bytes<eng::l2_reduction<double>>(fr::Axis{2, 500, 1}, {x.get()}, opt, 0, size, &message),
                cudaErrorNotSupported);
      ASSERT_NE(message, nullptr);
      EXPECT_NE(std::string(message).find("the L2 norm, dot product, variance and standard deviation of float, half "
                                          "and bfloat16"),
                std::string::npos)
          << message;
    }
  }
}

namespace {

// The exact variance's reference on the host, by its own big integers (32-bit digits, least
// significant first): S1 = sum x in units of 2^-149, S2 = sum x^2 in units of 2^-298, the
// numerator N = n S2 - S1^2, rounded once to double, then the fixed steps the library documents:
// divided by n, then by n - correction (each an IEEE double division), the square root for the
// standard deviation (the double the finish computes), rounded to float. (BigNatural:
// tests/exact_data.hpp.)
template <class T>
double reference_variance_double(const T* x, std::size_t n, int correction, bool root) {
  BigNatural plus, minus, squares;
  bool special = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(fr::reference::widen(x[i]));
    if (!std::isfinite(v)) {
      special = true;
      continue;
    }
    if (v == 0.0) continue;
    int e = 0;
    const double f = std::frexp(std::fabs(v), &e);  // |v| = f 2^e, f in [0.5, 1)
    const std::uint64_t m = static_cast<std::uint64_t>(std::ldexp(f, 53));
    (v > 0 ? plus : minus).add(m, e - 53 + 149);  // |v| 2^149
    const double sq = v * v;  // exact: at most 48 bits, above 2^-298
    const double g = std::frexp(sq, &e);
    squares.add(static_cast<std::uint64_t>(std::ldexp(g, 53)), e - 53 + 298);
  }
  if (special || std::int64_t(n) - correction <= 0) return std::numeric_limits<double>::quiet_NaN();
  const BigNatural s1 = plus.less(minus) ? minus.minus(plus) : plus.minus(minus);
  BigNatural square;  // s1^2
  for (std::size_t i = 0; i < 20; ++i) square.add(s1.times(s1.d[i]), int(i));
  BigNatural scaled = squares.times(static_cast<std::uint32_t>(n));  // n S2 (n below 2^32 here)
  const BigNatural numerator = scaled.minus(square);
  EXPECT_FALSE(scaled.less(square));
  const double v = numerator.rounded(-298) / static_cast<double>(n) / static_cast<double>(std::int64_t(n) - correction);
  return root ? std::sqrt(v) : v;
}
template <class T>
float reference_variance(const T* x, std::size_t n, int correction, bool root) {
  return static_cast<float>(reference_variance_double(x, n, correction, root));
}

template <class T>
float variance_1d(const T* dx, std::size_t n, int correction, bool root, const fr::Options& opt) {
  return run_call<float>(1, [&](void* temp, std::size_t& bytes, float* out) {
    return root ? fr::reduce_async(temp, bytes, dx, out, n, fr::Std{correction}, 0, opt)
                : fr::reduce_async(temp, bytes, dx, out, n, fr::Var{correction}, 0, opt);
  })[0];
}

// Each data set, and values near 1e4 (float) or 100 (16-bit) that differ in their last bits (the
// sums' cancellation: n S2 and S1^2 agree in their leading bits); sizes around the tile and the
// grid at two alignments, grids of 1, 3 and every resident block, both modes, corrections 0, 1
// and 2 (n <= correction: NaN), the variance and the standard deviation, and the one-row Axis.
template <class T>
void check_variance(int kind) {
  const std::size_t n = quick() ? 1100000 : 1500000;
  std::vector<T> x;
  if (kind < kExactDataSetCount) {
    x = exact_data<T>(kind, n, test_seed() + 200 + std::uint64_t(kind));
  } else {
    std::mt19937_64 rng(test_seed() + 220);
    const double base = sizeof(T) == 2 ? 100.0 : 1e4;
    x.resize(n);
    for (auto& v : x) v = static_cast<T>(base * (1 + std::ldexp(double(rng() % 64), sizeof(T) == 2 ? -10 : -22)));
  }
  DeviceBuffer<T> dx(n);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = (kind < kExactDataSetCount ? std::string(kExactDataSets[kind]) : std::string("near one value")) +
                           ", " + (sizeof(T) == 2 ? "16-bit" : "float");
  for (std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(33), std::size_t(4097),
                           std::size_t(70001), std::size_t(1) << 20 | 3}) {
    for (std::size_t offset : {0u, 1u}) {
      // (Std keeps the wide sets finite, where their variance overflows a float.)
      for (const auto [correction, root] :
           {std::pair{1, false}, std::pair{0, true}, std::pair{2, false}, std::pair{1, true}, std::pair{2, true}}) {
        const float expected = reference_variance(x.data() + offset, size, correction, root);
        for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
          for (unsigned max_blocks : {0u, 1u, 3u}) {
            if (max_blocks != 0 && size < 4097) continue;
            const float got = variance_1d(dx.get() + offset, size, correction, root,
                                          fr::Options{.mode = mode, .max_blocks = max_blocks});
            EXPECT_TRUE(same_result(got, expected)) << what << ", " << mode_name(mode) << ", n " << size << " + " << offset
                                                    << ", correction " << correction << (root ? ", std" : ", var")
                                                    << ", max_blocks " << max_blocks << std::hexfloat << ": " << got
                                                    << ", expected " << expected;
          }
        }
        if (size == 70001) {
          const std::vector<float> row = run_call<float>(1, [&](void* temp, std::size_t& bytes, float* out) {
            const fr::Options opt{.mode = fr::Mode::Exact};
            return root ? fr::reduce_axis_async(temp, bytes, dx.get() + offset, out, fr::Axis{1, size, 1}, fr::Std{correction}, 0, opt)
                        : fr::reduce_axis_async(temp, bytes, dx.get() + offset, out, fr::Axis{1, size, 1}, fr::Var{correction}, 0, opt);
          });
          EXPECT_TRUE(same_result(row[0], expected)) << what << ": one row of " << size << std::hexfloat << ": " << row[0]
                                                     << ", expected " << expected;
        }
      }
    }
  }
}

template <class T>
void check_variance_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  for (int kind = 0; kind <= kExactDataSetCount; ++kind) check_variance<T>(kind);
}

}  // namespace

TEST(ExactOps, FloatVarianceIsRoundedFromTheExactSums) { check_variance_every_data_set<float>(); }
TEST(ExactOps, HalfVarianceIsRoundedFromTheExactSums) { check_variance_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16VarianceIsRoundedFromTheExactSums) { check_variance_every_data_set<__nv_bfloat16>(); }

namespace {

// The variance (correction 1) and standard deviation (correction 0) of each segment [begin[k],
// end[k]) of x (dx on the device), in both modes and with every resident block and with 3: the 1-D
// exact result of the segment's own elements (reference_variance).
template <class T>
void check_variance_segments(const std::vector<T>& x, const DeviceBuffer<T>& dx, const std::vector<std::int64_t>& begin,
                             const std::vector<std::int64_t>& end, const std::string& what) {
  const std::size_t count = begin.size();
  DeviceBuffer<std::int64_t> d_begin(count), d_end(count);
  CUDA_OK(cudaMemcpy(d_begin.get(), begin.data(), count * 8, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_end.get(), end.data(), count * 8, cudaMemcpyHostToDevice));
  std::vector<float> want_var(count), want_std(count);
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t length = std::size_t(std::max<std::int64_t>(end[k] - begin[k], 0));
    want_var[k] = reference_variance(x.data() + begin[k], length, 1, false);
    want_std[k] = reference_variance(x.data() + begin[k], length, 0, true);
  }
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    for (unsigned max_blocks : {0u, 3u}) {
      const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
      const std::int64_t *b = d_begin.get(), *e = d_end.get();
      const std::vector<float> var = run_call<float>(count, [&](void* temp, std::size_t& bytes, float* out) {
        return fr::reduce_segments_async(temp, bytes, dx.get(), out, count, b, e, fr::Var{1}, 0, opt);
      });
      const std::vector<float> sd = run_call<float>(count, [&](void* temp, std::size_t& bytes, float* out) {
        return fr::reduce_segments_async(temp, bytes, dx.get(), out, count, b, e, fr::Std{0}, 0, opt);
      });
      int failures = 0;
      for (std::size_t k = 0; k < count; ++k) {
        if ((!same_result(var[k], want_var[k]) || !same_result(sd[k], want_std[k])) && ++failures <= 3) {
          ADD_FAILURE() << what << ", " << mode_name(mode) << ", max_blocks " << max_blocks << ": segment " << k
                        << " of length " << std::max<std::int64_t>(end[k] - begin[k], 0) << std::hexfloat << ": var "
                        << var[k] << " (expected " << want_var[k] << "), std " << sd[k] << " (expected " << want_std[k]
                        << ")";
        }
      }
    }
  }
}

// The variance and standard deviation along axes: every output must be the 1-D exact result of its
// own elements (reference_variance, the big integers above), in both modes, with every resident
// block and with 3: short rows and columns (the fast paths with VarianceCheck, and its fix-up for
// the rows the data sets make it fail), long rows and columns (the two passes of the exact Sum's and
// the squares' axis kernels, in pieces, and their finish), strided views, one strided output, an
// axis of length 0 (NaN everywhere) and rows shorter than the correction (NaN).
template <class T>
void check_variance_axes(int kind) {
  const std::size_t n = quick() ? 1100000 : 1500000;
  const std::vector<T> x = exact_data<T>(kind, n, test_seed() + 560 + std::uint64_t(kind));
  DeviceBuffer<T> dx(n);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = std::string(kExactDataSets[kind]) + ", " + (sizeof(T) == 2 ? "16-bit" : "float");
  std::vector<AxisShape> shapes = every_axis_shape(n);
  shapes.push_back({{4, 0, 3}, 0});                      // length 0
  shapes.push_back({{257, 2048 / sizeof(T), 1}, 0});  // rows of 2 KB: a warp's run each (RowsLanes)
  for (const AxisShape& s : shapes) {
    const fr::Axis& axis = s.axis;
    const std::size_t outputs = axis.outer * axis.inner;
    std::vector<float> want_var(outputs), want_std(outputs);
    for (std::size_t o = 0; o < axis.outer; ++o) {
      for (std::size_t i = 0; i < axis.inner; ++i) {
        const std::vector<T> e = axis_elements(x, s.origin, axis, o, i);
        const std::size_t q = o * axis.inner + i;
        want_var[q] = reference_variance(e.data(), e.size(), 1, false);
        want_std[q] = reference_variance(e.data(), e.size(), 0, true);
      }
    }
    for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
      for (unsigned max_blocks : {0u, 3u}) {
        const fr::Options opt{.mode = mode, .max_blocks = max_blocks};
        const std::vector<float> var = run_call<float>(outputs, [&](void* temp, std::size_t& bytes, float* out) {
          return fr::reduce_axis_async(temp, bytes, dx.get() + s.origin, out, axis, fr::Var{1}, 0, opt);
        });
        const std::vector<float> sd = run_call<float>(outputs, [&](void* temp, std::size_t& bytes, float* out) {
          return fr::reduce_axis_async(temp, bytes, dx.get() + s.origin, out, axis, fr::Std{0}, 0, opt);
        });
        int failures = 0;
        for (std::size_t q = 0; q < outputs; ++q) {
          if ((!same_result(var[q], want_var[q]) || !same_result(sd[q], want_std[q])) && ++failures <= 3) {
            ADD_FAILURE() << what << ", " << mode_name(mode) << ", max_blocks " << max_blocks << ": output " << q
                          << " of " << axis.outer << " x " << axis.length << " x " << axis.inner << std::hexfloat
                          << ": var " << var[q] << " (expected " << want_var[q] << "), std " << sd[q] << " (expected "
                          << want_std[q] << ")";
          }
        }
      }
    }
  }
  // Segments: 300 of power-law lengths up to 2^20 (cut among warps, joined), then 20,000 short ones
  // (each within one warp's run), every 29th reversed (empty: NaN), lengths 0 and 1 (NaN with
  // correction 1) among them.
  const Segments segs(n, test_seed() + 570 + std::uint64_t(kind));
  check_variance_segments(x, dx, segs.begin, segs.end, what + ", power-law segments");
  std::mt19937_64 rng(test_seed() + 580 + std::uint64_t(kind));
  std::vector<std::int64_t> begin(20000), end(20000);
  for (std::size_t k = 0; k < begin.size(); ++k) {
    const std::size_t length = rng() % 40;
    begin[k] = std::int64_t(rng() % (n - length));
    end[k] = k % 29 == 3 ? begin[k] - 1 : begin[k] + std::int64_t(length);
  }
  check_variance_segments(x, dx, begin, end, what + ", short segments");
  // Rows of 1 and 2 elements with correction 2: NaN (n <= correction), beside rows of 3 that are not.
  for (std::size_t length : {std::size_t(1), std::size_t(2), std::size_t(3)}) {
    const fr::Axis axis{7, length, 1};
    const std::vector<float> got = run_call<float>(7, [&](void* temp, std::size_t& bytes, float* out) {
      return fr::reduce_axis_async(temp, bytes, dx.get(), out, axis, fr::Var{2}, 0, fr::Options{.mode = fr::Mode::Exact});
    });
    for (std::size_t q = 0; q < 7; ++q) {
      const std::vector<T> e = axis_elements(x, 0, axis, q, 0);
      EXPECT_TRUE(same_result(got[q], reference_variance(e.data(), e.size(), 2, false)))
          << what << ": row " << q << " of " << length << ", correction 2: " << got[q];
    }
  }
}

// An axis of length 0 reads no input: a null pointer is taken (NaN in every output, as torch's
// variance of nothing), in both modes, as fast mode takes it.
template <class T>
void check_variance_of_nothing() {
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible, fr::Mode::Fast}) {
    for (const fr::Axis& axis : {fr::Axis{2, 0, 3}, fr::Axis{1, 0, 1}}) {
      const std::size_t outputs = axis.outer * axis.inner;
      const std::vector<float> got = run_call<float>(outputs, [&](void* temp, std::size_t& bytes, float* out) {
        return fr::reduce_axis_async(temp, bytes, static_cast<const T*>(nullptr), out, axis, fr::Var{0}, 0,
                                     fr::Options{.mode = mode});
      });
      for (std::size_t q = 0; q < outputs; ++q) {
        EXPECT_TRUE(std::isnan(got[q])) << "mode " << int(mode) << ", " << outputs << " outputs: " << got[q];
      }
    }
  }
}

// Short axes take the fast paths (VarianceCheck), long ones the exact lanes' two passes.
template <class T>
void check_variance_paths() {
  DeviceBuffer<T> dx(1 << 16);
  using R = eng::MomentsReduction<T, eng::VarianceOf<float>>;
  const fr::Options opt{.mode = fr::Mode::Exact};
  for (const auto& [axis, exact_lanes] : {std::pair{fr::Axis{64, 1024, 1}, false}, std::pair{fr::Axis{64, 2048 / sizeof(T), 1}, false},
                                          std::pair{fr::Axis{1, 64, 1024}, false},
                                          std::pair{fr::Axis{8, 8192, 1}, true}, std::pair{fr::Axis{1, 8192, 8}, true}}) {
    eng::AxisPlan plan{};
    ASSERT_EQ(eng::describe_axis_reduction<R>({dx.get()}, axis, opt, plan), cudaSuccess);
    const bool repro = plan.path == eng::AxisPath::ReproRows || plan.path == eng::AxisPath::ReproColumns;
    EXPECT_EQ(repro, exact_lanes) << axis.outer << " x " << axis.length << " x " << axis.inner << ": "
                                  << eng::axis_path_name(plan.path);
  }
}

template <class T>
void check_variance_axes_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  check_variance_paths<T>();
  check_variance_of_nothing<T>();
  for (int kind = 0; kind < kExactDataSetCount; ++kind) check_variance_axes<T>(kind);
}

}  // namespace

TEST(ExactOps, FloatVarianceOnEveryAxis) { check_variance_axes_every_data_set<float>(); }
TEST(ExactOps, HalfVarianceOnEveryAxis) { check_variance_axes_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16VarianceOnEveryAxis) { check_variance_axes_every_data_set<__nv_bfloat16>(); }

namespace {

// engine::Narrowed<R>: a half or bfloat16 input's statistic written in its own type, rounded once.
// One call of R (1-D: an Axis of one row) with the outputs poisoned, as doubles holding the values.
template <class R>
std::vector<double> narrowed_call(const typename R::Input* d, const fr::Axis& axis, const R& r, fr::Mode mode) {
  using T = typename R::Input;
  const std::size_t outputs = axis.outer * axis.inner;
  DeviceBuffer<T> out(std::max<std::size_t>(outputs, 1));
  out.poison();
  const fr::Options opt{.mode = mode};
  std::size_t bytes = 0;
  const eng::Narrowed<R> narrowed{r};
  EXPECT_EQ(eng::reduce_axis_async_impl(nullptr, bytes, {d}, out.get(), axis, narrowed, 0, opt), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  EXPECT_EQ(eng::reduce_axis_async_impl(temp.get(), bytes, {d}, out.get(), axis, narrowed, 0, opt), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<T> h(outputs);
  if (outputs > 0) EXPECT_EQ(cudaMemcpy(h.data(), out.get(), outputs * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<double> values(outputs);
  for (std::size_t k = 0; k < outputs; ++k) values[k] = static_cast<double>(static_cast<float>(h[k]));
  return values;
}

// A double rounded once into T's format by round_double (the exact rounding the CPU tests hold to
// big integers; independent of the conversion the kernels use), as a double; NaN stays NaN.
template <class T>
double rounded_once(double v) {
  if (std::isnan(v)) return v;
  const auto bits = static_cast<std::uint16_t>(fr::primitives::round_double<fr::primitives::kFormatOf<T>>(v));
  T t;
  std::memcpy(&t, &bits, sizeof(T));
  return static_cast<double>(static_cast<float>(t));
}

// In Mode::Exact the mean and the L1 norm are their exact value rounded once into T (the
// big-integer reference's rounding to T's format: never through float), 1-D at two alignments and
// along rows, columns and a strided view; the L2 norm, variance and standard deviation (1-D, both
// modes) are the double their finish computes (the references above) rounded once into T. Every
// data set, subnormals, overflow, NaN and infinities included.
template <class T>
void check_narrowed(int kind) {
  const std::size_t n = quick() ? 300000 : 1100000;
  const std::vector<T> x = exact_data<T>(kind, n, test_seed() + 300 + std::uint64_t(kind));
  const std::vector<T> m = magnitudes(x);
  DeviceBuffer<T> dx(n);
  CUDA_OK(cudaMemcpy(dx.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const std::string what = std::string(kExactDataSets[kind]) + (std::is_same_v<T, __half> ? ", half" : ", bfloat16");
  const auto mean = fr::reduction_of(std::type_identity<T>{}, fr::Mean{});
  const auto l1 = fr::reduction_of(std::type_identity<T>{}, fr::NormL1{});
  const auto l2 = fr::reduction_of(std::type_identity<T>{}, fr::NormL2{});
  auto narrow = [](double v) { return rounded_once<T>(v); };
  auto check = [&](double got, double expected, const std::string& where) {
    EXPECT_TRUE(same_result(got, expected)) << what << ", " << where << std::hexfloat << ": " << got << ", expected "
                                            << expected;
  };
  for (std::size_t size : {std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(70001), n - 1}) {
    for (std::size_t offset : {0u, 1u}) {
      const T* d = dx.get() + offset;
      const T* h = x.data() + offset;
      const fr::Axis row{1, size, 1};
      const std::string at = "n " + std::to_string(size) + " + " + std::to_string(offset);
      check(narrowed_call(d, row, mean, fr::Mode::Exact)[0], fr::reference::exact_mean_rounded<T>(h, size), "mean, " + at);
      check(narrowed_call(d, row, l1, fr::Mode::Exact)[0], fr::reference::exact_rounded<T>(m.data() + offset, size),
            "L1, " + at);
      const double want_l2 = narrow(std::sqrt(reference_sum_of_squares(h, size)));
      const double want_var = narrow(reference_variance_double(h, size, 1, false));
      const double want_std = narrow(reference_variance_double(h, size, 0, true));
      for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
        const std::string in = at + ", " + mode_name(mode);
        check(narrowed_call(d, row, l2, mode)[0], want_l2, "L2, " + in);
        check(narrowed_call(d, row, fr::reduction_of(std::type_identity<T>{}, fr::Var{1}), mode)[0], want_var,
              "var (correction 1), " + in);
        check(narrowed_call(d, row, fr::reduction_of(std::type_identity<T>{}, fr::Std{0}), mode)[0], want_std,
              "std (correction 0), " + in);
      }
    }
  }
  // Along an axis (the exact check's short rows, the exact lanes' long ones, columns, a strided view;
  // the L2 norm in both modes, with TermCheck up to 4096 elements and the exact lanes beyond; the
  // variance and standard deviation, with VarianceCheck and the two passes beyond).
  // The Sum in T along axes too (fr::reduce_axis_async into T*), the exact sum rounded once into T.
  for (const fr::Axis& axis : {fr::Axis{1000, 33, 1}, fr::Axis{40, 1500, 1}, fr::Axis{5, 20000, 1}, fr::Axis{3, 2053, 32},
                               fr::Axis{1, 300, 200, fr::Axis::kContiguous, 1, 300}}) {
    const std::size_t outputs = axis.outer * axis.inner;
    std::vector<double> sums(outputs);
    {
      DeviceBuffer<T> out(outputs);
      out.poison();
      const fr::Options opt{.mode = fr::Mode::Exact};
      std::size_t bytes = 0;
      EXPECT_EQ(fr::reduce_axis_async(nullptr, bytes, dx.get(), out.get(), axis, fr::Sum{}, 0, opt), cudaSuccess);
      DeviceBuffer<char> temp(bytes);
      EXPECT_EQ(fr::reduce_axis_async(temp.get(), bytes, dx.get(), out.get(), axis, fr::Sum{}, 0, opt), cudaSuccess);
      std::vector<T> h(outputs);
      CUDA_OK(cudaMemcpy(h.data(), out.get(), outputs * sizeof(T), cudaMemcpyDeviceToHost));
      for (std::size_t k = 0; k < outputs; ++k) sums[k] = static_cast<double>(static_cast<float>(h[k]));
    }
    const std::vector<double> means = narrowed_call(dx.get(), axis, mean, fr::Mode::Exact);
    const std::vector<double> norms = narrowed_call(dx.get(), axis, l1, fr::Mode::Exact);
    const std::vector<double> exact_l2 = narrowed_call(dx.get(), axis, l2, fr::Mode::Exact);
    const std::vector<double> repro_l2 = narrowed_call(dx.get(), axis, l2, fr::Mode::Reproducible);
    const std::vector<double> vars =
        narrowed_call(dx.get(), axis, fr::reduction_of(std::type_identity<T>{}, fr::Var{1}), fr::Mode::Exact);
    const std::vector<double> stds =
        narrowed_call(dx.get(), axis, fr::reduction_of(std::type_identity<T>{}, fr::Std{0}), fr::Mode::Reproducible);
    int failures = 0;
    for (std::size_t o = 0; o < axis.outer; ++o) {
      for (std::size_t i = 0; i < axis.inner; ++i) {
        const std::size_t k = o * axis.inner + i;
        const std::vector<T> e = axis_elements(x, 0, axis, o, i);
        const std::vector<T> em = magnitudes(e);
        const double want_sum = fr::reference::exact_rounded<T>(e.data(), e.size());
        const double want_mean = fr::reference::exact_mean_rounded<T>(e.data(), e.size());
        const double want_l1 = fr::reference::exact_rounded<T>(em.data(), em.size());
        const double want_l2 = narrow(std::sqrt(reference_sum_of_squares(e.data(), e.size())));
        const double want_var = narrow(reference_variance_double(e.data(), e.size(), 1, false));
        const double want_std = narrow(reference_variance_double(e.data(), e.size(), 0, true));
        if ((!same_result(sums[k], want_sum) || !same_result(means[k], want_mean) || !same_result(norms[k], want_l1) ||
             !same_result(exact_l2[k], want_l2) || !same_result(repro_l2[k], want_l2) ||
             !same_result(vars[k], want_var) || !same_result(stds[k], want_std)) &&
            ++failures <= 3) {
          ADD_FAILURE() << what << ": output (" << o << ", " << i << ") of " << axis.outer << " x " << axis.length
                        << " x " << axis.inner << std::hexfloat << ": sum " << sums[k] << " (exact " << want_sum
                        << "), mean " << means[k] << " (exact " << want_mean
                        << "), L1 " << norms[k] << " (exact " << want_l1 << "), L2 " << exact_l2[k] << " and "
                        << repro_l2[k] << " (expected " << want_l2 << "), var " << vars[k] << " (expected " << want_var
                        << "), std " << stds[k] << " (expected " << want_std << ")";
        }
      }
    }
  }
}

// The L2 norm, variance and standard deviation of T (0: L2, 1: var, 2: std, both with correction
// 0) by the references above: the double the finish rounds into T.
template <class T>
double reference_statistic(int op, const std::vector<T>& x) {
  if (op == 0) return std::sqrt(reference_sum_of_squares(x.data(), x.size()));
  return reference_variance_double(x.data(), x.size(), 0, op == 2);
}

// Sets of T whose statistic rounds into T differently once and through float (the float lands on a
// midpoint of T): the data that tell a finish rounding through float from one rounding once. Three
// found by hand, and up to three a statistic found among random sets of 2 to 5 values (a fixed
// seed: the same sets every run), each checked to tell the two apart.
template <class T>
std::vector<std::pair<int, std::vector<T>>> double_rounding_sets() {
  auto t = [](double v) { return static_cast<T>(v); };  // exact: every value below is one of T's
  std::vector<std::pair<int, std::vector<T>>> sets;
  if constexpr (std::is_same_v<T, __half>) {
    sets.push_back({0, {t(1), t(0x1p-5), t(0x1p-11), t(0x1p-20)}});  // L2: 1 + 2^-10 once, 1 through float
    sets.push_back({1, {t(2), t(-0x1p-11)}});  // var: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: 1 + 2^-10 once, 1 through float
  } else {
    sets.push_back({0, {t(1), t(0x1p-4), t(0x1p-4), t(0x1p-8), t(0x1p-20)}});  // L2: 1 + 2^-7 once, 1 through float
  }
  constexpr int p = std::is_same_v<T, __half> ? 11 : 8;
  std::mt19937_64 rng(20261127);
  for (int op = 0; op < 3; ++op) {
    int found = 0;
    for (int tries = 0; tries < (1 << 21) && found < 3; ++tries) {
      std::vector<T> x(2 + rng() % 4);
      for (auto& v : x) {
        const double m = double((std::uint64_t(1) << (p - 1)) | (rng() & ((std::uint64_t(1) << (p - 1)) - 1)));
        v = t((rng() & 1 ? -1.0 : 1.0) * std::ldexp(m, int(rng() % 13) - 6 - (p - 1)));
      }
      const double v = reference_statistic(op, x);
      if (std::isfinite(v) && rounded_once<T>(v) != rounded_once<T>(double(float(v)))) {
        sets.push_back({op, x});
        ++found;
      }
    }
    EXPECT_GT(found, 0) << "no set found for statistic " << op;
  }
  return sets;
}

// Each set's statistic, 1-D, in both modes: rounded once (and the set tells once from through float).
template <class T>
void check_double_rounding_sets() {
  const char* names[] = {"L2", "var", "std"};
  for (const auto& [op, x] : double_rounding_sets<T>()) {
    const double v = reference_statistic(op, x);
    const double want = rounded_once<T>(v);
    ASSERT_NE(want, rounded_once<T>(double(float(v)))) << names[op] << ": a set that does not tell the roundings apart";
    DeviceBuffer<T> d(x.size());
    CUDA_OK(cudaMemcpy(d.get(), x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
    const fr::Axis row{1, x.size(), 1};
    for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
      const double got = op == 0 ? narrowed_call(d.get(), row, fr::reduction_of(std::type_identity<T>{}, fr::NormL2{}), mode)[0]
                         : op == 1 ? narrowed_call(d.get(), row, fr::reduction_of(std::type_identity<T>{}, fr::Var{0}), mode)[0]
                                   : narrowed_call(d.get(), row, fr::reduction_of(std::type_identity<T>{}, fr::Std{0}), mode)[0];
      std::string values;
      for (const T& e : x) values += " " + std::to_string(double(float(e)));
      EXPECT_TRUE(same_result(got, want)) << names[op] << " of" << values << ", " << mode_name(mode) << std::hexfloat
                                          << ": " << got << ", rounded once " << want << ", through float "
                                          << rounded_once<T>(double(float(v)));
    }
  }
}

template <class T>
void check_narrowed_every_data_set() {
  FASTREDUCE_REQUIRE_GPU();
  check_double_rounding_sets<T>();
  for (int kind = 0; kind < kExactDataSetCount; ++kind) check_narrowed<T>(kind);
}

}  // namespace

TEST(ExactOps, HalfStatisticsInTheirOwnTypeAreRoundedOnce) { check_narrowed_every_data_set<__half>(); }
TEST(ExactOps, Bfloat16StatisticsInTheirOwnTypeAreRoundedOnce) { check_narrowed_every_data_set<__nv_bfloat16>(); }

// Doubles have no exact variance: refused in both modes (1-D, along an axis, over segments) before
// anything is written, the message naming the types that have it; the same call in fast mode runs.
TEST(ExactOps, DoubleVarianceIsRefused) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<double> dx(1000);
  CUDA_OK(cudaMemset(dx.get(), 0, 1000 * sizeof(double)));
  DeviceBuffer<std::int64_t> offsets(3);
  const std::int64_t host_offsets[3] = {0, 400, 1000};
  CUDA_OK(cudaMemcpy(offsets.get(), host_offsets, sizeof(host_offsets), cudaMemcpyHostToDevice));
  DeviceBuffer<char> temp(1 << 20);
  const std::int64_t *b = offsets.get(), *e = offsets.get() + 1;
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const fr::Options opt{.mode = mode};
    DeviceBuffer<double> dout(2);
    dout.poison();
    std::size_t bytes = 1 << 20;
    EXPECT_EQ(fr::reduce_async(temp.get(), bytes, dx.get(), dout.get(), 1000, fr::Var{1}, 0, opt), cudaErrorNotSupported);
    bytes = 1 << 20;
    EXPECT_EQ(fr::reduce_axis_async(temp.get(), bytes, dx.get(), dout.get(), fr::Axis{2, 500, 1}, fr::Std{1}, 0, opt),
              cudaErrorNotSupported);
    bytes = 1 << 20;
    EXPECT_EQ(fr::reduce_segments_async(temp.get(), bytes, dx.get(), dout.get(), 2, b, e, fr::Var{1}, 0, opt),
              cudaErrorNotSupported);
    const char* message = nullptr;
    bytes = 0;
    const auto var = fr::reduction_of(std::type_identity<double>{}, fr::Var{1});
    EXPECT_EQ((eng::reduce_segments_async_impl<std::remove_cvref_t<decltype(var)>, std::int64_t>(
                  nullptr, bytes, {dx.get()}, dout.get(), 2, b, e, var, 0, opt, &message)),
              cudaErrorNotSupported);
    ASSERT_NE(message, nullptr);
    EXPECT_NE(std::string(message).find("variance and standard deviation of float, half and bfloat16"), std::string::npos)
        << message;
    CUDA_OK(cudaDeviceSynchronize());
    for (double v : copy_back<double>(dout, 2)) EXPECT_EQ(std::bit_cast<std::uint64_t>(v), 0xA5A5A5A5A5A5A5A5ull) << "written";
    bytes = 1 << 20;
    EXPECT_EQ(fr::reduce_segments_async(temp.get(), bytes, dx.get(), dout.get(), 2, b, e, fr::Var{1}, 0, fr::Options{}),
              cudaSuccess);
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(copy_back<double>(dout, 2)[0], 0.0) << "the fast call";
  }
}

struct SquareOf {
  __host__ __device__ float operator()(float x) const { return x * x; }
};

// The family's other sum-like ops keep refusing the modes, with the message naming what has them.
TEST(ExactOps, OpsWithoutAnExactFormAreRefused) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> in(1000);
  DeviceBuffer<float> out(1);
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const fr::Options opt{.mode = mode};
    std::size_t bytes = 0;
    // Users' sums (an ordered op of floating-point values) have no such form.
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, in.get(), out.get(), 1000, fr::transformed(SquareOf{}, fr::Sum{}), 0, opt),
              cudaErrorNotSupported);
    // Integers' L1 norm and mean (doubles of int64 values) have no such form either.
    DeviceBuffer<std::int32_t> ints(10);
    DeviceBuffer<double> dout(1);
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, ints.get(), dout.get(), 10, fr::NormL1{}, 0, opt), cudaErrorNotSupported);
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, ints.get(), dout.get(), 10, fr::Mean{}, 0, opt), cudaErrorNotSupported);
  }
}
