// Result types other than the accumulator, chosen by the output pointer's type:
//   - half and bfloat16 results (Narrow.*): the finish step of every path (1-D, every axis layout,
//     segments) rounds the float result once into the input's type; in Mode::Exact the exact sum
//     is rounded once into it (never through float); only 2 bytes are written per result;
//   - 4-byte integers' sums and products in 8 bytes (Wide.*): no wrap at 32 bits, on every path.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "exact_data.hpp"
#include "gpu_test.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
using namespace fastreduce::testing;

namespace {

constexpr std::size_t kGuard = 16;  // results past the last one, which must keep their poison

std::uint16_t bits16(__half h) { return __half_raw(h).x; }
std::uint16_t bits16(__nv_bfloat16 b) { return __nv_bfloat16_raw(b).x; }

template <class T>
T round_float(float x) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(x);
  else return __float2bfloat16_rn(x);
}

template <class T>
bool is_nan16(T v) {
  return std::isnan(static_cast<float>(v));
}

// Runs enqueue(temp, bytes, out) (a size query with temp null, then the call) into `outputs`
// results of type Out, poisoned first, followed by kGuard more; returns the results after checking
// that the guard is untouched.
template <class Out, class Enqueue>
std::vector<Out> run(std::size_t outputs, const Enqueue& enqueue, const std::string& what) {
  DeviceBuffer<Out> out(outputs + kGuard);
  std::size_t bytes = 0;
  EXPECT_EQ(enqueue(nullptr, bytes, out.get()), cudaSuccess) << what << ": size query";
  DeviceBuffer<char> temp(std::max<std::size_t>(bytes, 1));
  out.poison();
  EXPECT_EQ(enqueue(temp.get(), bytes, out.get()), cudaSuccess) << what;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  std::vector<Out> host(outputs + kGuard);
  cudaMemcpy(host.data(), out.get(), host.size() * sizeof(Out), cudaMemcpyDeviceToHost);
  const auto* guard = reinterpret_cast<const unsigned char*>(host.data() + outputs);
  EXPECT_TRUE(std::all_of(guard, guard + kGuard * sizeof(Out), [](unsigned char c) { return c == 0xA5; }))
      << what << ": a byte past the results was written";
  host.resize(outputs);
  return host;
}

// Every narrow result is the float result rounded once (NaN for NaN).
template <class T>
void expect_rounded(const std::vector<float>& wide, const std::vector<T>& narrow, const std::string& what) {
  int failures = 0;
  for (std::size_t i = 0; i < wide.size(); ++i) {
    const T expected = round_float<T>(wide[i]);
    const bool ok = bits16(narrow[i]) == bits16(expected) || (is_nan16(narrow[i]) && is_nan16(expected));
    if (!ok && ++failures <= 3) {
      ADD_FAILURE() << what << ": result " << i << " of " << wide.size() << std::hex << ": got 0x" << bits16(narrow[i])
                    << ", the float result 0x" << std::bit_cast<std::uint32_t>(wide[i]) << " rounds to 0x"
                    << bits16(expected);
    }
  }
}

// The 1-D, axis and segmented reductions of `in` with Op and opt, into float and into T.
template <class T, class Op>
struct Calls {
  const T* in;
  fr::Options opt;

  template <class Out>
  std::vector<Out> flat(std::size_t n) const {
    return run<Out>(1, [&](void* temp, std::size_t& bytes, Out* out) {
      return fr::reduce_async(temp, bytes, in, out, n, Op{}, 0, opt);
    }, "1-D n " + std::to_string(n));
  }
  template <class Out>
  std::vector<Out> axis(const fr::Axis& a) const {
    return run<Out>(a.outer * a.inner, [&](void* temp, std::size_t& bytes, Out* out) {
      return fr::reduce_axis_async(temp, bytes, in, out, a, Op{}, 0, opt);
    }, "axis " + std::to_string(a.outer) + " x " + std::to_string(a.length) + " x " + std::to_string(a.inner));
  }
  template <class Out, class Offset>
  std::vector<Out> segments(const Offset* begin, const Offset* end, std::size_t count) const {
    return run<Out>(count, [&](void* temp, std::size_t& bytes, Out* out) {
      return fr::reduce_segments_async(temp, bytes, in, out, count, begin, end, Op{}, 0, opt);
    }, "segments");
  }
};

