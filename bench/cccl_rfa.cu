// CCCL's reproducible sum (cub::DeviceReduce::Sum with gpu_to_gpu determinism: a binned
// Reproducible Floating-point Accumulator) timed as `fastreduce bench` times its contenders, for
// the comparison with Mode::Exact. A program of its own because it needs newer CCCL headers than
// the CUDA toolkit's (CCCL 3.5, from the nvidia-cuda-cccl wheel): configure with
// -DFASTREDUCE_CCCL_RFA_INCLUDE=<wheel>/nvidia/cu13/include/cccl. It links only the timing
// harness and the data generator, which use no CCCL, so the two CCCL versions never meet in one
// program. scripts/exact_vs_cccl.py sets its output beside `fastreduce bench --modes fast,exact`
// from the same machine and call.
//
// Per type and size: the median time of a call (batches of calls back to back, inputs rotated
// beyond L2, interleaved with CUB's plain Sum from the same headers as an anchor), the result's
// bits, whether it agrees with CUB's plain Sum (as `fastreduce bench` checks its own: relative
// 1e-4 for float, 1e-12 for double), and its distance in ulps from the correctly rounded sum
// (computed on the CPU, up to --check-up-to elements). The gpu_to_gpu call is CCCL's
// single-phase form: it takes its temporary storage from the environment's default memory
// resource on every call, and that is timed with it.
//
//   fastreduce_cccl_rfa [--types float,double] [--sizes 2^10,2^12,...] [--check-up-to 2^26]
//                       [--format table|json]
#include <cub/device/device_reduce.cuh>
#include <cuda/std/execution>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "data.hpp"
#include "device_memory.hpp"
#include "reference.hpp"
#include "timing.hpp"

