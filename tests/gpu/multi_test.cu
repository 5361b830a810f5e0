// The multi-rank reductions (fastreduce/nccl.cuh): P virtual ranks on one GPU through LocalGroup,
// NCCL with a one-rank communicator, and real NCCL ranks when several GPUs are present.
#include <nccl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "exact_data.hpp"
#include "fastreduce/nccl.cuh"
#include "gpu_test.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
namespace nccl = fastreduce::nccl;
using namespace fastreduce::testing;

namespace {

constexpr std::size_t kTile = 4096;  // the reproducible sum's tile (engine/policy.hpp)

// Runs body(rank) on one host thread per rank, each on `device_of(rank)`, and joins them.
void run_ranks(int ranks, const std::function<void(int)>& body, const std::function<int(int)>& device_of = [](int) { return 0; }) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(device_of(r));
      body(r);
    });
  }
  for (auto& t : threads) t.join();
}

// Shard boundaries: `ranks` counts that add up to n, drawn at random (empty shards included).
std::vector<std::size_t> random_counts(std::size_t n, int ranks, std::mt19937_64& rng) {
  std::vector<std::size_t> cuts{0, n};
  std::uniform_int_distribution<std::size_t> pick(0, n);
  std::uniform_int_distribution<int> style(0, 3);
  for (int r = 1; r < ranks; ++r) {
    std::size_t c = pick(rng);
    if (style(rng) == 0) c = c / kTile * kTile;  // on a tile boundary
    cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::size_t> counts;
  for (int r = 0; r < ranks; ++r) counts.push_back(cuts[r + 1] - cuts[r]);
  return counts;
}

// Every rank's result of the multi-rank reduce of in[0, n) cut into `counts`, through LocalGroup.
template <class T, class Op>
std::vector<fr::acc_t<T, Op>> local_group_reduce(const T* in, const std::vector<std::size_t>& counts, Op op,
                                                 const fr::Options& opt) {
  using A = fr::acc_t<T, Op>;
  const int ranks = static_cast<int>(counts.size());
  nccl::LocalGroup group(ranks);
  std::vector<A> results(ranks);
  std::vector<std::size_t> offsets(ranks, 0);
  for (int r = 1; r < ranks; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  run_ranks(ranks, [&](int r) {
    cudaStream_t stream = nullptr;
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    std::size_t bytes = 0;
    EXPECT_EQ((nccl::reduce_async<T, Op>(nullptr, bytes, group.rank(r), in + offsets[r], counts[r], nullptr, op, stream, opt)),
              cudaSuccess);
    void* temp = nullptr;
    A* out = nullptr;
    EXPECT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&out, sizeof(A)), cudaSuccess);
    EXPECT_EQ(cudaMemsetAsync(temp, 0xA5, bytes, stream), cudaSuccess);  // whatever the storage held before
    EXPECT_EQ(cudaMemsetAsync(out, 0xA5, sizeof(A), stream), cudaSuccess);
    EXPECT_EQ((nccl::reduce_async<T, Op>(temp, bytes, group.rank(r), in + offsets[r], counts[r], out, op, stream, opt)),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(&results[r], out, sizeof(A), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaFree(temp);
    cudaFree(out);
    cudaStreamDestroy(stream);
  });
  return results;
}

template <class T>
fr::acc_t<T, fr::Sum> one_gpu_repro(const T* in, std::size_t n) {
  return fr::reduce(in, n, fr::Sum{}, fr::Options{.mode = fr::Mode::Reproducible});
}

template <class T>
void check_repro_bits(const std::vector<std::size_t>& sizes, int max_ranks, int trials) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  const fr::Options repro{.mode = fr::Mode::Reproducible};
  for (std::size_t n : sizes) {
    DeviceBuffer<T> in(n + 1);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n + 1, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const auto expected = one_gpu_repro(in.get(), n);
    for (int ranks = 1; ranks <= max_ranks; ++ranks) {
      for (int trial = 0; trial < trials; ++trial) {
        const auto counts = random_counts(n, ranks, rng);
        const auto results = local_group_reduce<T, fr::Sum>(in.get(), counts, fr::Sum{}, repro);
        std::string shards;
        for (std::size_t c : counts) shards += " " + std::to_string(c);
        for (int r = 0; r < ranks; ++r) {
          EXPECT_TRUE(same_bits(results[r], expected))
              << "n=" << n << " ranks=" << ranks << " rank " << r << " shards:" << shards << " got " << double(results[r])
              << " expected " << double(expected);
        }
      }
    }
  }
}

std::vector<std::size_t> repro_sizes() {
  if (quick()) return {0, 1, 33, 4095, 4097, 3 * kTile + 17, 100003};
  return {0, 1, 33, 4095, 4096, 4097, 3 * kTile + 17, 100003, (std::size_t(1) << 20) + 3, std::size_t(1) << 24};
}

}  // namespace

