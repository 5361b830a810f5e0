// Every op of the reduce family that is not a precompiled built-in (arg-extremes, mean, variance,
// standard deviation, norms, dot, a user's transform, a user's non-commutative op) on every
// layout of the engine: one output (the 1-D paths), rows short (tiles), medium (a warp each) and
// long (pieces over blocks), columns with 16-byte packs and single columns, strided views,
// negative strides, segments, length 0 and misaligned inputs; against references in quad or
// exact arithmetic, each output poisoned first.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "affine_op.hpp"
#include "fastreduce/stats.cuh"
#include "gpu_test.hpp"
#include "quad_reference.hpp"

namespace fr = fastreduce;
using namespace fastreduce::testing;

namespace {

struct SquareInt {  // a user's transform: exact int64 sums of squares
  __host__ __device__ std::int64_t operator()(std::int32_t x) const { return std::int64_t(x) * x; }
};
struct ToAffine {  // a user's non-commutative op on 32-bit words, index-aware
  __host__ __device__ Affine operator()(std::uint32_t v, std::size_t k) const {
    return {v | 1u, v ^ static_cast<std::uint32_t>(k * 2654435761u)};
  }
};

template <class T>
double as_double(const T& x) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(x);
  else return static_cast<double>(static_cast<float>(x));
}

// A named shape with resolved strides, and where each output's elements lie.
struct Layout {
  std::string name;
  fr::Axis axis;
  std::int64_t os = 0, ls = 0, is = 0;  // resolved strides
  std::int64_t base = 0;                // element (0, 0, 0) in the storage
  std::size_t storage = 0;              // elements to allocate
  std::size_t outputs() const { return axis.outer * axis.inner; }
  std::int64_t at(std::size_t q, std::size_t k) const {
    return base + std::int64_t(q / axis.inner) * os + std::int64_t(q % axis.inner) * is + std::int64_t(k) * ls;
  }
};