namespace {

namespace bench = fastreduce::bench;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = s.find(',', start);
    const std::size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// "2^20", "1000003": an element count; 0 with ok false otherwise.
std::size_t parse_size(const std::string& s, bool& ok) {
  char* end = nullptr;
  if (s.rfind("2^", 0) == 0) {
    const long p = std::strtol(s.c_str() + 2, &end, 10);
    ok = *end == '\0' && p >= 0 && p < 40;
    return ok ? std::size_t(1) << p : 0;
  }
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  ok = !s.empty() && *end == '\0';
  return ok ? static_cast<std::size_t>(v) : 0;
}

template <class T>
std::int64_t ordered(T x) {  // a total order of the bits in which neighbours differ by one ulp
  if constexpr (sizeof(T) == 4) {
    std::int32_t b;
    std::memcpy(&b, &x, 4);
    return b < 0 ? -std::int64_t(b & 0x7FFFFFFF) : b;
  } else {
    std::int64_t b;
    std::memcpy(&b, &x, 8);
    return b < 0 ? -(b & 0x7FFFFFFFFFFFFFFFll) : b;
  }
}

struct Row {
  std::string type;
  std::size_t n;
  double rfa_us, cub_us;
  double rfa_gbs;
  double rfa_value;
  double cub_value;
  bool agree;      // with CUB's plain Sum
  long long ulps;  // -1: no reference (n too large)
};

template <class T>
bool bench_one(const char* type, std::size_t n, std::size_t l2_bytes, std::size_t check_up_to, std::vector<Row>& rows) {
  const std::size_t bytes = n * sizeof(T);
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  if (bytes + (std::size_t(1) << 28) > free_bytes) {
    std::fprintf(stderr, "skipping %s n=%zu: needs %.1f GB\n", type, n, bytes / 1e9);
    return true;
  }
  const std::size_t stride = (n + 63) / 64 * 64;
  std::size_t slices = std::max<std::size_t>(1, (3 * l2_bytes) / std::max<std::size_t>(bytes, 1));
  slices = std::min<std::size_t>(slices, 4096);
  while (slices > 1 && slices * stride * sizeof(T) > free_bytes / 3) --slices;
  bench::DeviceArray<T> arena(slices * stride);
  bench::DeviceArray<T> out(2);
  std::size_t cub_temp_bytes = 0;
  (void)cub::DeviceReduce::Sum(nullptr, cub_temp_bytes, arena.get(), out.get() + 1, static_cast<std::int64_t>(n));
  bench::DeviceArray<unsigned char> cub_temp(cub_temp_bytes);
  if (arena.get() == nullptr || out.get() == nullptr || cub_temp.get() == nullptr) {
    std::fprintf(stderr, "allocation failed for n = %zu\n", n);
    return false;
  }
  if (bench::fill_random(arena.get(), slices * stride, bench::fresh_seed(), bench::Distribution::Positive) != cudaSuccess) {
    std::fprintf(stderr, "filling the input failed\n");
    return false;
  }
  auto slice = [&](int call) { return arena.get() + (std::size_t(call) % slices) * stride; };
  const auto env = cuda::execution::require(cuda::execution::determinism::gpu_to_gpu);
  cudaError_t failed = cudaSuccess;  // the first error of a timed call
  auto note = [&](cudaError_t e) {
    if (failed == cudaSuccess) failed = e;
  };
  auto rfa = [&](int i) { note(cub::DeviceReduce::Sum(slice(i), out.get(), static_cast<std::int64_t>(n), env)); };
  auto plain = [&](int i) {
    std::size_t tb = cub_temp_bytes;
    note(cub::DeviceReduce::Sum(cub_temp.get(), tb, slice(i), out.get() + 1, static_cast<std::int64_t>(n)));
  };
  // The result on slice 0, twice (the bits must not change), against the correctly rounded sum.
  T value[2] = {};
  for (T& v : value) {
    cudaMemset(out.get(), 0xA5, sizeof(T));
    if (cudaError_t e = cub::DeviceReduce::Sum(arena.get(), out.get(), static_cast<std::int64_t>(n), env);
        e != cudaSuccess || (e = cudaDeviceSynchronize()) != cudaSuccess) {
      std::fprintf(stderr, "CCCL gpu_to_gpu Sum failed for n = %zu: %s\n", n, cudaGetErrorString(e));
      return false;
    }
    cudaMemcpy(&v, out.get(), sizeof(T), cudaMemcpyDeviceToHost);
  }
  if (std::memcmp(&value[0], &value[1], sizeof(T)) != 0) std::fprintf(stderr, "n=%zu: two runs gave different bits\n", n);
  // CUB's plain Sum of slice 0: what a reproducible sum should agree with.
  T cub_value{};
  plain(0);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess || failed != cudaSuccess ||
                                               cudaMemcpy(&cub_value, out.get() + 1, sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::fprintf(stderr, "CUB Sum failed for n = %zu\n", n);
    return false;
  }
  const double tolerance = (sizeof(T) == 8 ? 1e-12 : 1e-4) * std::max(1.0, std::fabs(double(cub_value)));
  const bool agree = std::fabs(double(value[0]) - double(cub_value)) <= tolerance;
  if (!agree) {
    std::fprintf(stderr, "%s n=%zu: CCCL gpu_to_gpu %.10g, CUB %.10g\n", type, n, double(value[0]), double(cub_value));
  }
  long long ulps = -1;
  if (n <= check_up_to) {
    std::vector<T> host(n);
    if (cudaMemcpy(host.data(), arena.get(), bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
    const T exact = static_cast<T>(fastreduce::reference::exact_rounded<T>(host.data(), n));
    ulps = std::llabs(ordered(value[0]) - ordered(exact));
  }
  const std::vector<std::function<void(int)>> contenders = {rfa, plain};
  const std::vector<int> calls = {bench::calls_per_batch(rfa, 0, 1000), bench::calls_per_batch(plain, 0, 1000)};
  const auto t = bench::time_back_to_back_interleaved(contenders, 0, calls, {.warmup = 3, .repetitions = 15});
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess || failed != cudaSuccess) {
    std::fprintf(stderr, "n=%zu: %s\n", n, cudaGetErrorString(e != cudaSuccess ? e : failed));
    return false;
  }
  rows.push_back({type, n, t[0].median_us, t[1].median_us, bytes / t[0].median_us / 1e3, double(value[0]),
                  double(cub_value), agree, ulps});
  return agree;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> types = {"float", "double"};
  std::vector<std::string> size_texts = {"2^10", "2^12", "2^14", "2^16", "2^18", "2^20", "2^22",
                                         "2^24", "2^26", "2^28", "2^30"};
  std::string format = "table";
  std::string check_text = "2^26";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--types" && has_value) types = split(argv[++i]);
    else if (arg == "--sizes" && has_value) size_texts = split(argv[++i]);
    else if (arg == "--format" && has_value) format = argv[++i];
    else if (arg == "--check-up-to" && has_value) check_text = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--types float,double] [--sizes 2^10,...] [--check-up-to 2^26] [--format table|json]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<std::size_t> sizes;
  for (const auto& s : size_texts) {
    bool ok = false;
    sizes.push_back(parse_size(s, ok));
    if (!ok || sizes.back() == 0) {
      std::fprintf(stderr, "--sizes: '%s' is not a positive element count\n", s.c_str());
      return 2;
    }
  }
  bool check_ok = false;
  const std::size_t check_up_to = parse_size(check_text, check_ok);
  if (!check_ok) {
    std::fprintf(stderr, "--check-up-to: '%s' is not an element count\n", check_text.c_str());
    return 2;
  }
  for (const auto& t : types) {
    if (t != "float" && t != "double") {
      std::fprintf(stderr, "--types: '%s' is not float or double (CCCL's gpu_to_gpu sums only these)\n", t.c_str());
      return 2;
    }
  }
  if (format != "table" && format != "json") {
    std::fprintf(stderr, "--format: table or json\n");
    return 2;
  }
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device found\n");
    return 1;
  }
  std::vector<Row> rows;
  bool ok = true;
  for (const auto& t : types) {
    for (const std::size_t n : sizes) {
      std::fprintf(stderr, "[cccl] %s n=%zu\n", t.c_str(), n);
      ok = (t == "float" ? bench_one<float>("float", n, prop.l2CacheSize, check_up_to, rows)
                         : bench_one<double>("double", n, prop.l2CacheSize, check_up_to, rows)) && ok;
    }
  }
  if (format == "json") {
    std::printf("{\"gpu\": \"%s\", \"cccl_version\": %d, \"rows\": [", prop.name, CCCL_VERSION);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%s\n  {\"type\": \"%s\", \"n\": %zu, \"cccl_rfa_us\": %.3f, \"cub_us\": %.3f, \"cccl_rfa_gbs\": %.1f, "
                  "\"value\": %.17g, \"cub_value\": %.17g, \"agrees_with_cub\": %s, \"ulps_from_correctly_rounded\": %lld}",
                  i ? "," : "", r.type.c_str(), r.n, r.rfa_us, r.cub_us, r.rfa_gbs, r.rfa_value, r.cub_value,
                  r.agree ? "true" : "false", r.ulps);
    }
    std::printf("\n]}\n");
  } else {
    std::printf("CCCL %d gpu_to_gpu Sum on %s: per call, median of 15 interleaved batches; ulps from the correctly "
                "rounded sum (CPU, n <= %zu; -1: not checked)\n\n",
                CCCL_VERSION, prop.name, check_up_to);
    std::printf("%-7s %12s %13s %8s %12s %20s %20s %6s\n", "type", "n", "gpu_to_gpu us", "GB/s", "CUB Sum us",
                "gpu_to_gpu value", "CUB value", "ulps");
    for (const Row& r : rows) {
      std::printf("%-7s %12zu %13.2f %8.0f %12.2f %20.10g %20.10g %6lld%s\n", r.type.c_str(), r.n, r.rfa_us, r.rfa_gbs,
                  r.cub_us, r.rfa_value, r.cub_value, r.ulps, r.agree ? "" : "  DIFFERS from CUB");
    }
  }
  return ok ? 0 : 1;
}
