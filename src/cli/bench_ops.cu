// `fastreduce bench --ops argmax,var,norm2,dot`: the header-only reductions (fastreduce/reduce.cuh,
// fastreduce/stats.cuh) against their peers in the same run, on the same data: CUB's ArgMax,
// cuBLAS's nrm2 and dot (CUB and cuBLAS have no variance), and fastreduce's own fast Sum over the
// same bytes, which every one of them should match in GB/s. Timed as `bench` times: batches of
// calls back to back between CUDA events, interleaved, median batch, inputs rotated among slices
// of an allocation three times the L2.
#include <cublas_v2.h>
#include <cub/device/device_reduce.cuh>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <vector>

#include "cli/app.hpp"
#include "cli/table.hpp"
#include "data.hpp"
#include "device_info.hpp"
#include "device_memory.hpp"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/stats.cuh"
#include "timing.hpp"

namespace fastreduce::cli {

namespace {

struct OpsRow {
  std::string op, type;
  std::size_t n = 0;
  double ours_us = 0, sum_us = 0, peer_us = 0;  // peer_us 0: no peer
  double bytes = 0;                            // read per call
  std::string peer;
  bool agree = true;
};


struct Cublas {
  cublasHandle_t handle = nullptr;
  Cublas() {
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) handle = nullptr;
    if (handle != nullptr) {
      cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE);  // results stay on the device: no sync
      cublasSetStream(handle, 0);
    }
  }
  ~Cublas() {
    if (handle != nullptr) cublasDestroy(handle);
  }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
};

cublasStatus_t cublas_nrm2(cublasHandle_t h, std::int64_t n, const float* x, float* r) { return cublasSnrm2_64(h, n, x, 1, r); }
cublasStatus_t cublas_nrm2(cublasHandle_t h, std::int64_t n, const double* x, double* r) { return cublasDnrm2_64(h, n, x, 1, r); }
cublasStatus_t cublas_dot(cublasHandle_t h, std::int64_t n, const float* x, const float* y, float* r) {
  return cublasSdot_64(h, n, x, 1, y, 1, r);
}
cublasStatus_t cublas_dot(cublasHandle_t h, std::int64_t n, const double* x, const double* y, double* r) {
  return cublasDdot_64(h, n, x, 1, y, 1, r);
}

bool near(double a, double b, double tol) { return std::fabs(a - b) <= tol * std::max(std::fabs(a), std::fabs(b)); }