Layout make_layout(std::string name, fr::Axis a) {
  Layout l{std::move(name), a};
  l.is = a.inner_stride == fr::Axis::kContiguous ? 1 : a.inner_stride;
  l.ls = a.length_stride == fr::Axis::kContiguous ? std::int64_t(a.inner) : a.length_stride;
  l.os = a.outer_stride == fr::Axis::kContiguous ? std::int64_t(a.inner * a.length) : a.outer_stride;
  std::int64_t lo = 0, hi = 0;
  const std::size_t ext[3] = {a.outer, a.length, a.inner};
  const std::int64_t str[3] = {l.os, l.ls, l.is};
  for (int d = 0; d < 3; ++d) {
    if (ext[d] == 0) continue;
    const std::int64_t reach = str[d] * std::int64_t(ext[d] - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  l.base = -lo;
  l.storage = std::size_t(hi - lo + 1);
  return l;
}

std::vector<Layout> layouts() {
  const bool q = quick();
  std::vector<Layout> v;
  v.push_back(make_layout("one row", {.outer = 1, .length = q ? 70001u : 300001u}));
  v.push_back(make_layout("3 long rows", {.outer = 3, .length = q ? 50001u : 400003u}));
  v.push_back(make_layout("rows of 37", {.outer = q ? 2000u : 6000u, .length = 37}));
  v.push_back(make_layout("rows of 200", {.outer = q ? 1000u : 3000u, .length = 200}));
  v.push_back(make_layout("rows of 1000", {.outer = 2000, .length = 1000}));
  // An axis of length 1: outputs that are adjacent elements (the map path), and apart.
  v.push_back(make_layout("rows of 1", {.outer = q ? 5003u : 50003u, .length = 1}));
  v.push_back(make_layout("columns of one row", {.outer = 1, .length = 1, .inner = q ? 4099u : 40009u}));
  v.push_back(make_layout("length 1, 3 slices", {.outer = 3, .length = 1, .inner = 1001}));
  v.push_back(make_layout("length 1, outputs apart", {.outer = 3001, .length = 1, .outer_stride = 3}));
  v.push_back(make_layout("40 rows of 20000", {.outer = 40, .length = 20000}));
  v.push_back(make_layout("64 columns", {.length = 5000, .inner = 64}));
  v.push_back(make_layout("7 columns, 3 slices", {.outer = 3, .length = 20000, .inner = 7}));
  v.push_back(make_layout("strided", {.outer = 50, .length = 300, .inner = 20, .outer_stride = 12000, .length_stride = 40,
                                      .inner_stride = 2}));
  v.push_back(make_layout("transposed, columns reversed",
                          {.outer = 300, .length = 500, .inner = 1, .outer_stride = -1, .length_stride = 300, .inner_stride = 1}));
  v.push_back(make_layout("rows reversed", {.outer = 100, .length = 1000, .outer_stride = 1000, .length_stride = -1}));
  v.push_back(make_layout("length 0", {.outer = 4, .length = 0, .inner = 3}));
  return v;
}

template <class T>
std::vector<T> fresh_values(std::size_t n, std::mt19937_64& rng, bool ties) {
  std::vector<T> v(n);
  std::uniform_real_distribution<double> u(-100.0, 100.0);
  for (auto& x : v) {
    if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(std::int64_t(rng() % 201) - (std::is_signed_v<T> ? 100 : 0));
    } else {
      const double d = ties ? double(int(rng() % 64)) : u(rng);
      if constexpr (std::is_arithmetic_v<T>) x = static_cast<T>(d);
      else x = T(static_cast<float>(d));
    }
  }
  return v;
}

template <class T>
struct Device {
  DeviceBuffer<T> buffer;
  explicit Device(const std::vector<T>& host) : buffer(std::max<std::size_t>(host.size(), 1)) {
    if (!host.empty()) cudaMemcpy(buffer.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
};

template <class T>
std::vector<T> host_copy(const T* d, std::size_t n) {
  std::vector<T> h(n);
  if (n > 0) cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

::testing::AssertionResult close(double got, double want, double tol, double scale = 0) {
  if ((std::isnan(want) && std::isnan(got)) || got == want) return ::testing::AssertionSuccess();
  const double allowed = tol * std::max(std::fabs(want), scale);
  if (std::fabs(got - want) <= allowed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << want << " (error " << std::fabs(got - want)
                                       << ", allowed " << allowed << ")";
}

// The reference of `op` over one output's elements (x, and y for Dot), and the check of `got`.
template <class T, class Op, class Got>
::testing::AssertionResult check_output(const Op& op, const std::vector<T>& x, const std::vector<T>& y, const Got& got) {
  const std::size_t n = x.size();
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = as_double(x[i]);
  using S = fr::stat_t<T>;
  const double tol = std::is_same_v<S, float> ? 2.4e-7 : 1e-12;  // two roundings of a float result
  if constexpr (fr::is_arg_op_v<Op>) {
    constexpr bool kMax = std::is_same_v<Op, fr::ArgMax>;
    std::int64_t best = n == 0 ? INT64_MAX : 0;
    for (std::size_t i = 1; i < n && !std::isnan(w[std::size_t(best)]); ++i) {
      if (std::isnan(w[i]) || (kMax ? w[i] > w[std::size_t(best)] : w[i] < w[std::size_t(best)])) best = std::int64_t(i);
    }
    if (got.index != best) return ::testing::AssertionFailure() << "index " << got.index << ", want " << best;
    if (n > 0 && !same_bits(got.value, x[std::size_t(best)])) return ::testing::AssertionFailure() << "value bits differ";
    return ::testing::AssertionSuccess();
  } else if constexpr (std::is_same_v<Op, fr::Mean>) {
    // The moments' mean (doubles, integers of 32 and 64 bits) is a unit's shift (an element) plus
    // the offsets' mean, each rounded in double: beside the result's relative rounding, a few ulp
    // of the elements' magnitude (a mean near zero of elements near 100 is off by 2^-46 or so).
    double magnitude = 0;
    for (double v : w) magnitude = std::max(magnitude, std::fabs(v));
    return close(double(got), n == 0 ? NAN : quad_moments(w.data(), n).mean, tol, magnitude * 0x1p-48 / tol);
  } else if constexpr (std::is_same_v<Op, fr::Var> || std::is_same_v<Op, fr::Std>) {
    const auto m = quad_moments(w.data(), n);
    double want = n > std::size_t(op.correction) ? m.m2 / double(n - op.correction) : NAN;
    if (std::is_same_v<Op, fr::Std>) want = std::sqrt(want);
    return close(double(got), want, tol);
  } else if constexpr (std::is_same_v<Op, fr::NormL1>) {
    return close(double(got), quad_norm1(w.data(), n), tol);
  } else if constexpr (std::is_same_v<Op, fr::NormL2>) {
    return close(double(got), quad_norm2(w.data(), n), tol);
  } else if constexpr (std::is_same_v<Op, fr::NormInf>) {
    double m = 0;
    for (double v : w) m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, std::fabs(v));
    return close(double(got), m, 0);
  } else if constexpr (std::is_same_v<Op, fr::Dot>) {
    if constexpr (std::is_integral_v<T>) {
      std::uint64_t want = 0;
      for (std::size_t i = 0; i < n; ++i) want += std::uint64_t(std::int64_t(x[i])) * std::uint64_t(std::int64_t(y[i]));
      if (got == std::int64_t(want)) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "got " << got << ", want " << std::int64_t(want);
    } else {
      std::vector<double> v(n), a(n), b(n);
      for (std::size_t i = 0; i < n; ++i) {
        v[i] = as_double(y[i]);
        a[i] = std::fabs(w[i]);
        b[i] = std::fabs(v[i]);
      }
      // Signed products cancel: the bound scales with sum |x y|.
      return close(double(got), quad_dot(w.data(), v.data(), n), tol, quad_dot(a.data(), b.data(), n));
    }
  } else if constexpr (std::is_same_v<Op, fr::Transform<SquareInt, fr::Sum>>) {
    std::int64_t want = 0;
    for (std::size_t i = 0; i < n; ++i) want += std::int64_t(x[i]) * x[i];
    if (got == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "got " << got << ", want " << want;
  } else {  // the affine maps, composed in index order
    Affine f = Compose{}.identity();
    for (std::size_t k = 0; k < n; ++k) f = Compose{}(f, ToAffine{}(x[k], k));
    if (got.a == f.a && got.b == f.b) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "affine map differs";
  }
}

template <class T, class Op>
constexpr bool kTwoInputs = std::is_same_v<Op, fr::Dot>;

template <class T, class Op, bool Two = kTwoInputs<T, Op>>
struct OutOf {
  using type = fr::result_t<T, Op>;
};
template <class T, class Op>
struct OutOf<T, Op, true> {
  using type = fr::result2_t<T, T, Op>;
};
template <class T, class Op>
using Out = typename OutOf<T, Op>::type;

// Two results of one call (an arg-extreme compared by value and index, not by padding bytes).
template <class O>
bool same_result(const O& a, const O& b) {
  if constexpr (requires { a.index; }) return same_bits(a.value, b.value) && a.index == b.index;
  else return same_bits(a, b);
}

// Every byte of every result written (whole sectors): an arg-extreme's padding between a value
// narrower than the index and the index is zero, where the output was poisoned.
template <class O>
::testing::AssertionResult padding_zeroed(const std::vector<O>& got) {
  if constexpr (requires { got[0].index; }) {
    for (std::size_t q = 0; q < got.size(); ++q) {
      unsigned char bytes_of[sizeof(O)];
      std::memcpy(bytes_of, &got[q], sizeof(O));
      for (std::size_t b = sizeof(got[q].value); b < offsetof(O, index); ++b) {
        if (bytes_of[b] != 0) {
          return ::testing::AssertionFailure() << "output " << q << ": padding byte " << b << " is " << int(bytes_of[b]);
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// op along layout l, the input at `offset` elements from an allocation's start, its values moved
// by `center` (floating-point types). `same_rows`: every output's elements are output 0's, and
// every result must have its bits (the order a reduction's parts meet in does not depend on where
// the output lies). The outputs at `out_offset` results from an allocation's start, the results
// before them left as they were.
template <class T, class Op>
void check_layout(const Op& op, const char* what, const Layout& l, std::size_t offset, std::mt19937_64& rng,
                  const fr::Options& opt = {}, double center = 0, bool same_rows = false, std::size_t out_offset = 0) {
  const bool ties = fr::is_arg_op_v<Op>;
  auto hx = fresh_values<T>(l.storage + offset, rng, ties);
  auto hy = fresh_values<T>(l.storage + offset, rng, ties);
  if constexpr (!std::is_integral_v<T>) {
    if (center != 0) {
      for (T& v : hx) {
        if constexpr (std::is_arithmetic_v<T>) v = static_cast<T>(as_double(v) + center);
        else v = T(static_cast<float>(as_double(v) + center));
      }
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (fr::is_arg_op_v<Op> && l.storage > 100 && !same_rows) {
      // The first NaN wins: of a row's elements, or of its vectors (the second 5 elements on,
      // in a later one where a vector holds 4 or fewer: lanes of a row meet).
      hx[offset + l.storage / 3] = NAN;
      hx[offset + l.storage / 3 + 5] = NAN;
    }
  }
  if (same_rows) {
    for (std::size_t q = 1; q < l.outputs(); ++q) {
      for (std::size_t k = 0; k < l.axis.length; ++k) {
        const auto to = std::size_t(std::int64_t(offset) + l.at(q, k)), from = std::size_t(std::int64_t(offset) + l.at(0, k));
        hx[to] = hx[from];
        hy[to] = hy[from];
      }
    }
  }
  Device<T> dx(hx), dy(hy);
  const T* x = dx.buffer.get() + offset + l.base;
  const T* y = dy.buffer.get() + offset + l.base;
  const std::size_t outputs = l.outputs();
  DeviceBuffer<Out<T, Op>> out(std::max<std::size_t>(outputs, 1) + out_offset);
  out.poison();
  Out<T, Op>* const d_out = out.get() + out_offset;
  std::size_t bytes = 0;
  cudaError_t e;
  if constexpr (kTwoInputs<T, Op>) e = fr::reduce_axis_async(nullptr, bytes, x, y, d_out, l.axis, op, 0, opt);
  else e = fr::reduce_axis_async(nullptr, bytes, x, d_out, l.axis, op, 0, opt);
  ASSERT_EQ(e, cudaSuccess) << what << " " << l.name;
  DeviceBuffer<char> temp(bytes);
  if constexpr (kTwoInputs<T, Op>) e = fr::reduce_axis_async(temp.get(), bytes, x, y, d_out, l.axis, op, 0, opt);
  else e = fr::reduce_axis_async(temp.get(), bytes, x, d_out, l.axis, op, 0, opt);
  ASSERT_EQ(e, cudaSuccess) << what << " " << l.name;
  CUDA_OK(cudaDeviceSynchronize());
  const auto got = host_copy(d_out, outputs);
  ASSERT_TRUE(padding_zeroed(got)) << what << " " << l.name;
  if (out_offset > 0) {
    const auto before = host_copy(out.get(), out_offset);
    std::vector<unsigned char> poison(out_offset * sizeof(Out<T, Op>), DeviceBuffer<Out<T, Op>>::kPoison);
    ASSERT_EQ(std::memcmp(before.data(), poison.data(), poison.size()), 0) << what << " " << l.name << ": written before the outputs";
  }
  std::vector<T> ex(l.axis.length), ey(l.axis.length);
  for (std::size_t q = 0; q < outputs; ++q) {
    for (std::size_t k = 0; k < l.axis.length; ++k) {
      ex[k] = hx[std::size_t(std::int64_t(offset) + l.at(q, k))];
      ey[k] = hy[std::size_t(std::int64_t(offset) + l.at(q, k))];
    }
    ASSERT_TRUE(check_output<T>(op, ex, ey, got[q]))
        << what << " " << l.name << " output " << q << " offset " << offset << " max_blocks " << opt.max_blocks;
    if (same_rows) ASSERT_TRUE(same_result(got[q], got[0])) << what << " " << l.name << ": output " << q << "'s bits";
  }
}

// op along every layout, the input at `offset` elements from an allocation's start.
template <class T, class Op>
void check_layouts(const Op& op, const char* what, std::size_t offset = 0) {
  std::mt19937_64 rng(test_seed());
  for (const Layout& l : layouts()) {
    check_layout<T>(op, what, l, offset, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Why a segmented call failed: the engine's own message for the same call (the public API
// returns only the error code).
template <class T, class Op, class Offset>
std::string segments_message(void* temp, std::size_t bytes, const T* x, const T* y, Out<T, Op>* out, std::size_t count,
                             const Offset* begin, const Offset* end, const Op& op) {
  const char* message = nullptr;
  if constexpr (kTwoInputs<T, Op>) {
    using R = fr::reduction2_t<T, T, Op>;
    fr::engine::reduce_segments_async_impl<R, Offset>(temp, bytes, {x, y}, out, count, begin, end,
                                                      fr::reduction_of(std::type_identity<T>{}, std::type_identity<T>{}, op),
                                                      0, {}, &message);
  } else {
    using R = fr::reduction_t<T, Op>;
    fr::engine::reduce_segments_async_impl<R, Offset>(temp, bytes, {x}, out, count, begin, end,
                                                      fr::reduction_of(std::type_identity<T>{}, op), 0, {}, &message);
  }
  return message != nullptr ? message : "(no message)";
}

// op over segments of every kind: empty, reversed, short, long (spread over many warps).
template <class T, class Op>
void check_segments(const Op& op, const char* what) {
  std::mt19937_64 rng(test_seed());
  const std::size_t n = quick() ? 200003 : 2000003;
  auto hx = fresh_values<T>(n, rng, fr::is_arg_op_v<Op>);
  auto hy = fresh_values<T>(n, rng, fr::is_arg_op_v<Op>);
  Device<T> dx(hx), dy(hy);
  // 1 to 4096: counted and scanned by one block (1025 and 4095: a thread's several segments, not a
  // multiple of the block); 4097 and 5000: the counting kernel and CUB.
  for (std::size_t segments : {std::size_t(1), std::size_t(3), std::size_t(700), std::size_t(1025), std::size_t(4095),
                               std::size_t(4096), std::size_t(4097), std::size_t(5000)}) {
    std::vector<std::int64_t> begin(segments), end(segments);
    for (std::size_t s = 0; s < segments; ++s) {
      begin[s] = std::int64_t(rng() % n);
      const std::int64_t len = s % 7 == 0 ? 0 : std::int64_t(rng() % (s % 5 == 0 ? 100000 : 300));
      end[s] = s % 11 == 0 ? begin[s] - 1 : std::min<std::int64_t>(begin[s] + len, std::int64_t(n));
    }
    Device<std::int64_t> db(begin), de(end);
    DeviceBuffer<Out<T, Op>> out(segments);
    out.poison();
    std::size_t bytes = 0;
    cudaError_t e;
    if constexpr (kTwoInputs<T, Op>) {
      e = fr::reduce_segments_async(nullptr, bytes, dx.buffer.get(), dy.buffer.get(), out.get(), segments,
                                    db.buffer.get(), de.buffer.get(), op);
    } else {
      e = fr::reduce_segments_async(nullptr, bytes, dx.buffer.get(), out.get(), segments, db.buffer.get(),
                                    de.buffer.get(), op);
    }
    ASSERT_EQ(e, cudaSuccess) << what << ": "
                              << segments_message<T>(nullptr, 0, dx.buffer.get(), dy.buffer.get(), out.get(), segments,
                                                     db.buffer.get(), de.buffer.get(), op);
    DeviceBuffer<char> temp(bytes);
    if constexpr (kTwoInputs<T, Op>) {
      e = fr::reduce_segments_async(temp.get(), bytes, dx.buffer.get(), dy.buffer.get(), out.get(), segments,
                                    db.buffer.get(), de.buffer.get(), op);
    } else {
      e = fr::reduce_segments_async(temp.get(), bytes, dx.buffer.get(), out.get(), segments, db.buffer.get(),
                                    de.buffer.get(), op);
    }
    ASSERT_EQ(e, cudaSuccess) << what << ": "
                              << segments_message<T>(temp.get(), bytes, dx.buffer.get(), dy.buffer.get(), out.get(),
                                                     segments, db.buffer.get(), de.buffer.get(), op);
    CUDA_OK(cudaDeviceSynchronize());
    const auto got = host_copy(out.get(), segments);
    ASSERT_TRUE(padding_zeroed(got)) << what << " segments " << segments;
    for (std::size_t s = 0; s < segments; ++s) {
      const std::size_t len = std::size_t(std::max<std::int64_t>(end[s] - begin[s], 0));
      std::vector<T> ex(hx.begin() + begin[s], hx.begin() + begin[s] + std::int64_t(len));
      std::vector<T> ey(hy.begin() + begin[s], hy.begin() + begin[s] + std::int64_t(len));
      ASSERT_TRUE(check_output<T>(op, ex, ey, got[s])) << what << " segment " << s << " of " << segments;
    }
  }
}

// op in one dimension at the sizes where the 1-D paths change (one block, small, large, and with
// `bulk` the bulk copies' 128 MB), at two alignments.
template <class T, class Op>
void check_sizes(const Op& op, const char* what, bool bulk) {
  std::mt19937_64 rng(test_seed());
  std::vector<std::size_t> sizes{0, 1, 33, 65537, 262147, (std::size_t(1) << 20) + 3, (std::size_t(1) << 22) + 5};
  if (bulk && !quick()) sizes.push_back((std::size_t(128) << 20) / sizeof(T) + 7);
  for (std::size_t n : sizes) {
    auto hx = fresh_values<T>(n + 1, rng, fr::is_arg_op_v<Op>);
    auto hy = fresh_values<T>(n + 1, rng, fr::is_arg_op_v<Op>);
    Device<T> dx(hx), dy(hy);
    for (std::size_t offset : {std::size_t(0), std::size_t(1)}) {
      Out<T, Op> got;
      if constexpr (kTwoInputs<T, Op>) got = fr::reduce(dx.buffer.get() + offset, dy.buffer.get() + offset, n, op);
      else got = fr::reduce(dx.buffer.get() + offset, n, op);
      const std::vector<T> ex(hx.begin() + std::int64_t(offset), hx.begin() + std::int64_t(offset + n));
      const std::vector<T> ey(hy.begin() + std::int64_t(offset), hy.begin() + std::int64_t(offset + n));
      ASSERT_TRUE(check_output<T>(op, ex, ey, got)) << what << " n=" << n << " offset " << offset;
    }
  }
}

template <class T, class Op>
void check_everywhere(const Op& op, const char* what, bool bulk = false) {
  check_sizes<T>(op, what, bulk);
  check_layouts<T>(op, what);
  check_layouts<T>(op, what, 1);  // misaligned
  check_segments<T>(op, what);
}

// Short columns of a wide array take one lane a column (a block 129 to 256 packs wide; here by a
// grid of two blocks), where a reduction finishes as its kColumnFinish says: walked (the dot
// product, users' transforms), from a thread's registers a result at a time (the moments but the
// half types'), or with its pack's results stored as whole words where they lie on a word's
// boundary (the arg-extremes, the means of floats and half types, most norms, the half types'
// moments): against the references, the
// input aligned or not (a vector or a scalar a column), the outputs at a word's boundary or one
// result past it (then stored a result at a time), nothing written before them. Columns 40000
// wide take blocks of 256 packs of a vector (or 256 columns, the input off its alignment); 40009
// wide a column a thread; 800, 1600 and 201 wide with 4 slices, blocks of 200 packs (floats,
// bfloat16) or 201 columns, whose threads past the width hold no column of their own (such
// blocks walk).
template <class T, class Op>
void check_short_columns(const Op& op, const char* what) {
  std::mt19937_64 rng(test_seed());
  fr::Options few{};
  few.max_blocks = 2;
  const std::pair<std::size_t, std::size_t> shapes[] = {{3, 40000}, {3, 40009}, {4, 800}, {4, 1600}, {4, 201}};
  for (auto [outer, inner] : shapes) {
    for (std::size_t length : {std::size_t(3), std::size_t(4)}) {
      const Layout l = make_layout(std::to_string(outer) + " x " + std::to_string(length) + " x " + std::to_string(inner),
                                   {.outer = outer, .length = length, .inner = inner});
      for (std::size_t offset : {std::size_t(0), std::size_t(1)}) {
        for (std::size_t out_offset : {std::size_t(0), std::size_t(1)}) {
          check_layout<T>(op, what, l, offset, rng, few, 0, false, out_offset);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// The engine's plan of reduction R along `axis` of an input at `in` (which it does not read).
template <class R>
::testing::AssertionResult plan_of(const typename R::Input* in, const fr::Axis& axis, const fr::Options& opt,
                                   fr::engine::AxisPlan& plan) {
  const cudaError_t e = fr::engine::describe_axis_reduction<R>(fr::engine::inputs_t<R>{in}, axis, opt, plan);
  if (e == cudaSuccess) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "describe_axis_reduction: " << cudaGetErrorString(e);
}

}  // namespace

TEST(Family, ShortColumnsOneLaneAColumn) {
  FASTREDUCE_REQUIRE_GPU();
  {  // the plan: one lane a column, a vector of columns a thread
    namespace eng = fr::engine;
    DeviceBuffer<float> x(3 * 4 * 40000);
    fr::Options few{};
    few.max_blocks = 2;
    using R = fr::reduction_t<float, fr::Var>;
    eng::AxisPlan plan{};
    ASSERT_TRUE(plan_of<R>(x.get(), {.outer = 3, .length = 4, .inner = 40000}, few, plan));
    EXPECT_EQ(plan.path, eng::AxisPath::Columns);
    EXPECT_EQ(plan.lanes, 1u);
    EXPECT_EQ(plan.chunks, 1u);
    // Blocks narrower than their threads: 200 packs, one lane a column, 56 threads without one.
    DeviceBuffer<float> y(4 * 4 * 800);
    ASSERT_TRUE(plan_of<R>(y.get(), {.outer = 4, .length = 4, .inner = 800}, few, plan));
    EXPECT_EQ(plan.path, eng::AxisPath::Columns);
    EXPECT_EQ(plan.group, 200u);
    EXPECT_EQ(plan.lanes, 1u);
    // How each finishes there (measured: reduction.cuh, ColumnFinish).
    static_assert(eng::kColumnFinish<R> == eng::ColumnFinish::Lane);
    static_assert(eng::kColumnFinish<fr::reduction_t<float, fr::ArgMax>> == eng::ColumnFinish::LaneWords);
    static_assert(eng::kColumnFinish<fr::reduction_t<__nv_bfloat16, fr::Mean>> == eng::ColumnFinish::LaneWords);
    static_assert(eng::kColumnFinish<fr::reduction_t<float, fr::NormL1>> == eng::ColumnFinish::LaneWords);
    static_assert(eng::kColumnFinish<fr::reduction_t<__nv_bfloat16, fr::NormL1>> == eng::ColumnFinish::Walk);
    static_assert(eng::kColumnFinish<fr::reduction_t<__nv_bfloat16, fr::NormL2>> == eng::ColumnFinish::LaneWords);
    static_assert(eng::kColumnFinish<eng::dot_reduction<float>> == eng::ColumnFinish::Walk);
  }
  check_short_columns<float>(fr::ArgMax{}, "float argmax");
  check_short_columns<std::uint8_t>(fr::ArgMin{}, "uint8 argmin");
  check_short_columns<double>(fr::ArgMax{}, "double argmax");
  check_short_columns<float>(fr::Var{1}, "float var");
  check_short_columns<__nv_bfloat16>(fr::Std{0}, "bfloat16 std(0)");
  check_short_columns<double>(fr::Mean{}, "double mean");
  check_short_columns<float>(fr::Mean{}, "float mean");
  check_short_columns<__nv_bfloat16>(fr::Mean{}, "bfloat16 mean");
  check_short_columns<float>(fr::NormL1{}, "float L1");
  check_short_columns<float>(fr::NormInf{}, "float Linf");
  check_short_columns<float>(fr::NormL2{}, "float L2");
  check_short_columns<float>(fr::Dot{}, "float dot");
  check_short_columns<std::int32_t>(fr::transformed(SquareInt{}, fr::Sum{}), "int32 sum of squares");
}

// The half types' moments down columns by vectors: 24 bytes a column would not fit the columns
// kernel's 32 KB stage with a vector of 8 columns a thread, so the lanes are staged as their sums
// (LaneAcc) and each lane's count comes back from the rows it folded (axis_fast.cuh,
// column_lane_stage). Shapes with more lanes than rows (lanes that fold none), lanes of unequal
// counts, a block whose width does not divide its threads (threads past its lanes), pieces whose
// last one is shorter, one lane a column, few blocks; a wrong count shows in the divisions by it
// (the mean's offset and the variance); the input aligned (vectors) and not (a column a thread).
// Pieces of a power of two of rows take the mean's offset by a multiplication (axis_fast.cuh,
// column_partial), others by the division: both, with one lane a column, with lanes meeting in
// the walk, and in pieces.
TEST(Family, HalfMomentsColumnsByVectors) {
  FASTREDUCE_REQUIRE_GPU();
  namespace eng = fr::engine;
  using RB = fr::reduction_t<__nv_bfloat16, fr::Var>;
  using RH = fr::reduction_t<__half, fr::Std>;
  static_assert(eng::column_lane_stage<RB>() && eng::kColumnPack<RB> == 8);
  static_assert(eng::column_lane_stage<RH>() && eng::kColumnPack<RH> == 8);
  static_assert(!eng::column_lane_stage<fr::reduction_t<float, fr::Var>>());  // its Acc fits
  static_assert(!eng::column_lane_stage<fr::reduction_t<std::int16_t, fr::Var>>());  // not measured
  static_assert(eng::kColumnFinish<RB> == eng::ColumnFinish::LaneWords);
  static_assert(eng::column_units_by_vector<RB>() && eng::column_units_by_vector<RH>());
  static_assert(!eng::column_units_by_vector<fr::reduction_t<float, fr::Var>>());  // a load a column
  fr::Options few{};
  few.max_blocks = 2;
  const std::pair<fr::Axis, fr::Options> shapes[] = {
      {{.outer = 1, .length = 10, .inner = 16}, {}},         // 128 lanes, 10 rows
      {{.outer = 3, .length = 37, .inner = 128}, {}},        // 32 lanes of 2 or 1 rows
      {{.outer = 1, .length = 1000, .inner = 48}, {}},       // 6 packs: 42 lanes, 4 threads past them
      {{.outer = 1, .length = 100003, .inner = 64}, {}},     // pieces, the last one shorter
      {{.outer = 1, .length = 5000, .inner = 2048}, few},    // few blocks, lanes of 1250 rows
      {{.outer = 2, .length = 4, .inner = 40000}, few},      // one lane a column
      {{.outer = 2, .length = 3, .inner = 40000}, few},      // one lane a column of 3 rows
      {{.outer = 1, .length = 8, .inner = 16}, {}},          // 128 lanes, 8 rows
      {{.outer = 1, .length = 65536, .inner = 64}, few},     // pieces of 2^14 rows
  };
  bool idle_lanes = false, past_lanes = false, short_last_piece = false, one_lane = false;
  // column_partial's two forms (a power of two of rows or not) by one lane, by lanes, in pieces
  bool by_lane[2][3] = {};
  std::mt19937_64 rng(test_seed());
  for (const auto& [axis, opt] : shapes) {
    const Layout l = make_layout(std::to_string(axis.outer) + " x " + std::to_string(axis.length) + " x " +
                                     std::to_string(axis.inner), axis);
    DeviceBuffer<__nv_bfloat16> probe(l.storage + 1);
    DeviceBuffer<__half> probe_half(l.storage + 1);
    for (std::size_t offset : {std::size_t(0), std::size_t(1)}) {
      eng::AxisPlan plan{}, plan_half{};
      ASSERT_TRUE(plan_of<RB>(probe.get() + offset, axis, opt, plan));
      ASSERT_TRUE(plan_of<RH>(probe_half.get() + offset, axis, opt, plan_half));
      ASSERT_EQ(plan.path, offset == 0 ? eng::AxisPath::Columns : eng::AxisPath::ColumnsScalar) << l.name;
      ASSERT_EQ(plan_half.path, plan.path) << l.name;
      if (offset == 0) {
        const std::size_t last_rows = axis.length - (plan.chunks - 1) * plan.chunk;
        idle_lanes |= plan.lanes > last_rows;
        past_lanes |= plan.group * plan.lanes < eng::kAxisThreads;
        short_last_piece |= plan.chunks > 1 && last_rows < plan.chunk;
        one_lane |= plan.lanes == 1 && plan.group == eng::kAxisThreads;
        const std::size_t rows = std::min<std::size_t>(plan.chunk, axis.length);
        by_lane[(rows & (rows - 1)) == 0 ? 1 : 0][plan.chunks > 1 ? 2 : plan.lanes > 1 ? 1 : 0] = true;
      }
      check_layout<__nv_bfloat16>(fr::Var{1}, "bfloat16 var", l, offset, rng, opt, 1000);
      check_layout<__half>(fr::Std{0}, "half std(0)", l, offset, rng, opt, 1000);
      check_layout<__nv_bfloat16>(fr::Var{2}, "bfloat16 var(2)", l, offset, rng, opt, -300);
      // The half types' lanes take their shifts from their pack's first row, loaded as one
      // vector (axis_fast.cuh, column_units_by_vector). The data above lie far from 0, so on the
      // shapes whose lanes meet in the walk a lane shifted from another element than its
      // column's first would add its offsets to another's (where a thread finishes its own
      // columns a wrong shift moves only the rounding). Float's and double's moments, a load a
      // column, on the same shapes as controls.
      check_layout<float>(fr::Var{1}, "float var", l, offset, rng, opt, 1e4);
      check_layout<double>(fr::Std{1}, "double std", l, offset, rng, opt, -1e6);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_TRUE(idle_lanes) << "no shape had lanes without a row";
  EXPECT_TRUE(past_lanes) << "no shape had threads past the block's lanes";
  EXPECT_TRUE(short_last_piece) << "no shape had a shorter last piece";
  EXPECT_TRUE(one_lane) << "no shape had one lane a column";
  for (int pow2 : {0, 1}) {
    for (int form : {0, 1, 2}) {
      EXPECT_TRUE(by_lane[pow2][form]) << (pow2 ? "no power of two of rows" : "no other count of rows")
                                       << (form == 0 ? " by one lane" : form == 1 ? " by lanes" : " in pieces");
    }
  }
}

// The columns kernel stages packs of 16-byte values a value apart (axis_fast.cuh,
// kColumnStageStride), so a warp's stores of one column of its packs fall in distinct banks; the
// walk reads each lane's values back from there. Blocks of several lanes whose width is odd (37
// packs: 6 lanes and 34 threads past them), 100 packs (2 lanes), 8 packs (32 lanes, in pieces),
// 64 packs (4 lanes of 17 or 18 rows, and of 2 or 1), over slices and a grid of two blocks, for
// reductions whose packs are padded (the means of bfloat16 and floats, the arg-extremes of floats
// and doubles, the bfloat16 moments staged as sums) and two whose packs are not (the bfloat16 L2
// norm, 8 bytes a column; float var, 24 bytes); the input aligned (vectors) and one element off
// (a column a thread).
TEST(Family, ColumnsStagePaddedPacks) {
  FASTREDUCE_REQUIRE_GPU();
  namespace eng = fr::engine;
  static_assert(eng::kColumnStageStride<8, 16> == 9);   // bfloat16 mean: 8 sums and counts of 16 bytes
  static_assert(eng::kColumnStageStride<4, 16> == 5);   // float mean, float argmax
  static_assert(eng::kColumnStageStride<2, 16> == 3);   // double argmax
  static_assert(eng::kColumnStageStride<8, 4> == 8);    // bfloat16 sums in float: as before
  static_assert(eng::kColumnStageStride<16, 8> == 16);  // 8-bit sums in 64 bits: as before
  static_assert(eng::kColumnStageStride<1, 16> == 1);   // a column a thread: as before
  static_assert(eng::kColumnStageStride<4, 24> == 4);   // float moments (24 bytes): as before
  using RB = fr::reduction_t<__nv_bfloat16, fr::Mean>;
  using RF = fr::reduction_t<float, fr::ArgMax>;
  static_assert(eng::kColumnPack<RB> == 8 && sizeof(typename RB::Acc) == 16);
  static_assert(eng::kColumnPack<RF> == 4 && sizeof(typename RF::Acc) == 16);
  using RV = fr::reduction_t<__nv_bfloat16, fr::Var>;  // staged as its sums
  static_assert(sizeof(eng::column_stage_t<RV, eng::kColumnPack<RV>>) == 16);
  static_assert(sizeof(fr::reduction_t<double, fr::ArgMin>::Acc) == 16);
  static_assert(sizeof(fr::reduction_t<__nv_bfloat16, fr::NormL2>::Acc) == 8);  // not padded
  static_assert(sizeof(fr::reduction_t<float, fr::Var>::Acc) == 24);             // not padded
  fr::Options few{};
  few.max_blocks = 2;  // two resident blocks: the planner keeps blocks as wide as the packs
  struct Shape {
    std::size_t outer, length, packs;
    unsigned width, lanes;  // the plan expected of the vector kernel
  };
  const Shape shapes[] = {{4, 1000, 37, 37, 6}, {4, 333, 100, 100, 2}, {1, 5000, 8, 8, 32}, {4, 70, 64, 64, 4},
                          {4, 5, 64, 64, 4}};
  std::mt19937_64 rng(test_seed());
  bool pieces = false;
  const auto plan_is = [&](const auto* probe, const fr::Axis& axis, const Shape& s, auto r) {
    using R = decltype(r);
    eng::AxisPlan plan{};
    ASSERT_TRUE(plan_of<R>(probe, axis, few, plan));
    ASSERT_EQ(plan.path, eng::AxisPath::Columns);
    ASSERT_EQ(plan.group, s.width) << axis.inner << " columns";
    ASSERT_EQ(plan.lanes, s.lanes) << axis.inner << " columns";
    pieces |= plan.chunks > 1;
  };
  for (const Shape& s : shapes) {
    for (std::size_t v : {std::size_t(8), std::size_t(4), std::size_t(2)}) {  // elements a vector: 2-, 4-, 8-byte types
      const fr::Axis axis{.outer = s.outer, .length = s.length, .inner = s.packs * v};
      const Layout l = make_layout(std::to_string(s.outer) + " x " + std::to_string(s.length) + " x " +
                                       std::to_string(axis.inner), axis);
      DeviceBuffer<char> probe(16);
      if (v == 8) plan_is(reinterpret_cast<const __nv_bfloat16*>(probe.get()), axis, s, RB{});
      if (v == 4) plan_is(reinterpret_cast<const float*>(probe.get()), axis, s, RF{});
      if (::testing::Test::HasFatalFailure()) return;
      for (std::size_t offset : {std::size_t(0), std::size_t(1)}) {
        if (v == 8) {
          check_layout<__nv_bfloat16>(fr::Mean{}, "bfloat16 mean", l, offset, rng, few, 300);
          check_layout<__nv_bfloat16>(fr::Var{1}, "bfloat16 var", l, offset, rng, few, 1000);
          check_layout<__nv_bfloat16>(fr::NormL2{}, "bfloat16 L2", l, offset, rng, few);
        } else if (v == 4) {
          check_layout<float>(fr::Mean{}, "float mean", l, offset, rng, few, 300);
          check_layout<float>(fr::ArgMax{}, "float argmax", l, offset, rng, few);
          check_layout<float>(fr::Var{1}, "float var", l, offset, rng, few);
        } else {
          check_layout<double>(fr::ArgMin{}, "double argmin", l, offset, rng, few);
        }
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  EXPECT_TRUE(pieces) << "no shape was cut into pieces";
}

TEST(Family, ArgExtremes) {
  FASTREDUCE_REQUIRE_GPU();
  check_everywhere<float>(fr::ArgMax{}, "float argmax", true);
  check_everywhere<float>(fr::ArgMin{}, "float argmin");
  check_everywhere<double>(fr::ArgMax{}, "double argmax");
  check_everywhere<std::int32_t>(fr::ArgMin{}, "int32 argmin");
  check_everywhere<std::uint8_t>(fr::ArgMax{}, "uint8 argmax");
}

// The moments in three tests, whose CPU references take most of their time, so that a sharded
// tier spreads them (one test took some 200 s on an H200).
TEST(Family, MeanVarianceStd) {
  FASTREDUCE_REQUIRE_GPU();
  check_everywhere<float>(fr::Mean{}, "float mean");
  check_everywhere<float>(fr::Var{1}, "float var", true);
}

TEST(Family, DoubleVarianceStd) {
  FASTREDUCE_REQUIRE_GPU();
  check_everywhere<double>(fr::Var{0}, "double var(0)");
  check_everywhere<double>(fr::Std{2}, "double std(2)");
}

TEST(Family, NarrowMeanVarianceStd) {
  FASTREDUCE_REQUIRE_GPU();
  check_everywhere<__half>(fr::Var{1}, "half var");
  check_everywhere<__nv_bfloat16>(fr::Mean{}, "bfloat16 mean");
  // The moments of 2- and 1-byte types take a block per as many elements as float's
  // (per_element_share): 2^22 + 5 of them reach the large load path.
  check_everywhere<__nv_bfloat16>(fr::Var{1}, "bfloat16 var");
  check_everywhere<std::uint8_t>(fr::Std{0}, "uint8 std(0)");
  check_everywhere<std::int32_t>(fr::Std{1}, "int32 std");
}

TEST(Family, Norms) {
  FASTREDUCE_REQUIRE_GPU();
  check_everywhere<float>(fr::NormL2{}, "float L2", true);
  check_everywhere<float>(fr::NormL1{}, "float L1");
  check_everywhere<float>(fr::NormInf{}, "float Linf");
  check_everywhere<double>(fr::NormL2{}, "double L2");
  check_everywhere<__nv_bfloat16>(fr::NormL2{}, "bfloat16 L2");
}

TEST(Family, DotOfTwoInputs) {
  FASTREDUCE_REQUIRE_GPU();
  check_everywhere<float>(fr::Dot{}, "float dot");
  check_everywhere<double>(fr::Dot{}, "double dot");
  check_everywhere<std::int32_t>(fr::Dot{}, "int32 dot");
  // Inputs that lie differently from a 16-byte boundary: element by element.
  const std::size_t n = quick() ? 100003 : 3000017;
  std::mt19937_64 rng(test_seed());
  const auto hx = fresh_values<float>(n + 4, rng, false), hy = fresh_values<float>(n + 4, rng, false);
  Device<float> dx(hx), dy(hy);
  for (auto [ox, oy] : {std::pair<std::size_t, std::size_t>{1, 2}, {0, 3}, {2, 2}}) {
    const float got = fr::reduce(dx.buffer.get() + ox, dy.buffer.get() + oy, n, fr::Dot{});
    std::vector<float> ex(hx.begin() + std::int64_t(ox), hx.begin() + std::int64_t(ox + n));
    std::vector<float> ey(hy.begin() + std::int64_t(oy), hy.begin() + std::int64_t(oy + n));
    EXPECT_TRUE(check_output<float>(fr::Dot{}, ex, ey, got)) << ox << " " << oy;
  }
}

TEST(Family, UsersTransformAndOrderedOp) {
  FASTREDUCE_REQUIRE_GPU();
  check_everywhere<std::int32_t>(fr::transformed(SquareInt{}, fr::Sum{}), "int32 sum of squares");
  check_everywhere<std::uint32_t>(fr::transformed(ToAffine{}, Compose{}), "affine maps in order");
}

// The paths the layouts above are meant to take: an axis of length 1 over adjacent outputs runs
// the map kernel (not for arg-extremes, nor for the built-in ops, which read such rows as one
// array of vectors, as every op does some rows of 1 to 64 whole vectors, and the family's
// one-input ops rows of 128), other rows up to 1 KB the tiles.
TEST(Family, LengthOneAndShortRowsTakeTheirPaths) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<float> x(std::size_t(1) << 21);
  const auto path = [&]<class Op>(const Op& op, const fr::Axis& axis) {
    namespace eng = fr::engine;
    eng::AxisPlan plan{};
    if constexpr (std::is_same_v<Op, fr::Sum>) {
      EXPECT_EQ((eng::describe_axis<float, fr::Sum>(x.get(), axis, {}, plan)), cudaSuccess);
    } else {
      using R = fr::reduction_t<float, Op>;
      EXPECT_EQ(eng::describe_axis_reduction<R>(eng::inputs_t<R>{x.get()}, axis, {}, plan), cudaSuccess);
    }
    (void)op;
    return plan.path;
  };
  using P = fr::engine::AxisPath;
  for (const fr::Axis& a : {fr::Axis{.outer = 4096, .length = 1}, fr::Axis{.outer = 1, .length = 1, .inner = 4096},
                            fr::Axis{.outer = 4, .length = 1, .inner = 1024}}) {
    EXPECT_EQ(path(fr::Mean{}, a), P::Map);
    EXPECT_EQ(path(fr::Var{1}, a), P::Map);
    EXPECT_EQ(path(fr::NormL2{}, a), P::Map);
    EXPECT_EQ(path(fr::ArgMax{}, a), P::RowsTile);  // (four 16-byte results a vector)
    EXPECT_EQ(path(fr::Sum{}, a), P::RowsLanes);
  }
  EXPECT_NE(path(fr::Mean{}, {.outer = 2048, .length = 1, .outer_stride = 3}), P::Map);  // outputs apart
  EXPECT_EQ(path(fr::Mean{}, {.outer = 8192, .length = 256}), P::RowsLanes);
  EXPECT_EQ(path(fr::Mean{}, {.outer = 8192, .length = 128, .outer_stride = 132}), P::RowsWarp);  // rows apart
  EXPECT_EQ(path(fr::ArgMax{}, {.outer = 8192, .length = 200}), P::RowsTile);
  EXPECT_EQ(path(fr::Sum{}, {.outer = 8192, .length = 256}), P::RowsLanes);  // 1 KB: two vectors a lane
  EXPECT_EQ(path(fr::Sum{}, {.outer = 8192, .length = 512}), P::RowsWarp);
  EXPECT_EQ(path(fr::Var{1}, {.outer = 8192, .length = 512}), P::RowsLanes);  // 2 KB: a run a row
  EXPECT_EQ(path(fr::ArgMax{}, {.outer = 8192, .length = 512}), P::RowsLanes);
  EXPECT_EQ(path(fr::Var{1}, {.outer = 8192, .length = 1024}), P::RowsWarp);
}

// The rows-lanes kernel's grid per reduction: 2^28 elements in short rows are more runs than 16
// waves of resident blocks take, so the reductions whose lanes_loop asks for it (the moments and
// the means of float, half and bfloat16, float argmax over rows of 16 to 256) launch 16 waves that
// loop over the runs, and every other reduction and row a block per kAxisWarps runs (planning
// alone: it reads no element).
TEST(Family, RowsLanesGridPerReduction) {
  FASTREDUCE_REQUIRE_GPU();
  namespace eng = fr::engine;
  int device = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  DeviceBuffer<double> probe(2);
  const std::size_t total = std::size_t(1) << 28;
  const auto check = [&]<class R>(std::size_t length, bool loops, const char* what) {
    using T = typename R::Input;
    eng::AxisPlan plan{};
    const T* x = reinterpret_cast<const T*>(probe.get());
    const fr::Axis axis{.outer = total / length, .length = length};
    ASSERT_EQ(eng::describe_axis_reduction<R>(eng::inputs_t<R>{x}, axis, {}, plan), cudaSuccess) << what;
    ASSERT_EQ(plan.path, eng::AxisPath::RowsLanes) << what << " rows of " << length;
    const std::size_t every = (plan.items + eng::kAxisWarps - 1) / eng::kAxisWarps;
    if (loops) {
      EXPECT_LT(plan.grid, every) << what << " rows of " << length;
      EXPECT_EQ(plan.grid % (16 * sms), 0u) << what << " rows of " << length << ": " << plan.grid << " blocks";
    } else {
      EXPECT_EQ(plan.grid, every) << what << " rows of " << length;
    }
  };
  const auto expect = [&]<class T, class Op>(const Op&, std::size_t length, bool loops, const char* what) {
    if constexpr (fr::reducible<T, Op>) check.template operator()<eng::builtin_t<T, Op>>(length, loops, what);
    else check.template operator()<fr::reduction_t<T, Op>>(length, loops, what);
  };
  for (std::size_t length : {2, 4, 16, 64, 256}) {
    expect.template operator()<float>(fr::Var{1}, length, true, "float var");
    expect.template operator()<float>(fr::Std{0}, length, true, "float std");
    expect.template operator()<float>(fr::Mean{}, length, length >= 4, "float mean");
    expect.template operator()<float>(fr::Sum{}, length, false, "float sum");
    expect.template operator()<float>(fr::Max{}, length, false, "float max");
    expect.template operator()<float>(fr::NormL2{}, length, false, "float L2");
  }
  for (std::size_t length : {2, 4, 8, 64, 1024}) {
    expect.template operator()<__nv_bfloat16>(fr::Var{1}, length, length >= 4, "bfloat16 var");
    expect.template operator()<__half>(fr::Mean{}, length, length >= 4, "half mean");
  }
  for (std::size_t length : {4, 8, 16, 256, 512}) {
    expect.template operator()<float>(fr::ArgMax{}, length, length >= 16 && length <= 256, "float argmax");
  }
  expect.template operator()<double>(fr::Var{1}, 4, false, "double var");
  expect.template operator()<std::int32_t>(fr::ArgMin{}, 64, false, "int32 argmin");
}

// Rows as one array of vectors (AxisPath::RowsLanes) for every op of the family: rows of 4 bytes
// to 2 KB (2 or 4 rows a vector, then 1 to 128 vectors a row: 128 for one input), few rows and rows past the last
// whole vector, on three blocks (each warp takes many runs) and on the planner's grid; each
// shape's path is checked (off the 16-byte boundary they take others). Moments of data far from
// zero: each row's sums are taken from its first element, which every lane of the row must share.
// Every row of whole vectors takes the path; parts: rows of part of a vector do (not for results
// of 16 bytes). Then rows all equal to the first, whose results must have equal bits: a row's
// lanes meet in one tree wherever the row lies (which run, lane or block), so a wrong pairing of
// runs or lanes in the reduce-scatter shows. (The ops here combine by bitwise commutative
// operations, so the order of a combine's two operands does not show.)
template <class T, class Op>
void check_lanes_rows(const Op& op, const char* what, bool parts, double center = 0) {
  std::mt19937_64 rng(test_seed());
  DeviceBuffer<T> probe(64);  // (planning reads the addresses only)
  for (std::size_t row_bytes = 4; row_bytes <= 2048; row_bytes *= 2) {
    if (row_bytes < sizeof(T)) continue;
    const std::size_t length = row_bytes / sizeof(T);
    for (std::size_t outer : {std::size_t(7), std::size_t(quick() ? 1027 : 4099)}) {
      const Layout l = make_layout("rows of " + std::to_string(length), {.outer = outer, .length = length});
      for (unsigned blocks : {3u, 0u}) {
        fr::Options opt{};
        opt.max_blocks = blocks;
        check_layout<T>(op, what, l, 0, rng, opt, center);
        if (::testing::Test::HasFatalFailure()) return;
      }
      // Equal rows, equal bits: a row's lanes meet in one tree whichever run, lane or block holds it.
      check_layout<T>(op, what, l, 0, rng, {}, center, true);
      if (::testing::Test::HasFatalFailure()) return;
      for (std::size_t shift : {std::size_t(0), std::size_t(1)}) {
        namespace eng = fr::engine;
        eng::AxisPlan plan{};
        const T* p = probe.get() + shift;
        if constexpr (kTwoInputs<T, Op>) {
          using R = fr::reduction2_t<T, T, Op>;
          ASSERT_EQ(eng::describe_axis_reduction<R>(eng::inputs_t<R>{p, p}, l.axis, {}, plan), cudaSuccess);
        } else {
          using R = fr::reduction_t<T, Op>;
          ASSERT_EQ(eng::describe_axis_reduction<R>(eng::inputs_t<R>{p}, l.axis, {}, plan), cudaSuccess);
        }
        // (Rows of one element of 4 or 8 bytes other than the arg-extremes' take the map kernel;
        // rows of 2 KB (128 vectors) RowsLanes for one input, else a warp or a block a row.)
        const bool map = length == 1 && !fr::is_arg_op_v<Op>;
        const bool lanes = row_bytes == 2048 ? !kTwoInputs<T, Op> : row_bytes >= 16 || parts;
        if (row_bytes == 2048 && (shift != 0 || !lanes)) {
          EXPECT_TRUE(plan.path == eng::AxisPath::RowsWarp || plan.path == eng::AxisPath::RowsBlock)
              << what << " " << l.name << " shift " << shift << ": " << eng::axis_path_name(plan.path);
          continue;
        }
        const eng::AxisPath want = map                     ? eng::AxisPath::Map
                                   : shift == 0 && lanes ? eng::AxisPath::RowsLanes
                                                         : eng::AxisPath::RowsTile;
        EXPECT_EQ(plan.path, want) << what << " " << l.name << " shift " << shift << ": " << eng::axis_path_name(plan.path);
      }
    }
  }
}

TEST(Family, RowsLanes) {
  FASTREDUCE_REQUIRE_GPU();
  constexpr bool kParts = true;
  check_lanes_rows<float>(fr::ArgMax{}, "float argmax", !kParts);
  check_lanes_rows<std::int16_t>(fr::ArgMin{}, "int16 argmin", !kParts);
  check_lanes_rows<std::uint8_t>(fr::ArgMax{}, "uint8 argmax", !kParts);
  check_lanes_rows<double>(fr::ArgMin{}, "double argmin", !kParts);
  check_lanes_rows<float>(fr::Mean{}, "float mean", kParts);
  check_lanes_rows<__nv_bfloat16>(fr::Mean{}, "bfloat16 mean", kParts);
  check_lanes_rows<double>(fr::Mean{}, "double mean", kParts, 1e9);
  check_lanes_rows<float>(fr::Var{1}, "float var", kParts, 1e7);
  check_lanes_rows<__half>(fr::Std{0}, "half std", kParts, 1000);
  check_lanes_rows<double>(fr::Var{1}, "double var", kParts, 1e9);
  check_lanes_rows<std::int32_t>(fr::Std{1}, "int32 std", kParts);
  check_lanes_rows<float>(fr::NormL1{}, "float L1", kParts);
  check_lanes_rows<__nv_bfloat16>(fr::NormL2{}, "bfloat16 L2", kParts);
  check_lanes_rows<double>(fr::NormL2{}, "double L2", kParts);
  check_lanes_rows<float>(fr::NormInf{}, "float Linf", kParts);
  check_lanes_rows<float>(fr::Dot{}, "float dot", kParts);
  check_lanes_rows<__nv_bfloat16>(fr::Dot{}, "bfloat16 dot", kParts);
  check_lanes_rows<std::int32_t>(fr::Dot{}, "int32 dot", kParts);
  check_lanes_rows<std::int32_t>(fr::transformed(SquareInt{}, fr::Sum{}), "int32 sum of squares", kParts);
}

// The map kernel with a grid far smaller than its outputs (each thread takes several passes).
TEST(Family, LengthOneWithFewBlocks) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  const std::size_t n = 100003;
  const auto hx = fresh_values<float>(n, rng, false);
  Device<float> dx(hx);
  for (unsigned blocks : {1u, 2u, 7u}) {
    DeviceBuffer<float> out(n);
    out.poison();
    fr::Options opt{};
    opt.max_blocks = blocks;
    const fr::Axis axis{.outer = 1, .length = 1, .inner = n};
    std::size_t bytes = 0;
    const float* x = dx.buffer.get();
    ASSERT_EQ(fr::reduce_axis_async(nullptr, bytes, x, out.get(), axis, fr::Var{0}, 0, opt), cudaSuccess);
    DeviceBuffer<char> temp(bytes);
    ASSERT_EQ(fr::reduce_axis_async(temp.get(), bytes, x, out.get(), axis, fr::Var{0}, 0, opt), cudaSuccess);
    CUDA_OK(cudaDeviceSynchronize());
    const auto got = host_copy(out.get(), n);
    for (std::size_t q = 0; q < n; ++q) {
      ASSERT_TRUE(check_output<float>(fr::Var{0}, std::vector<float>{hx[q]}, {}, got[q]))
          << blocks << " blocks, output " << q;
    }
  }
}

// Options::finish_counter (a grid of several blocks finishes in its last block) on the family:
// the bits of the combine kernel's route, one launch, the word left 0. `y`: dot's second input.
template <class T, class Op>
void expect_counter_bits(const T* x, const T* y, std::size_t n, const Op& op, unsigned* counter, const char* what) {
  const fr::Options plain{}, counted{.finish_counter = counter};
  auto run = [&](void* temp, std::size_t& bytes, auto* out, const fr::Options& opt) {
    if constexpr (fr::header_op2<T, T, Op>) return fr::reduce_async(temp, bytes, x, y, out, n, op, 0, opt);
    else return fr::reduce_async(temp, bytes, x, out, n, op, 0, opt);
  };
  using R = typename decltype([] {
    if constexpr (fr::header_op2<T, T, Op>) return std::type_identity<fr::reduction2_t<T, T, Op>>{};
    else return std::type_identity<fr::reduction_t<T, Op>>{};
  }())::type;
  using O = typename R::Out;
  fr::engine::Route route{};
  typename fr::engine::inputs_t<R> in{};
  in.x = x;
  if constexpr (fr::header_op2<T, T, Op>) in.y = y;
  ASSERT_EQ(fr::engine::describe_reduction<R>(in, n, counted, route), cudaSuccess);
  const std::size_t read = sizeof(T) * (fr::header_op2<T, T, Op> ? 2 : 1);
  const bool self = n * read <= device_policy().self_finish_max_bytes;  // (n: several blocks)
  EXPECT_EQ(route.last_block_combines, self) << what << " n=" << n;
  EXPECT_EQ(route.combine_kernel, !self) << what;
  DeviceBuffer<O> out(2);
  out.poison();
  std::size_t bytes = 0;
  ASSERT_EQ(run(nullptr, bytes, out.get(), plain), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  ASSERT_EQ(run(temp.get(), bytes, out.get(), plain), cudaSuccess);
  ASSERT_EQ(run(temp.get(), bytes, out.get() + 1, counted), cudaSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  const auto got = host_copy(out.get(), 2);
  EXPECT_TRUE(same_result(got[0], got[1])) << what << " n=" << n;
  EXPECT_EQ(read_back(counter), 0u) << what;
}

TEST(Family, FinishCounterKeepsTheBits) {
  FASTREDUCE_REQUIRE_GPU();
  DeviceBuffer<unsigned> counter(1);
  CUDA_OK(cudaMemset(counter.get(), 0, sizeof(unsigned)));
  std::mt19937_64 rng(test_seed());
  // Small loads; large loads (floats; dot past the limit of bytes read: the combine kernel).
  for (std::size_t n : {std::size_t(300001), std::size_t(1500007)}) {
    const auto hx = fresh_values<float>(n + 1, rng, false), hy = fresh_values<float>(n + 1, rng, false);
    Device<float> x(hx), y(hy);
    for (std::size_t offset : {std::size_t(0), std::size_t(1)}) {
      const float* px = x.buffer.get() + offset;
      const float* py = y.buffer.get() + offset;
      expect_counter_bits(px, px, n, fr::ArgMax{}, counter.get(), "argmax");
      expect_counter_bits(px, px, n, fr::ArgMin{}, counter.get(), "argmin");
      expect_counter_bits(px, px, n, fr::Var{1}, counter.get(), "var");
      expect_counter_bits(px, px, n, fr::Mean{}, counter.get(), "mean");
      expect_counter_bits(px, px, n, fr::NormL2{}, counter.get(), "L2 norm");
      expect_counter_bits(px, py, n, fr::Dot{}, counter.get(), "dot");
    }
    std::vector<__nv_bfloat16> hb(n);
    for (std::size_t i = 0; i < n; ++i) hb[i] = __nv_bfloat16(hx[i]);
    Device<__nv_bfloat16> b(hb);
    expect_counter_bits(b.buffer.get(), b.buffer.get(), n, fr::Std{0}, counter.get(), "bfloat16 std");
    const auto hi = fresh_values<std::int32_t>(n, rng, false);
    Device<std::int32_t> i32(hi);
    expect_counter_bits(i32.buffer.get(), i32.buffer.get(), n, fr::transformed(SquareInt{}, fr::Sum{}), counter.get(),
                        "int32 sum of squares");
  }
}

// ArgMax leaves the one-block path at half the built-ins' bytes (its kOneBlockDivisor), where Sum
// keeps it; both sides of the limit give the first index of the maximum.
TEST(Family, ArgMaxLeavesOneBlockEarlier) {
  FASTREDUCE_REQUIRE_GPU();
  using R = fr::engine::ArgReduction<float, fr::ArgMax>;
  const fr::engine::ArchPolicy& arch = device_policy();
  const std::size_t limit = arch.one_block_max_bytes / 2 / sizeof(float);
  std::mt19937_64 rng(test_seed());
  const auto h = fresh_values<float>(limit + 64, rng, true);
  Device<float> d(h);
  for (std::size_t n : {limit - 1, limit, limit + 1, limit + 4, limit + 61}) {
    fr::engine::Route route{};
    ASSERT_EQ(fr::engine::describe_reduction<R>({d.buffer.get()}, n, {}, route), cudaSuccess);
    EXPECT_EQ(route.path, n <= limit ? fr::engine::Path::OneBlock : fr::engine::Path::Small) << n;
    EXPECT_EQ(route_of<float>(d.buffer.get(), n).path, fr::engine::Path::OneBlock) << n;
    const auto best = std::max_element(h.begin(), h.begin() + std::ptrdiff_t(n));  // the first maximum
    const fr::Indexed<float> got = fr::reduce(d.buffer.get(), n, fr::ArgMax{});
    EXPECT_EQ(got.index, best - h.begin()) << n;
    EXPECT_EQ(got.value, *best) << n;
  }
}

TEST(Family, ReproducibleModeAndBadArguments) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 100003;
  std::mt19937_64 rng(test_seed());
  const auto h = fresh_values<float>(n, rng, true);
  Device<float> d(h);
  const fr::Options repro{.mode = fr::Mode::Reproducible};
  // Exact in any order: the reproducible form is the fast one.
  const auto a = fr::reduce(d.buffer.get(), n, fr::ArgMax{}), b = fr::reduce(d.buffer.get(), n, fr::ArgMax{}, repro);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(fr::reduce(d.buffer.get(), n, fr::NormInf{}, repro), fr::reduce(d.buffer.get(), n, fr::NormInf{}));
  // The variance has it along an axis and over segments too (tests/gpu/exact_ops_test.cu holds it to
  // the exact sums' fixed rounding), with Mode::Exact's bits, near fast mode's.
  DeviceBuffer<float> out(4);
  out.poison();
  const float poison = read_back(out.get());
  std::size_t bytes = 1 << 20;
  DeviceBuffer<char> temp(bytes);
  {
    DeviceBuffer<float> vars(12);
    fr::reduce_axis(d.buffer.get(), vars.get(), {.outer = 4, .length = 1000}, fr::Std{}, repro);
    fr::reduce_axis(d.buffer.get(), vars.get() + 4, {.outer = 4, .length = 1000}, fr::Std{},
                    fr::Options{.mode = fr::Mode::Exact});
    fr::reduce_axis(d.buffer.get(), vars.get() + 8, {.outer = 4, .length = 1000}, fr::Std{});
    const std::vector<float> v = host_copy(vars.get(), 12);
    for (int q = 0; q < 4; ++q) {
      EXPECT_TRUE(same_bits(v[q], v[4 + q])) << q;
      EXPECT_NEAR(v[q], v[8 + q], 1e-6 * v[8 + q]) << q;
    }
  }
  {
    DeviceBuffer<std::int64_t> offsets(3);
    const std::int64_t host_offsets[3] = {0, 400, 1000};
    CUDA_OK(cudaMemcpy(offsets.get(), host_offsets, sizeof(host_offsets), cudaMemcpyHostToDevice));
    DeviceBuffer<float> vars(6);
    const fr::Options modes[3] = {repro, fr::Options{.mode = fr::Mode::Exact}, fr::Options{}};
    for (int m = 0; m < 3; ++m) {
      std::size_t need = 0;
      ASSERT_EQ(fr::reduce_segments_async(nullptr, need, d.buffer.get(), vars.get(), 2, offsets.get(), offsets.get() + 1,
                                          fr::Var{}, 0, modes[m]),
                cudaSuccess);
      DeviceBuffer<char> storage(need);  // (the exact modes' rows of limbs: a head and a tail a warp of the grid)
      EXPECT_EQ(fr::reduce_segments_async(storage.get(), need, d.buffer.get(), vars.get() + 2 * m, 2, offsets.get(),
                                          offsets.get() + 1, fr::Var{}, 0, modes[m]),
                cudaSuccess);
    }
    const std::vector<float> v = host_copy(vars.get(), 6);
    for (int q = 0; q < 2; ++q) {
      EXPECT_TRUE(same_bits(v[q], v[2 + q])) << q;
      EXPECT_NEAR(v[q], v[4 + q], 1e-6 * v[4 + q]) << q;
    }
  }
  // The L2 norm has it on every shape, with Mode::Exact's bits (tests/gpu/exact_ops_test.cu holds
  // both to the exact sum of squares), near fast mode's.
  {
    DeviceBuffer<float> norms(12);
    fr::reduce_axis(d.buffer.get(), norms.get(), {.outer = 4, .length = 1000}, fr::NormL2{}, repro);
    fr::reduce_axis(d.buffer.get(), norms.get() + 4, {.outer = 4, .length = 1000}, fr::NormL2{},
                    fr::Options{.mode = fr::Mode::Exact});
    fr::reduce_axis(d.buffer.get(), norms.get() + 8, {.outer = 4, .length = 1000}, fr::NormL2{});
    const std::vector<float> v = host_copy(norms.get(), 12);
    for (int q = 0; q < 4; ++q) {
      EXPECT_TRUE(same_bits(v[q], v[4 + q])) << q;
      EXPECT_NEAR(v[q], v[8 + q], 1e-6 * v[8 + q]) << q;
    }
  }
  // 1-D (tests/gpu/exact_ops_test.cu holds it to the exact sums' fixed rounding).
  const float fast_var = fr::reduce(d.buffer.get(), n, fr::Var{});
  EXPECT_NEAR(fr::reduce(d.buffer.get(), n, fr::Var{}, repro), fast_var, 1e-6 * std::fabs(fast_var));
  // The mean has the sum's modes (tests/gpu/exact_ops_test.cu holds them to the exact quotient).
  const float fast_mean = fr::reduce(d.buffer.get(), n, fr::Mean{});
  EXPECT_NEAR(fr::reduce(d.buffer.get(), n, fr::Mean{}, repro), fast_mean, 1e-6 * std::fabs(fast_mean) + 1e-12);
  // Bad arguments: errors, nothing written.
  EXPECT_EQ(fr::reduce_async(temp.get(), bytes, static_cast<const float*>(nullptr), out.get(), n, fr::NormL1{}),
            cudaErrorInvalidValue);
  EXPECT_EQ(fr::reduce_async(temp.get(), bytes, d.buffer.get(), static_cast<const float*>(nullptr), out.get(), n, fr::Dot{}),
            cudaErrorInvalidValue);
  std::size_t small = 0;
  ASSERT_EQ(fr::reduce_async(nullptr, small, d.buffer.get(), out.get(), n, fr::Mean{}), cudaSuccess);
  small -= 1;
  EXPECT_EQ(fr::reduce_async(temp.get(), small, d.buffer.get(), out.get(), n, fr::Mean{}), cudaErrorInvalidValue);
  EXPECT_EQ(fr::reduce_axis_async(temp.get(), bytes, d.buffer.get(), out.get(), {.outer = std::size_t(1) << 62, .length = 8},
                                  fr::Var{}),
            cudaErrorInvalidValue);
  CUDA_OK(cudaDeviceSynchronize());
  for (float v : host_copy(out.get(), 4)) EXPECT_TRUE(same_bits(v, poison));
  EXPECT_THROW(fr::reduce(d.buffer.get(), n, fr::Var{-1}), fr::Error);
}