// The shapes every path is checked at: rows short and long (warp, tile, block, pieces), columns
// few and many, short and long, a strided (transposed) view, a flipped one, length 0 (the
// identity) and one contiguous output (the 1-D reduction).
std::vector<std::pair<std::size_t, fr::Axis>> axis_shapes(std::size_t n) {
  return {
      {0, fr::Axis{1000, 1, 1}},
      {0, fr::Axis{4099, 3, 1}},
      {1, fr::Axis{1031, 33, 1}},
      {0, fr::Axis{257, 256, 1}},
      {1, fr::Axis{37, 1024, 1}},
      {0, fr::Axis{4, 70001, 1}},  // (n is at least 300000)
      {1, fr::Axis{2, n / 2 - 1, 1}},
      {0, fr::Axis{3, 5, 100}},
      {1, fr::Axis{2, 4099, 33}},
      {0, fr::Axis{1, n / 3, 3}},
      {0, fr::Axis{1, 300, 200, fr::Axis::kContiguous, 1, 300}},
      {299 * 200 + 199, fr::Axis{1, 300, 200, fr::Axis::kContiguous, -200, -1}},
      {0, fr::Axis{7, 0, 3}},
      {1, fr::Axis{1, n - 1, 1}},
  };
}

// Segments: empty ones, then lengths from a power law (a few long, most short), anywhere.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> power_law_segments(std::size_t n, std::size_t count,
                                                                                   std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> begin, end;
  for (std::size_t s = 0; s < count; ++s) {
    const std::size_t length =
        s % 17 == 0 ? 0 : static_cast<std::size_t>(std::pow(2.0, 20.0 * std::pow(double(rng() % 1000) / 1000.0, 3)));
    const std::size_t b = rng() % (n - std::min(length, n - 1));
    begin.push_back(static_cast<std::int64_t>(b));
    end.push_back(static_cast<std::int64_t>(std::min(b + length, n)));
  }
  return {begin, end};
}

