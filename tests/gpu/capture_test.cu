// CUDA graphs: every path captured into a graph and replayed on fresh data, and (FirstCall.*,
// run by CTest in a process of its own) the library's very first calls made inside a capture,
// where its lazy queries of the device and the kernels must not break the capture.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fastreduce/fastreduce.cuh"
#include "gpu_test.hpp"
#include "reference.hpp"

namespace fr = fastreduce;
namespace eng = fastreduce::engine;
using namespace fastreduce::testing;

namespace {

// Captures reduce_async (the size query too, when `query_inside`) on a stream, instantiates the
// graph and replays it three times, each on fresh whole-number data with a poisoned output: the
// result must be exact every time.
template <class T>
void capture_and_replay(std::size_t n, const fr::Options& opt, bool query_inside) {
  using A = fr::acc_t<T, fr::Sum>;
  DeviceBuffer<T> in(n);
  DeviceBuffer<A> out(1);
  DeviceBuffer<char> temp(std::size_t(1) << 20);  // more than any path needs at these sizes
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::size_t bytes = 0;
  if (!query_inside) {
    ASSERT_EQ((fr::reduce_async<T, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{}, stream, opt)), cudaSuccess);
  }
  ASSERT_LE(bytes, std::size_t(1) << 20);
  // Nothing may return between the capture's begin and end (the stream would stay capturing):
  // the statuses are checked once it has ended.
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const cudaError_t queried =
      query_inside ? fr::reduce_async<T, fr::Sum>(nullptr, bytes, in.get(), nullptr, n, fr::Sum{}, stream, opt) : cudaSuccess;
  const cudaError_t launched =
      bytes <= (std::size_t(1) << 20)
          ? fr::reduce_async<T, fr::Sum>(temp.get(), bytes, in.get(), out.get(), n, fr::Sum{}, stream, opt)
          : cudaErrorInvalidValue;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  ASSERT_EQ(queried, cudaSuccess) << cudaGetErrorString(queried);
  ASSERT_EQ(launched, cudaSuccess) << cudaGetErrorString(launched) << " (temporary storage " << bytes << " bytes)";
  ASSERT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::SignedSmallIntegers), cudaSuccess);
    const auto host = fr::bench::to_host(in.get(), n);
    out.poison();
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_EQ(static_cast<long double>(read_back(out.get())), fr::reference::compensated_sum(host.data(), n))
        << "n=" << n << " path " << eng::path_name(route_of<T>(in.get(), n, opt).path) << " replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// One size per path (the last one bulk copies on sm_90 builds and GPUs).
std::vector<std::size_t> one_size_per_path() {
  return {1000, (std::size_t(1) << 20) + 3, (std::size_t(1) << 23) + 5, (std::size_t(128) << 20) / sizeof(float) + 99};
}

}  // namespace

TEST(Graph, EveryPathCapturedAndReplayed) {
  FASTREDUCE_REQUIRE_GPU();
  for (std::size_t n : one_size_per_path()) {
    capture_and_replay<float>(n, {}, false);
    capture_and_replay<float>(n, {.mode = fr::Mode::Reproducible}, false);
  }
  capture_and_replay<double>((std::size_t(128) << 20) / sizeof(double) + 7, {}, false);  // double bulk copies
  capture_and_replay<double>(5000011, {.mode = fr::Mode::Reproducible}, false);
  capture_and_replay<std::int8_t>(5000011, {}, false);
}

// Segments captured and replayed: up to 4096 segments the pieces are counted and scanned by one
// block and the segments kernel is a dependent launch after it; 5000 takes the counting kernel and
// CUB's scan. Each replay on fresh whole-number data, outputs poisoned, every segment exact.
TEST(Graph, SegmentsCapturedAndReplayed) {
  FASTREDUCE_REQUIRE_GPU();
  const std::size_t n = 300007;
  DeviceBuffer<float> in(n);
  DeviceBuffer<char> temp(std::size_t(4) << 20);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937_64 rng(test_seed());
  for (std::size_t segments : {std::size_t(1), std::size_t(1025), std::size_t(4095), std::size_t(5000)}) {
    std::vector<std::int32_t> begin(segments), end(segments);
    for (std::size_t s = 0; s < segments; ++s) {
      begin[s] = std::int32_t(rng() % n);
      const std::int32_t len = std::int32_t(rng() % (s % 9 == 0 ? 20000 : 200));
      end[s] = std::min<std::int32_t>(begin[s] + len, std::int32_t(n));
    }
    DeviceBuffer<std::int32_t> db(segments), de(segments);
    CUDA_OK(cudaMemcpy(db.get(), begin.data(), segments * sizeof(std::int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(de.get(), end.data(), segments * sizeof(std::int32_t), cudaMemcpyHostToDevice));
    DeviceBuffer<float> out(segments);
    std::size_t bytes = 0;
    ASSERT_EQ(fr::reduce_segments_async(nullptr, bytes, in.get(), out.get(), segments, db.get(), de.get(),
                                        fr::Sum{}, stream),
              cudaSuccess);
    ASSERT_LE(bytes, std::size_t(4) << 20);
    cudaGraph_t graph = nullptr;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const cudaError_t launched = fr::reduce_segments_async(temp.get(), bytes, in.get(), out.get(), segments,
                                                           db.get(), de.get(), fr::Sum{}, stream);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    ASSERT_EQ(launched, cudaSuccess) << cudaGetErrorString(launched);
    ASSERT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
      ASSERT_EQ(fr::bench::fill_random(in.get(), n, test_seed(), fr::bench::Distribution::SignedSmallIntegers),
                cudaSuccess);
      const auto host = fr::bench::to_host(in.get(), n);
      out.poison();
      CUDA_OK(cudaGraphLaunch(exec, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      const auto got = fr::bench::to_host(out.get(), segments);
      for (std::size_t s = 0; s < segments; ++s) {
        double expected = 0;  // small integers: exact in double, and the float sum is exact too
        for (std::int32_t i = begin[s]; i < end[s]; ++i) expected += host[std::size_t(i)];
        ASSERT_EQ(double(got[s]), expected) << "segment " << s << " of " << segments << ", replay " << replay;
      }
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(stream);
}

// Run alone (CTest's fastreduce_gpu_first_call): nothing of the library has run in this process
// before these captures, so its device queries, kernel queries and first launches all happen
// while the stream is being captured.
TEST(FirstCall, InsideAGraphCapture) {
  FASTREDUCE_REQUIRE_GPU();
  if (::testing::UnitTest::GetInstance()->test_to_run_count() != 1) {
    GTEST_SKIP() << "not the only test of its process, so not the first call (CTest runs it alone: "
                    "fastreduce_gpu_first_call)";
  }
  for (std::size_t n : one_size_per_path()) capture_and_replay<float>(n, {}, true);
  capture_and_replay<float>((std::size_t(1) << 20) + 3, {.mode = fr::Mode::Reproducible}, true);
  capture_and_replay<float>(20000, {.mode = fr::Mode::Reproducible}, true);
  capture_and_replay<double>((std::size_t(128) << 20) / sizeof(double) + 7, {}, true);
}