// Reproducible bits equal to the single-GPU reduce for 1 to 8 ranks and random shardings.
TEST(MultiRank, ReproducibleFloatBitsEqualOneGpu) { check_repro_bits<float>(repro_sizes(), 8, quick() ? 1 : 3); }
TEST(MultiRank, ReproducibleDoubleBitsEqualOneGpu) { check_repro_bits<double>(repro_sizes(), 8, quick() ? 1 : 2); }
TEST(MultiRank, ReproducibleHalfBitsEqualOneGpu) { check_repro_bits<__half>(repro_sizes(), 5, 1); }
TEST(MultiRank, ReproducibleBfloat16BitsEqualOneGpu) { check_repro_bits<__nv_bfloat16>(repro_sizes(), 5, 1); }

namespace {

template <class A>
bool same_result(A got, A expected) {
  return same_bits(got, expected) || (std::isnan(double(got)) && std::isnan(double(expected)));
}

template <class T>
fr::acc_t<T, fr::Sum> one_gpu_exact(const T* in, std::size_t n) {
  return fr::reduce(in, n, fr::Sum{}, fr::Options{.mode = fr::Mode::Exact});
}

// Mode::Exact over 1 to 8 ranks and random shardings, on every data set of the exact tests: the
// correctly rounded sum (CPU, exact) on every rank, the single-GPU exact bits. Sorted data puts
// the large negative values on the first ranks and the large positive ones on the last, so the
// ranks' own sums are far larger than the total: the carried rows must cancel exactly.
template <class T>
void check_exact_bits(int max_ranks) {
  FASTREDUCE_REQUIRE_GPU();
  using A = fr::acc_t<T, fr::Sum>;
  std::mt19937_64 rng(test_seed());
  const fr::Options exact{.mode = fr::Mode::Exact};
  std::vector<std::size_t> sizes = {0, 1, 33, 4097, 100003};
  if (!quick()) sizes.push_back((std::size_t(1) << 20) + 3);
  for (int kind = 0; kind < kExactDataSetCount; ++kind) {
    for (std::size_t n : sizes) {
      for (bool sorted : {false, true}) {
        auto host = exact_data<T>(kind, n, rng());
        if (sorted) {  // NaN last: a strict weak order
          std::sort(host.begin(), host.end(), [](T a, T b) {
            const double x = double(a), y = double(b);
            return std::isnan(x) ? false : std::isnan(y) ? true : x < y;
          });
        }
        DeviceBuffer<T> in(std::max<std::size_t>(n, 1) + 1);
        if (n > 0) CUDA_OK(cudaMemcpy(in.get() + 1, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
        const A want = static_cast<A>(fr::reference::exact_rounded<A>(host.data(), n));
        // Misaligned by one element: no rank's shard starts on 16 bytes unless its offset puts it there.
        const A one = one_gpu_exact(in.get() + 1, n);
        EXPECT_TRUE(same_result(one, want)) << kExactDataSets[kind] << " n=" << n << ": one GPU " << double(one)
                                             << " expected " << double(want);
        for (int ranks = 1; ranks <= max_ranks; ++ranks) {
          const auto counts = random_counts(n, ranks, rng);
          const auto results = local_group_reduce<T, fr::Sum>(in.get() + 1, counts, fr::Sum{}, exact);
          std::string shards;
          for (std::size_t c : counts) shards += " " + std::to_string(c);
          for (int r = 0; r < ranks; ++r) {
            EXPECT_TRUE(same_result(results[r], want))
                << kExactDataSets[kind] << (sorted ? " (sorted)" : "") << " n=" << n << " ranks=" << ranks << " rank "
                << r << " shards:" << shards << " got " << double(results[r]) << " expected " << double(want);
          }
        }
      }
    }
  }
}

}  // namespace

// Mode::Exact: the correctly rounded sum for any ranks and shards (bits equal to one GPU's).
TEST(MultiRank, ExactFloatIsCorrectlyRoundedOnEveryRank) { check_exact_bits<float>(8); }
TEST(MultiRank, ExactDoubleIsCorrectlyRoundedOnEveryRank) { check_exact_bits<double>(8); }
TEST(MultiRank, ExactHalfIsCorrectlyRoundedOnEveryRank) { check_exact_bits<__half>(5); }
TEST(MultiRank, ExactBfloat16IsCorrectlyRoundedOnEveryRank) { check_exact_bits<__nv_bfloat16>(5); }

// Reproducible and exact sums: a rank whose shard or output is wrong returns the error, after
// joining the collectives: the other ranks finish (no hang) with NaN, and the failing rank writes
// nothing. 1-D and axis.
TEST(MultiRank, BadShardStillJoinsTheCollectives) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 3 * kTile + 11, width = 3;
  DeviceBuffer<float> in(n * width + 1);
  DeviceBuffer<float> outs(3 * (width + 1));
  ASSERT_EQ(fr::bench::fill_random(in.get(), n * width + 1, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const std::size_t counts[3] = {kTile, kTile + 5, kTile + 6};
  const std::size_t first[3] = {0, kTile, 2 * kTile + 5};
  enum Fault { NullShard, MisalignedShard, MisalignedOut, TooLong };
  for (fr::Mode mode : {fr::Mode::Exact, fr::Mode::Reproducible}) {
    const fr::Options opt{.mode = mode};
    for (bool axis : {false, true}) {
      for (Fault fault : {NullShard, MisalignedShard, MisalignedOut, TooLong}) {
        if (axis && fault == TooLong) continue;  // an axis of 2^40 slices: refused by the axis check first
        const int bad = fault == MisalignedOut ? 2 : 1;
        nccl::LocalGroup group(3);
        std::vector<std::vector<float>> got(3, std::vector<float>(width, 1.0f));
        std::vector<cudaError_t> codes(3, cudaSuccess);
        run_ranks(3, [&](int r) {
          cudaStream_t stream = nullptr;
          EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
          const float* shard = in.get() + (axis ? first[r] * width : first[r]);
          std::size_t count = counts[r];
          float* out = outs.get() + r * (width + 1);
          if (r == bad) {
            if (fault == NullShard) shard = nullptr;
            if (fault == MisalignedShard) shard = reinterpret_cast<const float*>(reinterpret_cast<const char*>(shard) + 2);
            if (fault == MisalignedOut) out = reinterpret_cast<float*>(reinterpret_cast<char*>(out) + 2);
            if (fault == TooLong) count = std::size_t(1) << 40;
          }
          const fr::Axis local{.length = count, .inner = width};
          auto call = [&](void* temp, std::size_t& bytes, float* o) {
            return axis ? nccl::reduce_axis_async(temp, bytes, group.rank(r), shard, local, o, fr::Sum{}, stream, opt, first[r])
                        : nccl::reduce_async(temp, bytes, group.rank(r), shard, count, o, fr::Sum{}, stream, opt);
          };
          std::size_t bytes = 0;
          EXPECT_EQ(call(nullptr, bytes, nullptr), cudaSuccess);
          void* temp = nullptr;
          EXPECT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
          const std::size_t written = axis ? width : 1;
          float* aligned_out = outs.get() + r * (width + 1);
          EXPECT_EQ(cudaMemcpyAsync(aligned_out, got[r].data(), width * sizeof(float), cudaMemcpyHostToDevice, stream),
                    cudaSuccess);  // 1.0 in every output: what the failing rank must leave
          codes[r] = call(temp, bytes, out);
          EXPECT_EQ(cudaMemcpyAsync(got[r].data(), aligned_out, written * sizeof(float), cudaMemcpyDeviceToHost, stream),
                    cudaSuccess);
          EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
          cudaFree(temp);
          cudaStreamDestroy(stream);
        });
        const cudaError_t want = fault == NullShard ? cudaErrorInvalidValue
                                 : fault == TooLong ? cudaErrorNotSupported
                                                    : cudaErrorMisalignedAddress;
        const std::string what = std::string(mode == fr::Mode::Exact ? "exact " : "reproducible ") + (axis ? "axis" : "1-D") +
                                 ", fault " + std::to_string(int(fault));
        for (int r = 0; r < 3; ++r) {
          EXPECT_EQ(codes[r], r == bad ? want : cudaSuccess) << what << " rank " << r;
          for (std::size_t q = 0; q < (axis ? width : 1); ++q) {
            if (r == bad) {
              EXPECT_EQ(got[r][q], 1.0f) << what << ": the failing rank writes nothing";
            } else {
              EXPECT_TRUE(std::isnan(got[r][q])) << what << " rank " << r << " output " << q << ": " << got[r][q];
            }
          }
        }
      }
    }
  }
}

// Shards shorter than a tile: one tile gathers elements from many ranks (and empty ones).
TEST(MultiRank, ReproducibleTinyShards) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 3 * kTile + 5;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const float expected = one_gpu_repro(in.get(), n);
  const std::size_t counts_list[][8] = {{1000, 0, 1000, 3000, 0, 7, 7, n - 5014},
                                        {n, 0, 0, 0, 0, 0, 0, 0},
                                        {0, 0, 0, 0, 0, 0, 0, n},
                                        {4095, 1, 4095, 1, 4095, 1, 5, 0}};
  for (const auto& list : counts_list) {
    std::vector<std::size_t> counts(list, list + 8);
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    ASSERT_EQ(total, n);
    const auto results = local_group_reduce<float, fr::Sum>(in.get(), counts, fr::Sum{}, {.mode = fr::Mode::Reproducible});
    for (float r : results) EXPECT_TRUE(same_bits(r, expected)) << r << " vs " << expected;
  }
}

// Infinities and NaN anywhere: the IEEE result, the same on every rank as on one GPU.
TEST(MultiRank, ReproducibleSpecialValues) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 5 * kTile + 123;
  std::mt19937_64 rng(test_seed());
  const float specials[][2] = {{INFINITY, 0.0f}, {-INFINITY, 0.0f}, {INFINITY, -INFINITY}, {NAN, 0.0f}};
  for (const auto& pair : specials) {
    DeviceBuffer<float> in(n);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const std::size_t at[2] = {std::uniform_int_distribution<std::size_t>(0, n - 1)(rng), n - 1};
    CUDA_OK(cudaMemcpy(in.get() + at[0], &pair[0], sizeof(float), cudaMemcpyHostToDevice));
    if (pair[1] != 0.0f) CUDA_OK(cudaMemcpy(in.get() + at[1], &pair[1], sizeof(float), cudaMemcpyHostToDevice));
    const float expected = one_gpu_repro(in.get(), n);
    for (int ranks : {2, 3, 8}) {
      const auto results = local_group_reduce<float, fr::Sum>(in.get(), random_counts(n, ranks, rng), fr::Sum{},
                                                              {.mode = fr::Mode::Reproducible});
      for (float r : results) EXPECT_TRUE(same_bits(r, expected) || (std::isnan(r) && std::isnan(expected))) << r << " vs " << expected;
    }
  }
}

// Fast mode: every rank gets the same value, correct against the CPU; integers, Min and Max exact.
TEST(MultiRank, FastModeIsCorrect) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  const std::size_t n = quick() ? 200003 : 10000019;
  {
    DeviceBuffer<float> in(n);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const auto host = fr::bench::to_host(in.get(), n);
    const double exact = fr::reference::exact_sum(host.data(), n);
    const double bound = 64 * 6e-8 * double(fr::reference::absolute_sum(host.data(), n));
    const float max_ref = *std::max_element(host.begin(), host.end());
    for (int ranks : {1, 2, 5, 8}) {
      const auto counts = random_counts(n, ranks, rng);
      const auto sums = local_group_reduce<float, fr::Sum>(in.get(), counts, fr::Sum{}, {});
      const auto maxes = local_group_reduce<float, fr::Max>(in.get(), counts, fr::Max{}, {});
      for (int r = 0; r < ranks; ++r) {
        EXPECT_NEAR(sums[r], exact, bound) << "ranks=" << ranks;
        EXPECT_TRUE(same_bits(sums[r], sums[0]));
        EXPECT_EQ(maxes[r], max_ref);
      }
    }
  }
  {
    DeviceBuffer<std::int32_t> in(n);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const auto host = fr::bench::to_host(in.get(), n);
    const auto sum_ref = fr::reference::reduce(host.data(), n, fr::Sum{});
    const auto xor_ref = fr::reference::reduce(host.data(), n, fr::BitXor{});
    const auto min_ref = fr::reference::reduce(host.data(), n, fr::Min{});
    for (int ranks : {1, 3, 8}) {
      const auto counts = random_counts(n, ranks, rng);
      for (auto v : local_group_reduce<std::int32_t, fr::Sum>(in.get(), counts, fr::Sum{}, {.mode = fr::Mode::Reproducible})) {
        EXPECT_EQ(v, sum_ref);
      }
      for (auto v : local_group_reduce<std::int32_t, fr::BitXor>(in.get(), counts, fr::BitXor{}, {})) EXPECT_EQ(v, xor_ref);
      for (auto v : local_group_reduce<std::int32_t, fr::Min>(in.get(), counts, fr::Min{}, {})) EXPECT_EQ(v, min_ref);
    }
  }
  {  // bool counts its true values in int64; a NaN on one rank wins Min everywhere
    DeviceBuffer<float> in(n);
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const float nan = NAN;
    CUDA_OK(cudaMemcpy(in.get() + n / 3, &nan, sizeof(float), cudaMemcpyHostToDevice));
    for (float v : local_group_reduce<float, fr::Min>(in.get(), random_counts(n, 4, rng), fr::Min{}, {})) EXPECT_TRUE(std::isnan(v));
    DeviceBuffer<bool> flags(n);
    ASSERT_EQ(fr::bench::fill_random(flags.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const auto host = fr::bench::to_host(flags.get(), n);
    const std::int64_t count = std::count(host.begin(), host.end(), true);
    for (auto v : local_group_reduce<bool, fr::Sum>(flags.get(), random_counts(n, 6, rng), fr::Sum{}, {})) EXPECT_EQ(v, count);
  }
}

// Column sums of a row-sharded matrix: equal to the single-GPU axis reduction (exact for integers).
TEST(MultiRank, AxisColumnSumsOfRowShards) {
  FASTREDUCE_REQUIRE_GPU();
  std::mt19937_64 rng(test_seed());
  const std::size_t rows = quick() ? 3001 : 20011, cols = 517;
  DeviceBuffer<std::int32_t> in(rows * cols);
  ASSERT_EQ(fr::bench::fill_random(in.get(), rows * cols, test_seed(), fr::bench::Distribution::SignedSmallIntegers), cudaSuccess);
  DeviceBuffer<std::int32_t> expected(cols);
  fr::reduce_axis(in.get(), expected.get(), fr::Axis{.length = rows, .inner = cols});
  DeviceBuffer<float> fin(rows * cols);
  ASSERT_EQ(fr::bench::fill_random(fin.get(), rows * cols, test_seed(), fr::bench::Distribution::SignedSmallIntegers), cudaSuccess);
  DeviceBuffer<float> fexpected(cols);
  fr::reduce_axis(fin.get(), fexpected.get(), fr::Axis{.length = rows, .inner = cols});
  const auto want = fr::bench::to_host(expected.get(), cols);
  const auto fwant = fr::bench::to_host(fexpected.get(), cols);
  for (int ranks : {1, 2, 3, 8}) {
    const auto counts = random_counts(rows, ranks, rng);
    nccl::LocalGroup group(ranks);
    std::vector<std::vector<std::int32_t>> got(ranks);
    std::vector<std::vector<float>> fgot(ranks);
    std::vector<std::size_t> first(ranks, 0);
    for (int r = 1; r < ranks; ++r) first[r] = first[r - 1] + counts[r - 1];
    run_ranks(ranks, [&](int r) {
      cudaStream_t stream = nullptr;
      EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
      const fr::Axis local{.length = counts[r], .inner = cols};
      auto run = [&](auto* shard, auto* out, auto& host) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(shard)>>;
        std::size_t bytes = 0;
        EXPECT_EQ((nccl::reduce_axis_async<T>(nullptr, bytes, group.rank(r), shard, local, out, fr::Sum{}, stream)), cudaSuccess);
        void* temp = nullptr;
        EXPECT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
        EXPECT_EQ(cudaMemsetAsync(out, 0xA5, cols * sizeof(*out), stream), cudaSuccess);
        EXPECT_EQ((nccl::reduce_axis_async<T>(temp, bytes, group.rank(r), shard, local, out, fr::Sum{}, stream)), cudaSuccess);
        host.resize(cols);
        EXPECT_EQ(cudaMemcpyAsync(host.data(), out, cols * sizeof(*out), cudaMemcpyDeviceToHost, stream), cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        cudaFree(temp);
      };
      std::int32_t* out = nullptr;
      float* fout = nullptr;
      EXPECT_EQ(cudaMalloc(&out, cols * sizeof(std::int32_t)), cudaSuccess);
      EXPECT_EQ(cudaMalloc(&fout, cols * sizeof(float)), cudaSuccess);
      run(in.get() + first[r] * cols, out, got[r]);
      run(fin.get() + first[r] * cols, fout, fgot[r]);
      // Reproducible float sums need the slice's place in the whole axis: a clear error without it.
      std::size_t bytes = 0;
      EXPECT_EQ((nccl::reduce_axis_async<float>(nullptr, bytes, group.rank(r), fin.get(), local, fout, fr::Sum{}, stream,
                                                {.mode = fr::Mode::Reproducible})),
                cudaErrorInvalidValue);
      cudaFree(out);
      cudaFree(fout);
      cudaStreamDestroy(stream);
    });
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(got[r], want) << "ranks=" << ranks << " rank " << r;
      EXPECT_EQ(fgot[r], fwant) << "ranks=" << ranks << " rank " << r;  // small integers: exact in float
    }
  }
}

namespace {

// Every output of the reproducible axis sum over row-sharded columns (`columns`) or column-sharded
// rows, against the single-GPU reduce_axis of the whole array: the same bits.
// Mode::Exact: the same, with no `first` given (an exact sum does not depend on it).
template <class T>
void check_axis_repro(bool columns, bool consistent_first = true, fr::Mode mode = fr::Mode::Reproducible) {
  FASTREDUCE_REQUIRE_GPU();
  using A = fr::acc_t<T, fr::Sum>;
  std::mt19937_64 rng(test_seed());
  const fr::Options repro{.mode = mode};
  const bool exact = mode == fr::Mode::Exact;
  const std::size_t width = columns ? 37 : 5;  // columns of the matrix, or its rows
  std::vector<std::size_t> lengths =
      quick() ? std::vector<std::size_t>{1, 4097, 3 * kTile + 5} : std::vector<std::size_t>{1, 4095, 4097, 3 * kTile + 5, 20011};
  if (exact) lengths.push_back(quick() ? 70001 : 300007);  // rows long enough to be cut into pieces
  int kind = 0;
  for (std::size_t length : lengths) {
    DeviceBuffer<T> whole(length * width);
    std::vector<T> host;
    if (exact) {  // the hard data sets in turn: wide range, cancellation, NaN and infinities, every exponent
      host = exact_data<T>(std::array{2, 3, 8, 7}[kind++ % 4], length * width, rng());
      CUDA_OK(cudaMemcpy(whole.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    } else {
      ASSERT_EQ(fr::bench::fill_random(whole.get(), length * width, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    }
    const fr::Axis all = columns ? fr::Axis{.length = length, .inner = width} : fr::Axis{.outer = width, .length = length};
    DeviceBuffer<A> expected(width);
    fr::reduce_axis(whole.get(), expected.get(), all, fr::Sum{}, repro);
    const auto want = fr::bench::to_host(expected.get(), width);
    if (exact) {  // the single-GPU exact sums against the CPU's correctly rounded ones
      for (std::size_t q = 0; q < width; ++q) {
        std::vector<T> line(length);
        for (std::size_t j = 0; j < length; ++j) line[j] = host[columns ? j * width + q : q * length + j];
        const A cpu = static_cast<A>(fr::reference::exact_rounded<A>(line.data(), length));
        ASSERT_TRUE(same_result(want[q], cpu)) << "length=" << length << " output " << q << ": " << double(want[q])
                                               << " vs " << double(cpu);
      }
    }
    for (int ranks : {1, 2, 3, 5}) {
      const auto counts = random_counts(length, ranks, rng);
      std::vector<std::size_t> first(ranks, 0);
      for (int r = 1; r < ranks; ++r) first[r] = first[r - 1] + counts[r - 1];
      nccl::LocalGroup group(ranks);
      std::vector<std::vector<A>> got(ranks);
      run_ranks(ranks, [&](int r) {
        cudaStream_t stream = nullptr;
        EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
        const T* shard = columns ? whole.get() + first[r] * width : whole.get() + first[r];
        const fr::Axis local = columns ? fr::Axis{.length = counts[r], .inner = width}
                                       : fr::Axis{.outer = width, .length = counts[r], .outer_stride = std::ptrdiff_t(length)};
        const std::size_t claimed = mode == fr::Mode::Exact ? nccl::kUnknownFirst
                                                            : first[r] + (!consistent_first && r == ranks - 1 ? 1 : 0);
        std::size_t bytes = 0;
        EXPECT_EQ((nccl::reduce_axis_async<T>(nullptr, bytes, group.rank(r), shard, local, nullptr, fr::Sum{}, stream, repro,
                                              claimed)),
                  cudaSuccess);
        void* temp = nullptr;
        A* out = nullptr;
        EXPECT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
        EXPECT_EQ(cudaMalloc(&out, width * sizeof(A)), cudaSuccess);
        EXPECT_EQ(cudaMemsetAsync(temp, 0xA5, bytes, stream), cudaSuccess);
        EXPECT_EQ(cudaMemsetAsync(out, 0xA5, width * sizeof(A), stream), cudaSuccess);
        EXPECT_EQ((nccl::reduce_axis_async<T>(temp, bytes, group.rank(r), shard, local, out, fr::Sum{}, stream, repro,
                                              claimed)),
                  cudaSuccess);
        got[r].resize(width);
        EXPECT_EQ(cudaMemcpyAsync(got[r].data(), out, width * sizeof(A), cudaMemcpyDeviceToHost, stream), cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        cudaFree(temp);
        cudaFree(out);
        cudaStreamDestroy(stream);
      });
      std::string shards;
      for (std::size_t c : counts) shards += " " + std::to_string(c);
      for (int r = 0; r < ranks; ++r) {
        for (std::size_t q = 0; q < width; ++q) {
          if (consistent_first) {
            EXPECT_TRUE(same_result(got[r][q], want[q])) << "length=" << length << " ranks=" << ranks << " rank " << r
                                                       << " output " << q << " shards:" << shards;
          } else {
            EXPECT_TRUE(std::isnan(double(got[r][q]))) << "a wrong `first` must give NaN: rank " << r << " output " << q;
          }
        }
      }
    }
  }
}

}  // namespace

// Batch invariance across ranks: reproducible axis sums equal the single-GPU ones bit for bit.
TEST(MultiRank, ReproducibleColumnSumsOfRowShards) {
  check_axis_repro<float>(true);
  check_axis_repro<double>(true);
}
TEST(MultiRank, ReproducibleRowSumsOfColumnShards) {
  check_axis_repro<float>(false);
  check_axis_repro<__nv_bfloat16>(false);
}
TEST(MultiRank, ReproducibleAxisChecksFirst) { check_axis_repro<float>(true, false); }
TEST(MultiRank, ExactColumnSumsOfRowShards) {
  check_axis_repro<float>(true, true, fr::Mode::Exact);
  check_axis_repro<double>(true, true, fr::Mode::Exact);
}
TEST(MultiRank, ExactRowSumsOfColumnShards) {
  check_axis_repro<float>(false, true, fr::Mode::Exact);
  check_axis_repro<__half>(false, true, fr::Mode::Exact);
  check_axis_repro<__nv_bfloat16>(false, true, fr::Mode::Exact);
}

// The blocking form from ranks that share a stream (the default one): no lock held across the
// collectives, every rank gets the single-GPU bits.
TEST(MultiRank, BlockingReduceOnOneSharedStream) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 3 * kTile + 777;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const float expected = one_gpu_repro(in.get(), n);
  std::mt19937_64 rng(test_seed());
  const auto counts = random_counts(n, 3, rng);
  std::vector<std::size_t> first(3, 0);
  for (int r = 1; r < 3; ++r) first[r] = first[r - 1] + counts[r - 1];
  nccl::LocalGroup group(3);
  std::vector<float> got(3);
  run_ranks(3, [&](int r) {
    try {
      got[r] = nccl::reduce(group.rank(r), in.get() + first[r], counts[r], fr::Sum{}, {.mode = fr::Mode::Reproducible});
    } catch (const fr::Error& e) {
      ADD_FAILURE() << e.what();
    }
  });
  for (float v : got) EXPECT_TRUE(same_bits(v, expected)) << v << " vs " << expected;
}

// Arguments are checked before any collective, with the usual codes; LocalGroup's own checks.
TEST(MultiRank, BadArguments) {
  FASTREDUCE_REQUIRE_GPU();
  nccl::LocalGroup group(1);
  DeviceBuffer<float> in(100), out(1);
  std::size_t bytes = 0;
  ASSERT_EQ(nccl::reduce_async(nullptr, bytes, group.rank(0), in.get(), 100, out.get()), cudaSuccess);
  DeviceBuffer<char> temp(bytes + 16);
  std::size_t small = bytes - 1;
  EXPECT_EQ(nccl::reduce_async(temp.get(), small, group.rank(0), in.get(), 100, out.get()), cudaErrorInvalidValue);
  std::size_t ok = bytes;
  EXPECT_EQ(nccl::reduce_async(temp.get() + 8, ok, group.rank(0), in.get(), 100, out.get()), cudaErrorMisalignedAddress);
  EXPECT_EQ(nccl::reduce_async(temp.get(), ok, group.rank(0), in.get(), 100, static_cast<float*>(nullptr)),
            cudaErrorInvalidValue);
  const fr::Options repro{.mode = fr::Mode::Reproducible};
  ASSERT_EQ(nccl::reduce_async(nullptr, bytes, group.rank(0), in.get(), 100, out.get(), fr::Sum{}, 0, repro), cudaSuccess);
  DeviceBuffer<char> rtemp(bytes);
  EXPECT_EQ(nccl::reduce_async(rtemp.get(), bytes, group.rank(0), static_cast<const float*>(nullptr), 100, out.get(),
                               fr::Sum{}, 0, repro),
            cudaErrorInvalidValue);
  EXPECT_EQ(nccl::reduce_async(nullptr, bytes, group.rank(0), in.get(), 100, out.get(), fr::Prod{}, 0, repro),
            cudaErrorNotSupported);
  EXPECT_THROW(nccl::LocalGroup(0), fr::Error);
  EXPECT_THROW(nccl::LocalGroup(nccl::LocalGroup::kMaxRanks + 1), fr::Error);
  EXPECT_THROW((void)group.rank(1), fr::Error);
  // The blocking form names the problem.
  try {
    (void)nccl::reduce(group.rank(0), static_cast<const float*>(nullptr), 5);
    ADD_FAILURE() << "no exception";
  } catch (const fr::Error& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
    EXPECT_NE(std::string(e.what()).find("fastreduce::nccl::reduce"), std::string::npos) << e.what();
  }
}

// NCCL itself: a one-rank communicator on device 0 gives the single-GPU bits.
TEST(MultiRank, NcclOneRankCommunicator) {
  FASTREDUCE_REQUIRE_GPU();
  ncclComm_t comm = nullptr;
  int device = 0;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
  const std::size_t n = (std::size_t(1) << 20) + 3;
  DeviceBuffer<float> in(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  const fr::Options repro{.mode = fr::Mode::Reproducible};
  EXPECT_TRUE(same_bits(nccl::reduce(comm, in.get(), n, fr::Sum{}, repro), one_gpu_repro(in.get(), n)));
  EXPECT_EQ(nccl::reduce(comm, in.get(), n, fr::Max{}), fr::reduce(in.get(), n, fr::Max{}));
  EXPECT_TRUE(same_bits(nccl::reduce(comm, in.get(), n), fr::reduce(in.get(), n)));  // one rank: the engine's own bits
  nccl::CommTransport transport(comm);
  EXPECT_EQ(transport.rank(), 0);
  EXPECT_EQ(transport.size(), 1);
  ncclCommDestroy(comm);
  EXPECT_EQ(nccl::CommTransport(nullptr).status(), cudaErrorInvalidValue);
}

// Real NCCL ranks, one per GPU, one thread each: the reproducible bits of the whole array.
TEST(MultiRank, NcclRanksOnSeveralGpus) {
  FASTREDUCE_REQUIRE_GPU();
  int gpus = 0;
  ASSERT_EQ(cudaGetDeviceCount(&gpus), cudaSuccess);
  if (gpus < 2) GTEST_SKIP() << "one GPU: the real multi-rank NCCL test needs two or more (LocalGroup covers the algorithm)";
  setenv("NCCL_NVLS_ENABLE", "0", 0);  // no NVLink multicast unless the environment asks
  std::vector<ncclComm_t> comms(gpus);
  std::vector<int> devices(gpus);
  for (int g = 0; g < gpus; ++g) devices[g] = g;
  ASSERT_EQ(ncclCommInitAll(comms.data(), gpus, devices.data()), ncclSuccess);
  std::mt19937_64 rng(test_seed());
  for (std::size_t n : {std::size_t(0), std::size_t(4097), std::size_t(1000003), (std::size_t(1) << 24) + 5}) {
    DeviceBuffer<float> whole(n + 1);
    ASSERT_EQ(fr::bench::fill_random(whole.get(), n + 1, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
    const float expected = one_gpu_repro(whole.get(), n);
    const auto host = fr::bench::to_host(whole.get(), n);
    const float want_exact = static_cast<float>(fr::reference::exact_rounded<float>(host.data(), n));
    for (int trial = 0; trial < 3; ++trial) {
      const auto counts = random_counts(n, gpus, rng);
      std::vector<std::size_t> first(gpus, 0);
      for (int r = 1; r < gpus; ++r) first[r] = first[r - 1] + counts[r - 1];
      std::vector<float> repro(gpus), fast(gpus), exact(gpus);
      run_ranks(
          gpus,
          [&](int r) {
            float* shard = nullptr;
            EXPECT_EQ(cudaMalloc(&shard, std::max<std::size_t>(counts[r], 1) * sizeof(float)), cudaSuccess);
            if (counts[r] > 0) {
              EXPECT_EQ(cudaMemcpy(shard, host.data() + first[r], counts[r] * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
            }
            cudaStream_t stream = nullptr;
            EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
            try {
              repro[r] = nccl::reduce(comms[r], shard, counts[r], fr::Sum{}, {.mode = fr::Mode::Reproducible}, stream);
              fast[r] = nccl::reduce(comms[r], shard, counts[r], fr::Sum{}, {}, stream);
              exact[r] = nccl::reduce(comms[r], shard, counts[r], fr::Sum{}, {.mode = fr::Mode::Exact}, stream);
            } catch (const fr::Error& e) {
              ADD_FAILURE() << e.what();
            }
            cudaStreamDestroy(stream);
            cudaFree(shard);
          },
          [](int r) { return r; });
      for (int r = 0; r < gpus; ++r) {
        EXPECT_TRUE(same_bits(repro[r], expected)) << "n=" << n << " rank " << r << ": " << repro[r] << " vs " << expected;
        EXPECT_TRUE(same_bits(fast[r], fast[0]));
        EXPECT_TRUE(same_bits(exact[r], want_exact)) << "n=" << n << " rank " << r << ": " << exact[r] << " vs " << want_exact;
        EXPECT_NEAR(fast[r], expected, 1e-3 * std::sqrt(double(n) + 1));
      }
    }
  }
  // Column sums of a row-sharded matrix, reproducible: the single-GPU bits on every rank.
  const std::size_t rows = 3 * kTile + 1234, cols = 129;
  DeviceBuffer<float> matrix(rows * cols);
  ASSERT_EQ(fr::bench::fill_random(matrix.get(), rows * cols, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  DeviceBuffer<float> expected(cols);
  const fr::Options repro{.mode = fr::Mode::Reproducible};
  fr::reduce_axis(matrix.get(), expected.get(), fr::Axis{.length = rows, .inner = cols}, fr::Sum{}, repro);
  const auto want = fr::bench::to_host(expected.get(), cols);
  const auto host = fr::bench::to_host(matrix.get(), rows * cols);
  const auto counts = random_counts(rows, gpus, rng);
  std::vector<std::size_t> first(gpus, 0);
  for (int r = 1; r < gpus; ++r) first[r] = first[r - 1] + counts[r - 1];
  std::vector<std::vector<float>> got(gpus, std::vector<float>(cols));
  run_ranks(
      gpus,
      [&](int r) {
        float *shard = nullptr, *out = nullptr;
        void* temp = nullptr;
        cudaStream_t stream = nullptr;
        EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
        EXPECT_EQ(cudaMalloc(&shard, std::max<std::size_t>(counts[r], 1) * cols * sizeof(float)), cudaSuccess);
        EXPECT_EQ(cudaMalloc(&out, cols * sizeof(float)), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(shard, host.data() + first[r] * cols, counts[r] * cols * sizeof(float), cudaMemcpyHostToDevice),
                  cudaSuccess);
        const fr::Axis local{.length = counts[r], .inner = cols};
        std::size_t bytes = 0;
        EXPECT_EQ(nccl::reduce_axis_async(nullptr, bytes, comms[r], shard, local, out, fr::Sum{}, stream, repro, first[r]),
                  cudaSuccess);
        EXPECT_EQ(cudaMalloc(&temp, bytes), cudaSuccess);
        EXPECT_EQ(nccl::reduce_axis_async(temp, bytes, comms[r], shard, local, out, fr::Sum{}, stream, repro, first[r]),
                  cudaSuccess);
        EXPECT_EQ(cudaMemcpyAsync(got[r].data(), out, cols * sizeof(float), cudaMemcpyDeviceToHost, stream), cudaSuccess);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        cudaFree(temp);
        cudaFree(out);
        cudaFree(shard);
        cudaStreamDestroy(stream);
      },
      [](int r) { return r; });
  for (int r = 0; r < gpus; ++r) {
    for (std::size_t q = 0; q < cols; ++q) EXPECT_TRUE(same_bits(got[r][q], want[q])) << "rank " << r << " column " << q;
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}
