// Inside someone else's program: while another kernel holds part of the GPU (an NCCL collective
// waiting for a peer, a persistent kernel, another MPS client), every reduction must still
// finish on the SMs that are free. A grid that needs all its blocks resident at once (a
// cooperative launch) never starts there, and if the holder waits for something the host does
// after the reduction, the program deadlocks.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "fastreduce/fastreduce.cuh"
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
};

// Every size class of both modes. Each reduction runs once first (lazy module loading blocks a
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
  };
  DeviceBuffer<T> in(bulk);
  ASSERT_EQ(fr::bench::fill_random(in.get(), bulk, test_seed(), fr::bench::Distribution::SignedSmallIntegers), cudaSuccess);
  const auto host = fr::bench::to_host(in.get(), bulk);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer<fr::acc_t<T, fr::Sum>> out(1);
  for (const Case& c : cases) {
    const fr::Options opt{.mode = c.mode};
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
    SmHolder holder(held);
    ASSERT_TRUE(holder.ok()) << "could not hold " << held << " SMs";
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ((fr::reduce_async<T, fr::Sum>(temp.get(), bytes, in.get(), out.get(), c.n, fr::Sum{}, stream, opt)),
              cudaSuccess);
    cudaError_t status = cudaErrorNotReady;
    while ((status = cudaStreamQuery(stream)) == cudaErrorNotReady &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
      std::this_thread::yield();
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const bool still_holding = holder.holding();
    holder.release();
    EXPECT_EQ(status, cudaSuccess) << what << ": not finished after " << ms << " ms";
    EXPECT_TRUE(still_holding) << what << ": the holder let go before the reduction finished";
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_EQ(static_cast<long double>(read_back(out.get())), fr::reference::compensated_sum(host.data(), c.n)) << what;
    std::printf("  %s: finished in %.3f ms\n", what.c_str(), ms);
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace

TEST(SharedGpu, FinishesWhileHalfTheSmsAreHeld) {
  FASTREDUCE_REQUIRE_GPU();
  reduce_while_held<float>(sm_count() / 2);
  reduce_while_held<double>(sm_count() / 2);
}

TEST(SharedGpu, FinishesWhileAllButTwoSmsAreHeld) {
  FASTREDUCE_REQUIRE_GPU();
  reduce_while_held<float>(sm_count() - 2);
}
