// Inside someone else's program: while another kernel holds part of the GPU (an NCCL collective
// waiting for a peer, a persistent kernel, another MPS client), every reduction must still
// finish on the SMs that are free. A grid that needs all its blocks resident at once (a
// cooperative launch) never starts there, and if the holder waits for something the host does
// after the reduction, the program deadlocks.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "gpu_test.hpp"
#include "reference.hpp"
#include "sm_holder.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;
using namespace fastreduce::testing;
using fastreduce::bench::SmHolder;

namespace {

unsigned sm_count() {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return unsigned(sms);
}

struct Case {
  const char* name;
  std::size_t n;
  fr::Mode mode;
  bool counter = false;  // Options::finish_counter: the grid's last block combines (one launch)
};

// `enqueue` launched on `stream` while `held` SMs are held: whether it finished within a second
// (status), how long it took, and whether the holder was still holding then.
struct HeldRun {
  cudaError_t status;
  double ms;
  bool still_holding;
};
HeldRun run_while_held(unsigned held, cudaStream_t stream, const std::function<cudaError_t()>& enqueue) {
  SmHolder holder(held);
  EXPECT_TRUE(holder.ok()) << "could not hold " << held << " SMs";
  const auto start = std::chrono::steady_clock::now();
  cudaError_t status = enqueue();
  if (status == cudaSuccess) status = cudaErrorNotReady;
  while (status == cudaErrorNotReady && std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
    status = cudaStreamQuery(stream);
    std::this_thread::yield();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const bool still_holding = holder.holding();
  holder.release();
  return {status, ms, still_holding};
}

// Every size class of the three modes. Each reduction runs once first (lazy module loading blocks a
// kernel's first launch while another kernel runs, CUB's too), then again while `held` SMs are
// held: it must finish within a second, the holder still holding, with the right result.
template <class T>
void reduce_while_held(unsigned held) {
  FASTREDUCE_REQUIRE_GPU();
  const unsigned sms = sm_count();
  ASSERT_LT(held, sms);
  const std::size_t bulk = (std::size_t(128) << 20) / sizeof(T) + 12345;
  const Case cases[] = {
      {"one block", 1000, fr::Mode::Fast},           {"small", std::size_t(1) << 20, fr::Mode::Fast},
      {"large", std::size_t(1) << 24, fr::Mode::Fast}, {"bulk (or large)", bulk, fr::Mode::Fast},
      {"reproducible, one block", 20000, fr::Mode::Reproducible},
      {"reproducible", std::size_t(1) << 20, fr::Mode::Reproducible},
      {"reproducible", std::size_t(1) << 24, fr::Mode::Reproducible},
      {"exact, one block", 20000, fr::Mode::Exact},
      {"exact", std::size_t(1) << 20, fr::Mode::Exact},
      {"exact", std::size_t(1) << 24, fr::Mode::Exact},
      {"small, finish counter", std::size_t(1) << 20, fr::Mode::Fast, true},
      {"large, finish counter", (std::size_t(4) << 20) / sizeof(T) + 1, fr::Mode::Fast, true},
  };
  DeviceBuffer<T> in(bulk);
  ASSERT_EQ(fr::bench::fill_random(in.get(), bulk, test_seed(), fr::bench::Distribution::SignedSmallIntegers), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), bulk);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer<fr::acc_t<T, fr::Sum>> out(1);
  DeviceBuffer<unsigned> counter(1);
  CUDA_OK(cudaMemset(counter.get(), 0, sizeof(unsigned)));
  for (const Case& c : cases) {
    const fr::Options opt{.mode = c.mode, .finish_counter = c.counter ? counter.get() : nullptr};
    const eng::Route route = route_of<T>(in.get(), c.n, opt);
    const std::string what = std::string(c.name) + " (" + eng::path_name(route.path) + ", " +
                             std::to_string(route.grid) + " blocks), n=" + std::to_string(c.n) + ", " +
                             std::to_string(held) + " of " + std::to_string(sms) + " SMs held";
    std::size_t bytes = 0;
    ASSERT_EQ((fr::reduce_async<T, fr::Sum>(nullptr, bytes, in.get(), nullptr, c.n, fr::Sum{}, stream, opt)), cudaSuccess);
    DeviceBuffer<char> temp(bytes);
    ASSERT_EQ((fr::reduce_async<T, fr::Sum>(temp.get(), bytes, in.get(), out.get(), c.n, fr::Sum{}, stream, opt)),
              cudaSuccess);  // warm-up: modules loaded
    CUDA_OK(cudaStreamSynchronize(stream));
    out.poison();
    const HeldRun run = run_while_held(held, stream, [&] {
      return fr::reduce_async<T, fr::Sum>(temp.get(), bytes, in.get(), out.get(), c.n, fr::Sum{}, stream, opt);
    });
    const double ms = run.ms;
    EXPECT_EQ(run.status, cudaSuccess) << what << ": not finished after " << ms << " ms";
    EXPECT_TRUE(run.still_holding) << what << ": the holder let go before the reduction finished";
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_EQ(static_cast<long double>(read_back(out.get())), fr::reference::compensated_sum(host.data(), c.n)) << what;
    if (c.counter) {
      EXPECT_EQ(route.last_block_combines, c.n * sizeof(T) <= device_policy().self_finish_max_bytes) << what;
      EXPECT_EQ(read_back(counter.get()), 0u) << what;
    }
    std::printf("  %s: finished in %.3f ms\n", what.c_str(), ms);
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

// One enqueue of a reduction into `out` (two-phase: temp null sets bytes).
using Enqueue = std::function<cudaError_t(void* temp, std::size_t& bytes, cudaStream_t stream)>;

// The reduction runs once alone (its result kept), then while `held` SMs are held: it must finish
// within a second, the holder still holding, with the same bytes.
void finishes_while_held(unsigned held, const std::string& what, const Enqueue& enqueue, void* out, std::size_t out_bytes) {
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::size_t bytes = 0;
  ASSERT_EQ(enqueue(nullptr, bytes, stream), cudaSuccess) << what;
  DeviceBuffer<char> temp(bytes);
  // Both runs write over the same poison (a result's padding bytes, as an arg-extreme's, stay).
  CUDA_OK(cudaMemset(out, 0xA5, out_bytes));
  CUDA_OK(cudaDeviceSynchronize());
  ASSERT_EQ(enqueue(temp.get(), bytes, stream), cudaSuccess) << what;  // warm-up: modules loaded
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<char> alone(out_bytes), shared(out_bytes);
  CUDA_OK(cudaMemcpy(alone.data(), out, out_bytes, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemset(out, 0xA5, out_bytes));
  CUDA_OK(cudaDeviceSynchronize());
  const HeldRun run = run_while_held(held, stream, [&] { return enqueue(temp.get(), bytes, stream); });
  const double ms = run.ms;
  EXPECT_EQ(run.status, cudaSuccess) << what << ": not finished after " << ms << " ms";
  EXPECT_TRUE(run.still_holding) << what << ": the holder let go before the reduction finished";
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(shared.data(), out, out_bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(alone.data(), shared.data(), out_bytes), 0) << what << ": another result while SMs were held";
  std::printf("  %s, %u SMs held: finished in %.3f ms\n", what.c_str(), held, ms);
  CUDA_OK(cudaStreamDestroy(stream));
}

struct SumOfSquares {  // a user's transform
  __host__ __device__ float operator()(float x) const { return x * x; }
};

// The axis and segment paths, the header-only ops and a user's transform, and Mode::Exact's
// kernels (the sum's along axes and segments, the variance's, L2 norm's and dot's), while SMs are held.
void every_shape_while_held(unsigned held) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = std::size_t(1) << 24;
  DeviceBuffer<float> in(n), in2(n);
  ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  ASSERT_EQ(fr::bench::fill_random(in2.get(), n, test_seed(), fr::bench::Distribution::Signed), cudaSuccess);
  DeviceBuffer<char> out(std::size_t(1) << 24);
  auto* f = reinterpret_cast<float*>(out.get());
  const fr::Options exact{.mode = fr::Mode::Exact};
  const struct {
    const char* name;
    fr::Axis axis;
  } axes[] = {
      {"rows of 16 (tile)", {.outer = n / 16, .length = 16}},
      {"rows of 1024 (a warp each)", {.outer = n / 1024, .length = 1024}},
      {"4 rows of 2^22 (pieces)", {.outer = 4, .length = n / 4}},
      {"16 columns (pieces)", {.length = n / 16, .inner = 16}},
      {"4096 columns", {.length = 4096, .inner = 4096}},
      {"strided", {.outer = 64, .length = 4096, .inner = 32, .inner_stride = 2}},
  };
  for (const auto& a : axes) {
    const std::size_t outputs = a.axis.outer * a.axis.inner;
    finishes_while_held(held, std::string("sum along ") + a.name,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_axis_async(t, b, in.get(), f, a.axis, fr::Sum{}, s);
                        }, f, outputs * sizeof(float));
    finishes_while_held(held, std::string("var along ") + a.name,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_axis_async(t, b, in.get(), f, a.axis, fr::Var{}, s);
                        }, f, outputs * sizeof(float));
    finishes_while_held(held, std::string("exact sum along ") + a.name,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_axis_async(t, b, in.get(), f, a.axis, fr::Sum{}, s, exact);
                        }, f, outputs * sizeof(float));
    finishes_while_held(held, std::string("argmax along ") + a.name,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_axis_async(t, b, in.get(), reinterpret_cast<fr::Indexed<float>*>(out.get()),
                                                       a.axis, fr::ArgMax{}, s);
                        }, out.get(), outputs * sizeof(fr::Indexed<float>));
  }
  // Power-law-like segments: many short, a few long.
  std::vector<std::int64_t> offsets{0};
  for (std::size_t s = 0; offsets.back() < std::int64_t(n); ++s) {
    offsets.push_back(std::min<std::int64_t>(std::int64_t(n), offsets.back() + (s % 97 == 0 ? 1 << 20 : std::int64_t(s % 300))));
  }
  DeviceBuffer<std::int64_t> d_offsets(offsets.size());
  CUDA_OK(cudaMemcpy(d_offsets.get(), offsets.data(), offsets.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  const std::size_t segments = offsets.size() - 1;
  finishes_while_held(held, "segments, sum",
                      [&](void* t, std::size_t& b, cudaStream_t s) {
                        return fr::reduce_segments_async(t, b, in.get(), f, segments, d_offsets.get(), d_offsets.get() + 1,
                                                         fr::Sum{}, s);
                      }, f, segments * sizeof(float));
  finishes_while_held(held, "segments, exact sum",
                      [&](void* t, std::size_t& b, cudaStream_t s) {
                        return fr::reduce_segments_async(t, b, in.get(), f, segments, d_offsets.get(), d_offsets.get() + 1,
                                                         fr::Sum{}, s, exact);
                      }, f, segments * sizeof(float));
  finishes_while_held(held, "segments, mean",
                      [&](void* t, std::size_t& b, cudaStream_t s) {
                        return fr::reduce_segments_async(t, b, in.get(), f, segments, d_offsets.get(), d_offsets.get() + 1,
                                                         fr::Mean{}, s);
                      }, f, segments * sizeof(float));
  // 1-D: the header-only ops and a user's transform at the load, small and bulk sizes.
  for (std::size_t m : {std::size_t(1) << 16, std::size_t(1) << 20, n}) {
    const std::string at = " of " + std::to_string(m);
    finishes_while_held(held, "argmax" + at,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_async(t, b, in.get(), reinterpret_cast<fr::Indexed<float>*>(out.get()), m,
                                                  fr::ArgMax{}, s);
                        }, out.get(), sizeof(fr::Indexed<float>));
    finishes_while_held(held, "dot" + at,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_async(t, b, in.get(), in2.get(), f, m, fr::Dot{}, s);
                        }, f, sizeof(float));
    // Mode::Exact's own kernels for the variance (one pass), the L2 norm and dot.
    finishes_while_held(held, "exact var" + at,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_async(t, b, in.get(), f, m, fr::Var{}, s, exact);
                        }, f, sizeof(float));
    finishes_while_held(held, "exact L2 norm" + at,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_async(t, b, in.get(), f, m, fr::NormL2{}, s, exact);
                        }, f, sizeof(float));
    finishes_while_held(held, "exact dot" + at,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_async(t, b, in.get(), in2.get(), f, m, fr::Dot{}, s, exact);
                        }, f, sizeof(float));
    finishes_while_held(held, "a user's sum of squares" + at,
                        [&](void* t, std::size_t& b, cudaStream_t s) {
                          return fr::reduce_async(t, b, in.get(), f, m, fr::transformed(SumOfSquares{}, fr::Sum{}), s);
                        }, f, sizeof(float));
  }
}

}  // namespace

TEST(SharedGpu, EveryShapeAndOpWhileHalfTheSmsAreHeld) { every_shape_while_held(sm_count() / 2); }

TEST(SharedGpu, EveryShapeAndOpWhileAllButTwoSmsAreHeld) { every_shape_while_held(sm_count() - 2); }

TEST(SharedGpu, FinishesWhileHalfTheSmsAreHeld) {
  FASTREDUCE_REQUIRE_GPU();
  reduce_while_held<float>(sm_count() / 2);
  reduce_while_held<double>(sm_count() / 2);
}

TEST(SharedGpu, FinishesWhileAllButTwoSmsAreHeld) {
  FASTREDUCE_REQUIRE_GPU();
  reduce_while_held<float>(sm_count() - 2);
}