// Power-law segments of `host` with their offsets on the device, and each segment's elements.
template <class T>
struct DeviceSegments {
  std::vector<std::int64_t> begin, end;
  DeviceBuffer<std::int64_t> d_begin, d_end;
  std::vector<std::vector<T>> elems;
  DeviceSegments(const std::vector<T>& host, std::size_t count, std::uint64_t seed)
      : d_begin(count), d_end(count) {
    std::tie(begin, end) = power_law_segments(host.size(), count, seed);
    cudaMemcpy(d_begin.get(), begin.data(), count * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(d_end.get(), end.data(), count * 8, cudaMemcpyHostToDevice);
    for (std::size_t s = 0; s < count; ++s) elems.emplace_back(host.begin() + begin[s], host.begin() + end[s]);
  }
  std::size_t count() const { return begin.size(); }
};

template <class T, class Op>
void check_fast_results(const char* op_name) {
  SCOPED_TRACE(op_name);
  const std::size_t n = quick() ? 600000 : (std::size_t(1) << 21) + 3;
  std::mt19937_64 rng(test_seed());
  // Products stay near 1 (a product of many values of [-2, 2] is 0 or infinite at once).
  std::uniform_real_distribution<float> values(std::is_same_v<Op, fr::Prod> ? 0.99f : -2.0f,
                                               std::is_same_v<Op, fr::Prod> ? 1.01f : 2.0f);
  std::vector<T> host(n);
  for (auto& v : host) v = T(values(rng));
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const Calls<T, Op> calls{in.get(), {}};
  for (std::size_t size : edge_sizes()) {
    if (size > n - 1) continue;
    for (std::size_t offset : {0u, 1u}) {
      const Calls<T, Op> at{in.get() + offset, {}};
      expect_rounded(at.template flat<float>(size), at.template flat<T>(size),
                     "1-D n " + std::to_string(size) + " offset " + std::to_string(offset));
    }
  }
  for (const auto& [origin, a] : axis_shapes(n)) {
    const Calls<T, Op> at{in.get() + origin, {}};
    expect_rounded(at.template axis<float>(a), at.template axis<T>(a),
                   "axis " + std::to_string(a.outer) + " x " + std::to_string(a.length) + " x " + std::to_string(a.inner));
  }
  const DeviceSegments<T> segs(host, 300, rng());
  expect_rounded(calls.template segments<float>(segs.d_begin.get(), segs.d_end.get(), segs.count()),
                 calls.template segments<T>(segs.d_begin.get(), segs.d_end.get(), segs.count()), "segments");
}

template <class T>
void check_every_op() {
  FASTREDUCE_REQUIRE_GPU();
  check_fast_results<T, fr::Sum>("Sum");
  check_fast_results<T, fr::Prod>("Prod");
  check_fast_results<T, fr::Min>("Min");
  check_fast_results<T, fr::Max>("Max");
}

// The exact sum of elems rounded once into T (a value T holds).
template <class T>
T exact_in(const std::vector<T>& elems) {
  const double v = fr::reference::exact_rounded<T>(elems.data(), elems.size());
  return std::is_same_v<T, __half> ? T(__double2half(v)) : T(__double2bfloat16(v));
}

template <class T>
bool same16(T a, T b) {
  return bits16(a) == bits16(b) || (is_nan16(a) && is_nan16(b));
}

// Each output's elements, gathered on the host with the layout's strides (from `origin`).
template <class T>
std::vector<std::vector<T>> gather(const std::vector<T>& host, std::size_t origin, const fr::Axis& a) {
  const std::int64_t os = a.outer_stride == fr::Axis::kContiguous ? std::int64_t(a.length * a.inner) : a.outer_stride;
  const std::int64_t ls = a.length_stride == fr::Axis::kContiguous ? std::int64_t(a.inner) : a.length_stride;
  const std::int64_t is = a.inner_stride == fr::Axis::kContiguous ? 1 : a.inner_stride;
  std::vector<std::vector<T>> outputs;
  for (std::size_t o = 0; o < a.outer; ++o) {
    for (std::size_t i = 0; i < a.inner; ++i) {
      std::vector<T> elems(a.length);
      for (std::size_t k = 0; k < a.length; ++k) elems[k] = host[origin + o * os + k * ls + i * is];
      outputs.push_back(std::move(elems));
    }
  }
  return outputs;
}

template <class T>
void expect_exact(const std::vector<std::vector<T>>& elems, const std::vector<T>& got, const std::string& what) {
  int failures = 0;
  for (std::size_t q = 0; q < elems.size(); ++q) {
    const T expected = exact_in(elems[q]);
    if (!same16(got[q], expected) && ++failures <= 3) {
      ADD_FAILURE() << what << ": output " << q << " of " << elems.size() << std::hex << ": got 0x" << bits16(got[q])
                    << ", the exact sum rounded once 0x" << bits16(expected);
    }
  }
}

template <class T>
void check_exact_results() {
  FASTREDUCE_REQUIRE_GPU();
  const fr::Options exact{.mode = fr::Mode::Exact};
  const std::size_t n = quick() ? 300000 : 1000003;
  for (int kind : {0, 2, 3, 4, 5, 6, 7, 8}) {
    SCOPED_TRACE(kExactDataSets[kind]);
    const std::vector<T> host = exact_data<T>(kind, n, test_seed() + kind);
    DeviceBuffer<T> in(n);
    CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    for (std::size_t size : {std::size_t(0), std::size_t(1), std::size_t(33), std::size_t(4097), std::size_t(65537), n - 1}) {
      for (unsigned max_blocks : {0u, 3u}) {
        const Calls<T, fr::Sum> at{in.get() + 1, {.mode = fr::Mode::Exact, .max_blocks = max_blocks}};
        const std::vector<T> got = at.template flat<T>(size);
        expect_exact({std::vector<T>(host.begin() + 1, host.begin() + 1 + size)}, got,
                     "1-D n " + std::to_string(size) + " max_blocks " + std::to_string(max_blocks));
      }
    }
    for (const auto& [origin, a] : axis_shapes(n)) {
      const Calls<T, fr::Sum> at{in.get() + origin, exact};
      expect_exact(gather(host, origin, a), at.template axis<T>(a),
                   "axis " + std::to_string(a.outer) + " x " + std::to_string(a.length) + " x " + std::to_string(a.inner));
    }
    const DeviceSegments<T> segs(host, 200, test_seed());
    expect_exact(segs.elems, Calls<T, fr::Sum>{in.get(), exact}.template segments<T>(segs.d_begin.get(), segs.d_end.get(),
                                                                                     segs.count()),
                 "segments");
  }
}

// Data whose exact sum lies just above a tie of T while its float rounding lands on the tie: a
// result rounded twice (to float, then to T) goes to even, below; rounded once, it goes above.
// half: 1 + 2^-11 + 2^-24; bfloat16: 1 + 2^-8 + 2^-40. The rest of each row cancels in pairs.
template <class T>
void check_one_rounding(fr::Mode mode = fr::Mode::Exact) {
  FASTREDUCE_REQUIRE_GPU();
  const bool half = std::is_same_v<T, __half>;
  const double parts[3] = {1.0, half ? 0x1p-11 : 0x1p-8, half ? 0x1p-24 : 0x1p-40};
  const T above = T(half ? 1.0f + 0x1p-10f : 1.0f + 0x1p-7f);  // the tie's upper neighbour
  std::mt19937_64 rng(test_seed());
  std::uniform_real_distribution<float> values(-4.0f, 4.0f);
  const fr::Options exact{.mode = mode};
  for (std::size_t length : {std::size_t(3), std::size_t(100), std::size_t(1001), std::size_t(70001)}) {
    const std::size_t rows = length > 10000 ? 3 : 40;
    std::vector<T> host(rows * length);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<T> row;
      for (double p : parts) row.push_back(T(static_cast<float>(p)));
      while (row.size() + 2 <= length) {
        const T v = T(values(rng));
        row.push_back(v);
        row.push_back(T(-static_cast<float>(v)));
      }
      while (row.size() < length) row.push_back(T(0.0f));
      std::shuffle(row.begin(), row.end(), rng);
      std::copy(row.begin(), row.end(), host.begin() + r * length);
    }
    DeviceBuffer<T> in(host.size());
    CUDA_OK(cudaMemcpy(in.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    const Calls<T, fr::Sum> calls{in.get(), exact};
    const std::string what = "rows of " + std::to_string(length);
    const std::vector<T> got = calls.template axis<T>(fr::Axis{rows, length, 1});
    const std::vector<float> wide = calls.template axis<float>(fr::Axis{rows, length, 1});
    const std::vector<T> columns = calls.template axis<T>(fr::Axis{1, length, rows, fr::Axis::kContiguous, 1, std::int64_t(length)});
    for (std::size_t r = 0; r < rows; ++r) {
      EXPECT_EQ(bits16(got[r]), bits16(above)) << what << ", row " << r;
      EXPECT_EQ(bits16(columns[r]), bits16(above)) << what << " (a transposed view), row " << r;
      EXPECT_NE(bits16(round_float<T>(wide[r])), bits16(above)) << what << ": the float result rounded again";
    }
    EXPECT_EQ(bits16(calls.template flat<T>(length)[0]), bits16(above)) << what << ": the 1-D sum of the first row";
  }
}

// Reproducible mode rounds its total once into T as well: with integer-valued data (every float
// chain exact) that is the exact sum, and the bits do not depend on the grid; on the tie data of
// check_one_rounding (its lanes' partials are exact there too) it rounds once, not through float;
// infinities, NaN and sums past T's range give IEEE's result, as in Mode::Exact.
template <class T>
void check_reproducible_results() {
  FASTREDUCE_REQUIRE_GPU();
  check_one_rounding<T>(fr::Mode::Reproducible);
  for (int kind : {6, 8}) {  // sums that overflow T; NaN and infinities
    SCOPED_TRACE(kExactDataSets[kind]);
    const std::vector<T> data = exact_data<T>(kind, 300000, test_seed() + kind);
    DeviceBuffer<T> d(data.size());
    CUDA_OK(cudaMemcpy(d.get(), data.data(), data.size() * sizeof(T), cudaMemcpyHostToDevice));
    const Calls<T, fr::Sum> at{d.get(), {.mode = fr::Mode::Reproducible}};
    expect_exact({data}, at.template flat<T>(data.size()), "1-D");
    const fr::Axis rows{30, 10000, 1};
    expect_exact(gather(data, 0, rows), at.template axis<T>(rows), "rows of 10000");
  }
  const std::size_t n = quick() ? 300000 : 1000003;
  std::mt19937_64 rng(test_seed());
  std::vector<T> host(n);
  for (auto& v : host) v = T(static_cast<float>(static_cast<int>(rng() % 17) - 8));
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  for (std::size_t size : {std::size_t(1), std::size_t(4097), n}) {
    std::vector<T> first;
    for (unsigned max_blocks : {0u, 1u, 7u}) {
      const Calls<T, fr::Sum> at{in.get(), {.mode = fr::Mode::Reproducible, .max_blocks = max_blocks}};
      const std::vector<T> got = at.template flat<T>(size);
      expect_exact({std::vector<T>(host.begin(), host.begin() + size)}, got, "1-D n " + std::to_string(size));
      if (first.empty()) first = got;
      EXPECT_EQ(bits16(got[0]), bits16(first[0])) << "max_blocks " << max_blocks;
    }
  }
  for (const fr::Axis& a : {fr::Axis{4, 70001, 1}, fr::Axis{300, 1000, 1}, fr::Axis{2, 4099, 33}}) {
    const Calls<T, fr::Sum> at{in.get(), {.mode = fr::Mode::Reproducible}};
    expect_exact(gather(host, 0, a), at.template axis<T>(a), "axis " + std::to_string(a.outer) + " x " + std::to_string(a.length));
  }
}

}  // namespace

TEST(Narrow, HalfResultsAreTheFloatResultRoundedOnceOnEveryPath) { check_every_op<__half>(); }
TEST(Narrow, Bfloat16ResultsAreTheFloatResultRoundedOnceOnEveryPath) { check_every_op<__nv_bfloat16>(); }
TEST(Narrow, HalfExactResultsAreTheExactSumRoundedOnce) { check_exact_results<__half>(); }
TEST(Narrow, Bfloat16ExactResultsAreTheExactSumRoundedOnce) { check_exact_results<__nv_bfloat16>(); }
TEST(Narrow, HalfExactIsNeverRoundedTwice) { check_one_rounding<__half>(); }
TEST(Narrow, Bfloat16ExactIsNeverRoundedTwice) { check_one_rounding<__nv_bfloat16>(); }
TEST(Narrow, HalfReproducibleResultsRoundOnce) { check_reproducible_results<__half>(); }
TEST(Narrow, Bfloat16ReproducibleResultsRoundOnce) { check_reproducible_results<__nv_bfloat16>(); }

// A result of 2 bytes needs 2-byte alignment (4 is not asked); an odd address is refused with
// nothing written; the blocking axis call takes a narrow output too.
TEST(Narrow, AlignmentAndTheBlockingCall) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 1000;
  std::vector<__half> host(n);
  std::mt19937_64 rng(test_seed());
  for (auto& v : host) v = __float2half_rn(static_cast<float>(static_cast<int>(rng() % 9) - 4));
  DeviceBuffer<__half> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
  DeviceBuffer<__half> out(8);
  std::size_t bytes = 0;
  ASSERT_EQ(fr::reduce_async(nullptr, bytes, in.get(), out.get(), n), cudaSuccess);
  DeviceBuffer<char> temp(bytes);
  out.poison();
  auto* odd = reinterpret_cast<__half*>(reinterpret_cast<char*>(out.get()) + 1);
  EXPECT_EQ(fr::reduce_async(temp.get(), bytes, in.get(), odd, n), cudaErrorMisalignedAddress);
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<__half> after(8);
  CUDA_OK(cudaMemcpy(after.data(), out.get(), 8 * sizeof(__half), cudaMemcpyDeviceToHost));
  for (const __half& h : after) EXPECT_EQ(bits16(h), 0xA5A5) << "written despite the error";
  // out + 1 is 2-byte aligned, not 4.
  ASSERT_EQ(fr::reduce_async(temp.get(), bytes, in.get(), out.get() + 1, n), cudaSuccess);
  CUDA_OK(cudaDeviceSynchronize());
  double sum = 0;
  for (const __half& h : host) sum += static_cast<double>(__half2float(h));
  EXPECT_EQ(__half2float(read_back(out.get() + 1)), static_cast<float>(sum));
  EXPECT_EQ(bits16(read_back(out.get())), 0xA5A5);
  EXPECT_EQ(bits16(read_back(out.get() + 2)), 0xA5A5);
  // Blocking, along rows of 10.
  out.poison();
  fr::reduce_axis(in.get(), out.get(), fr::Axis{8, 10, 1});
  for (std::size_t r = 0; r < 8; ++r) {
    double row = 0;
    for (std::size_t k = 0; k < 10; ++k) row += static_cast<double>(__half2float(host[r * 10 + k]));
    EXPECT_EQ(__half2float(read_back(out.get() + r)), static_cast<float>(row)) << "row " << r;
  }
}