template <class T>
bool bench_op(const BenchOptions& o, const bench::DeviceInfo& device, Cublas& blas, const std::string& op,
              const std::string& type, std::size_t n, std::vector<OpsRow>& rows, std::ostream& err) {
  const bool two = op == "dot";
  const std::size_t read = (two ? 2 : 1) * n * sizeof(T);
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  // Slices of one allocation, rotated so that consecutive calls read cold data; at least two
  // (dot reads slice i and i + 1; the Sum over the same bytes reads both).
  const std::size_t stride = (n + 63) / 64 * 64;
  std::size_t slices = std::max<std::size_t>(2, (3 * device.l2_bytes) / std::max<std::size_t>(n * sizeof(T), 1) + 1);
  slices = std::min<std::size_t>(slices, 4096);
  while (slices > 2 && slices * stride * sizeof(T) > free_bytes / 3) --slices;
  if (slices * stride * sizeof(T) + (std::size_t(1) << 28) > free_bytes) {
    err << format("\nfastreduce: skipping %s %s n=%zu: needs %.1f GB, %.1f GB free\n", op.c_str(), type.c_str(), n,
                  slices * stride * sizeof(T) / 1e9, free_bytes / 1e9);
    return true;
  }
  bench::DeviceArray<T> arena_memory(slices * stride);
  T* const arena = arena_memory.get();
  if (arena == nullptr) {
    err << "\nfastreduce: allocation failed for n = " << n << '\n';
    return false;
  }
  const auto dist = op == "dot" ? bench::Distribution::Positive : bench::Distribution::Signed;
  if (bench::fill_random(arena, slices * stride, bench::fresh_seed(), dist) != cudaSuccess) return false;
  const std::size_t pairs = slices - 1;  // slice i and i + 1
  auto x_of = [&](int call) { return arena + (std::size_t(call) % pairs) * stride; };
  auto y_of = [&](int call) { return arena + (std::size_t(call) % pairs + 1) * stride; };

  using S = stat_t<T>;
  bench::DeviceArray<unsigned char> out_memory(256);
  auto* out = reinterpret_cast<unsigned char*>(out_memory.get());
  auto* s_out = reinterpret_cast<S*>(out);                    // ours
  auto* s_peer = reinterpret_cast<S*>(out + 64);              // the peer's
  auto* i_out = reinterpret_cast<Indexed<T>*>(out + 128);     // argmax
  auto* peer_index = reinterpret_cast<std::int64_t*>(out + 192);
  auto* peer_value = reinterpret_cast<T*>(out + 224);
  auto* sum_out = reinterpret_cast<T*>(out + 240);

  // Temporary storage: the largest any contender asks for.
  std::size_t temp_bytes = 0, b = 0;
  auto grow = [&](cudaError_t e) {
    temp_bytes = std::max(temp_bytes, b);
    return e;
  };
  grow(reduce_async(nullptr, b, arena, sum_out, (two ? 2 : 1) * n));
  if (op == "argmax") {
    grow(argmax_async(nullptr, b, arena, n, i_out));
    grow(cub::DeviceReduce::ArgMax(nullptr, b, arena, peer_value, peer_index, static_cast<std::int64_t>(n)));
  } else if (op == "var") {
    grow(var_async(nullptr, b, arena, n, s_out));
  } else if (op == "norm2") {
    grow(norm_async(nullptr, b, arena, n, s_out, Norm::L2));
  } else {
    grow(dot_async(nullptr, b, arena, arena, n, s_out));
  }
  bench::DeviceArray<unsigned char> temp_memory(std::max<std::size_t>(temp_bytes, 16));
  void* const temp = temp_memory.get();

  std::function<void(int)> ours, peer;
  std::string peer_name = "-";
  if (op == "argmax") {
    ours = [&](int i) { std::size_t tb = temp_bytes; argmax_async(temp, tb, x_of(i), n, i_out); };
    peer = [&](int i) {
      std::size_t tb = temp_bytes;
      cub::DeviceReduce::ArgMax(temp, tb, x_of(i), peer_value, peer_index, static_cast<std::int64_t>(n));
    };
    peer_name = "CUB ArgMax";
  } else if (op == "var") {
    ours = [&](int i) { std::size_t tb = temp_bytes; var_async(temp, tb, x_of(i), n, s_out); };
  } else if (op == "norm2") {
    ours = [&](int i) { std::size_t tb = temp_bytes; norm_async(temp, tb, x_of(i), n, s_out, Norm::L2); };
    if (blas.handle != nullptr) {
      peer = [&](int i) { cublas_nrm2(blas.handle, static_cast<std::int64_t>(n), x_of(i), s_peer); };
      peer_name = "cuBLAS nrm2";
    }
  } else {
    ours = [&](int i) { std::size_t tb = temp_bytes; dot_async(temp, tb, x_of(i), y_of(i), n, s_out); };
    if (blas.handle != nullptr) {
      peer = [&](int i) { cublas_dot(blas.handle, static_cast<std::int64_t>(n), x_of(i), y_of(i), s_peer); };
      peer_name = "cuBLAS dot";
    }
  }
  // Fast Sum over the same bytes (for dot, the 2n elements from x's slice on).
  std::function<void(int)> sum = [&](int i) {
    std::size_t tb = temp_bytes;
    reduce_async(temp, tb, x_of(i), sum_out, (two ? 2 : 1) * n);
  };

  // Agreement on slice 0, against the peer or (var) a host reference in double.
  ours(0);
  if (peer) peer(0);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    err << "\nfastreduce: " << op << " failed: " << cudaGetErrorString(e) << '\n';
    return false;
  }
  bool agree = true;
  if (op == "argmax") {
    Indexed<T> mine{};
    std::int64_t theirs = -1;
    cudaMemcpy(&mine, i_out, sizeof(mine), cudaMemcpyDeviceToHost);
    cudaMemcpy(&theirs, peer_index, sizeof(theirs), cudaMemcpyDeviceToHost);
    agree = n == 0 ? true : mine.index == theirs;
    if (!agree) err << format("\nfastreduce: argmax n=%zu: index %lld, CUB %lld\n", n, (long long)mine.index, (long long)theirs);
  } else {
    S mine{}, theirs{};
    cudaMemcpy(&mine, s_out, sizeof(S), cudaMemcpyDeviceToHost);
    if (op == "var") {
      std::vector<T> h(n);
      cudaMemcpy(h.data(), arena, n * sizeof(T), cudaMemcpyDeviceToHost);
      double mean = 0, m2 = 0;
      for (T v : h) mean += double(v);
      mean /= double(std::max<std::size_t>(n, 1));
      for (T v : h) m2 += (double(v) - mean) * (double(v) - mean);
      theirs = static_cast<S>(n > 1 ? m2 / double(n - 1) : NAN);
      agree = n < 2 || near(double(mine), double(theirs), 1e-6);
    } else if (peer) {
      cudaMemcpy(&theirs, s_peer, sizeof(S), cudaMemcpyDeviceToHost);
      agree = n == 0 || near(double(mine), double(theirs), std::is_same_v<T, float> ? 1e-4 : 1e-10);
    }
    if (!agree) err << format("\nfastreduce: %s %s n=%zu: %.10g, reference %.10g\n", op.c_str(), type.c_str(), n,
                              double(mine), double(theirs));
  }

  std::vector<std::function<void(int)>> contenders{ours, sum};
  if (peer) contenders.push_back(peer);
  std::vector<int> calls;
  for (const auto& c : contenders) calls.push_back(bench::calls_per_batch(c, 0, 1000));
  const auto t = bench::time_back_to_back_interleaved(contenders, 0, calls, {.warmup = 3, .repetitions = o.repetitions});
  rows.push_back({op, type, n, t[0].median_us, t[1].median_us, peer ? t[2].median_us : 0.0, double(read), peer_name, agree});
  return agree;
}

}  // namespace

