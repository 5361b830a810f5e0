// Mode::Exact and Mode::Reproducible for the family's sum-like ops. The L1 norm of floating-point
// inputs runs on the sums' own kernels with each element's sign bit cleared as it is loaded, so on
// every shape (1-D, rows, columns, strided views, segments) and in both modes its bits must equal
// the built-in Sum's of the magnitudes, and in Mode::Exact the correctly rounded sum of |x| (the
// big-integer reference, bench/reference.hpp). The mean runs on the same kernels and divides the
// exact total by the count: in Mode::Exact it must be the exact quotient rounded once (the
// reference's long division) on every shape, ties included; in Mode::Reproducible its bits must
// not depend on the grid, and an output along an axis or a segment must equal the 1-D mean of its
// elements alone. The L2 norm of float, half and bfloat16 inputs (1-D) is the square root of the
// exact sum of squares: in both modes its bits must equal the big-integer reference's sum of the
// squares rounded to double, its square root rounded to double, then to float.
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
// (repro_block_row with squares, as exact_norm2_kernel runs them) and sum_of_squares_rows, against the big-integer reference's sum rounded to double, 29 bits finer.
template <class T>
__global__ void __launch_bounds__(eng::kReproThreads, 2) squares_rows_kernel(eng::ReproArgs<T, float> args) {
  __shared__ eng::ReproShared<double> shared;
  const eng::ReproSpan<T> spans[1] = {{args.in, args.n, args.tiles, args.aligned}};
  eng::repro_block_row<T, 1, true, false, true>(spans, args.rows, shared);
}
__global__ void __launch_bounds__(eng::kReproThreads) squares_total_kernel(const unsigned long long* rows, unsigned count,
                                                                         double* out) {
  __shared__ eng::ReproShared<double> shared;
  double squares = 0.0;
  if (eng::sum_of_squares_rows(rows, count, shared, squares)) *out = squares;
}

template <class T>
double device_sum_of_squares(const T* d, std::size_t n, unsigned grid) {
  DeviceBuffer<unsigned long long> rows(std::size_t(grid) * fr::primitives::kExactRowWords<double>);
  DeviceBuffer<double> out(1);
  out.poison();
  const eng::ReproArgs<T, float> args{d, n, (n + eng::kReproTile - 1) / eng::kReproTile,
                                      reinterpret_cast<std::uintptr_t>(d) % 16 == 0, rows.get(), nullptr,
                                      fr::primitives::ResultType::Acc};
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

// The exact L2 norm takes one contiguous output only: along an axis, over segments, or for doubles
// (whose squares need more than a double), both modes are refused before anything is written.
TEST(ExactOps, NormL2HasTheModesIn1DOnly) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> in(1000);
  DeviceBuffer<double> din(1000);
  CUDA_OK(cudaMemset(in.get(), 0, 1000 * sizeof(float)));
  CUDA_OK(cudaMemset(din.get(), 0, 1000 * sizeof(double)));
  DeviceBuffer<std::int64_t> offsets(3);
  const std::int64_t host_offsets[3] = {0, 400, 1000};
  CUDA_OK(cudaMemcpy(offsets.get(), host_offsets, sizeof(host_offsets), cudaMemcpyHostToDevice));
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const fr::Options opt{.mode = mode};
    DeviceBuffer<float> out(8);
    DeviceBuffer<double> dout(1);
    out.poison();
    // Calls with storage (not size queries), so that a launch would write the poisoned outputs.
    DeviceBuffer<char> temp(1 << 20);
    std::size_t bytes = 1 << 20;
    const char* message = nullptr;
    const fr::Axis strided{1, 500, 1, fr::Axis::kContiguous, 2, fr::Axis::kContiguous};  // one output, every other element
    for (const fr::Axis& axis : {fr::Axis{2, 500, 1}, fr::Axis{1, 500, 2}, strided}) {
      bytes = 1 << 20;
      EXPECT_EQ(fr::reduce_axis_async(temp.get(), bytes, in.get(), out.get(), axis, fr::NormL2{}, 0, opt),
                cudaErrorNotSupported)
          << axis.outer << " x " << axis.length << " x " << axis.inner;
    }
    bytes = 1 << 20;
    EXPECT_EQ(fr::reduce_segments_async(temp.get(), bytes, in.get(), out.get(), 2, offsets.get(), offsets.get() + 1,
                                        fr::NormL2{}, 0, opt),
              cudaErrorNotSupported);
    bytes = 1 << 20;
    EXPECT_EQ(fr::reduce_async(temp.get(), bytes, din.get(), dout.get(), 1000, fr::NormL2{}, 0, opt), cudaErrorNotSupported);
    // The same strided view in fast mode is accepted (the refusal is the mode's).
    bytes = 1 << 20;
    EXPECT_EQ(fr::reduce_axis_async(temp.get(), bytes, in.get(), out.get() + 4, strided, fr::NormL2{}, 0, fr::Options{}),
              cudaSuccess);
    // The message names the shape.
    EXPECT_EQ(eng::axis_temp_bytes<eng::l2_reduction<float>>(fr::Axis{2, 500, 1}, {in.get()}, opt, 0, bytes, &message),
              cudaErrorNotSupported);
    ASSERT_NE(message, nullptr);
    EXPECT_NE(std::string(message).find("one contiguous output"), std::string::npos) << message;
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<float> after = copy_back<float>(out, 8);
    for (std::size_t q = 0; q < 8; ++q) {
      if (q != 4) EXPECT_EQ(std::bit_cast<std::uint32_t>(after[q]), 0xA5A5A5A5u) << "output " << q << " was written";
    }
    EXPECT_NE(std::bit_cast<std::uint32_t>(after[4]), 0xA5A5A5A5u) << "the fast call wrote nothing";
  }
}

// The family's other sum-like ops keep refusing the modes, with the message naming what has them.
TEST(ExactOps, OpsWithoutAnExactFormAreRefused) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> in(1000);
  DeviceBuffer<float> out(1);
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const fr::Options opt{.mode = mode};
    std::size_t bytes = 0;
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, in.get(), out.get(), 1000, fr::Var{}, 0, opt), cudaErrorNotSupported);
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, in.get(), out.get(), 1000, fr::Std{}, 0, opt), cudaErrorNotSupported);
    // Integers' L1 norm and mean (doubles of int64 values) have no such form either.
    DeviceBuffer<std::int32_t> ints(10);
    DeviceBuffer<double> dout(1);
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, ints.get(), dout.get(), 10, fr::NormL1{}, 0, opt), cudaErrorNotSupported);
    EXPECT_EQ(fr::reduce_async(nullptr, bytes, ints.get(), dout.get(), 10, fr::Mean{}, 0, opt), cudaErrorNotSupported);
  }
}