namespace {

// Sum and Prod of int32 and uint32 into 8 bytes on every path, against the host's 64-bit
// arithmetic (products wrap modulo 2^64 on both sides).
template <class T, class Op>
void check_wide(const char* what) {
  SCOPED_TRACE(what);
  using W = fr::wide_t<T>;
  const bool prod = std::is_same_v<Op, fr::Prod>;
  const std::size_t n = quick() ? 600000 : (std::size_t(1) << 21) + 3;
  std::mt19937_64 rng(test_seed());
  std::vector<T> host(n);
  // Sums: values of the full 32-bit range, whose sums leave it at once. Products: small factors
  // (never zero), whose products wrap modulo 2^64 soon.
  const int factors[] = {-1, 1, 1, 2, 3};  // unsigned: the last four
  const std::size_t first = std::is_signed_v<T> ? 0 : 1;
  for (auto& v : host) v = prod ? static_cast<T>(factors[first + rng() % (5 - first)]) : static_cast<T>(rng());
  DeviceBuffer<T> in(n);
  CUDA_OK(cudaMemcpy(in.get(), host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  auto reference = [&](const std::vector<T>& elems) {
    std::uint64_t acc = prod ? 1 : 0;
    for (T v : elems) {
      const auto wide = static_cast<std::uint64_t>(static_cast<W>(v));
      acc = prod ? acc * wide : acc + wide;
    }
    return static_cast<W>(acc);
  };
  auto expect = [&](const std::vector<std::vector<T>>& elems, const std::vector<W>& got, const std::string& where) {
    int failures = 0;
    for (std::size_t q = 0; q < elems.size(); ++q) {
      if (got[q] != reference(elems[q]) && ++failures <= 3) {
        ADD_FAILURE() << where << ": output " << q << ": got " << got[q] << ", expected " << reference(elems[q]);
      }
    }
  };
  for (std::size_t size : edge_sizes()) {
    if (size > n - 1) continue;
    const Calls<T, Op> at{in.get() + 1, {}};
    expect({std::vector<T>(host.begin() + 1, host.begin() + 1 + size)}, at.template flat<W>(size),
           "1-D n " + std::to_string(size));
  }
  for (const auto& [origin, a] : axis_shapes(n)) {
    const Calls<T, Op> at{in.get() + origin, {}};
    expect(gather(host, origin, a), at.template axis<W>(a),
           "axis " + std::to_string(a.outer) + " x " + std::to_string(a.length) + " x " + std::to_string(a.inner));
  }
  const DeviceSegments<T> segs(host, 300, rng());
  expect(segs.elems, Calls<T, Op>{in.get(), {}}.template segments<W>(segs.d_begin.get(), segs.d_end.get(), segs.count()),
         "segments");
  // Every mode: integers are exact in any order.
  for (fr::Mode mode : {fr::Mode::Reproducible, fr::Mode::Exact}) {
    const Calls<T, Op> at{in.get(), {.mode = mode}};
    expect({host}, at.template flat<W>(n), "1-D, reproducible or exact mode");
  }
}

}  // namespace

TEST(Wide, Int32SumsAndProductsIn64Bits) {
  FASTREDUCE_REQUIRE_GPU();
  check_wide<std::int32_t, fr::Sum>("int32 Sum");
  check_wide<std::int32_t, fr::Prod>("int32 Prod");
}
TEST(Wide, Uint32SumsAndProductsIn64Bits) {
  FASTREDUCE_REQUIRE_GPU();
  check_wide<std::uint32_t, fr::Sum>("uint32 Sum");
  check_wide<std::uint32_t, fr::Prod>("uint32 Prod");
}