int run_bench_ops(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  const auto device = bench::current_device();
  if (!device) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  Cublas blas;
  if (blas.handle == nullptr) err << "fastreduce: cuBLAS did not start: its columns are left out\n";
  std::vector<OpsRow> rows;
  bool ok = true;
  std::size_t done = 0;
  const std::size_t total = o.types.size() * o.ops.size() * o.sizes.size();
  for (const auto& type : o.types) {
    for (const auto& op : o.ops) {
      for (std::size_t n : o.sizes) {
        err << format("\r[bench] %zu/%zu  %s %s n=%zu          ", ++done, total, op.c_str(), type.c_str(), n) << std::flush;
        if (type == "float") ok = bench_op<float>(o, *device, blas, op, type, n, rows, err) && ok;
        else ok = bench_op<double>(o, *device, blas, op, type, n, rows, err) && ok;
      }
    }
  }
  err << "\r" << std::string(60, ' ') << "\r";
  auto gbps = [](double bytes, double us) { return us > 0 ? bytes / (us * 1e-6) / 1e9 : 0.0; };
  Table table({"op", "type", "n", "fastreduce us", "GB/s", "of Sum", "peer", "peer us", "GB/s", "peer/fastreduce", "agree"});
  for (const auto& r : rows) {
    const bool peer = r.peer_us > 0;
    table.add({r.op, r.type, std::to_string(r.n), format("%.2f", r.ours_us), format("%.0f", gbps(r.bytes, r.ours_us)),
               format("%.1f%%", 100 * r.sum_us / r.ours_us), r.peer, peer ? format("%.2f", r.peer_us) : "-",
               peer ? format("%.0f", gbps(r.bytes, r.peer_us)) : "-",
               peer ? format("%.2fx", r.peer_us / r.ours_us) : "-", r.agree ? "yes" : "NO"});
  }
  if (o.format == "json") {
    nlohmann::json j;
    j["device"] = {{"name", device->name}, {"sms", device->sms}, {"l2_bytes", device->l2_bytes}};
    for (const auto& r : rows) {
      j["rows"].push_back({{"op", r.op}, {"type", r.type}, {"n", r.n}, {"bytes", r.bytes}, {"fastreduce_us", r.ours_us},
                           {"sum_us", r.sum_us}, {"peer", r.peer}, {"peer_us", r.peer_us}, {"agree", r.agree}});
    }
    out << j.dump(2) << '\n';
  } else if (o.format == "csv") {
    table.print_csv(out);
  } else {
    out << format("fastreduce bench --ops on %s (%d SMs): per call, back to back, median of %d batches interleaved; "
                  "inputs rotated beyond the %.0f MB L2\nGB/s = bytes read / time; \"of Sum\": fastreduce's fast Sum "
                  "over the same bytes, time / this op's time\n\n",
                  device->name.c_str(), device->sms, o.repetitions, device->l2_bytes / 1e6);
    table.print(out);
  }
  return ok ? 0 : 1;
}

}  // namespace fastreduce::cli
