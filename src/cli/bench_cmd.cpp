// `fastreduce bench`: fastreduce, CUB DeviceReduce and thrust::reduce on the same data in the
// same run, each timed back to back (CUDA events around a batch of calls, median batch), their
// batches interleaved, inputs rotated among slices of an allocation larger than the L2.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "baselines.hpp"
#include "cli/app.hpp"
#include "fastreduce/runtime.hpp"
#include "cli/table.hpp"
#include "data.hpp"
#include "device_info.hpp"
#include "device_memory.hpp"
#include "fastreduce/fastreduce.cuh"
#include "timing.hpp"

#ifndef FASTREDUCE_SOURCE_DIR
#define FASTREDUCE_SOURCE_DIR "."
#endif

namespace fastreduce::cli {

namespace {

struct BenchRow {
  std::string type, op, mode;
  std::size_t n = 0;
  double ours_us = 0, cub_us = 0, thrust_us = 0;
  double ours_gbps = 0, cub_gbps = 0, thrust_gbps = 0;
  bool agree = true;
};


template <class T, class Op>
bool bench_one(const BenchOptions& o, const bench::DeviceInfo& device, const std::string& type_name,
               const std::string& op_name, std::size_t n, std::vector<BenchRow>& rows, std::ostream& err) {
  using A = acc_t<T, Op>;
  const std::size_t bytes = n * sizeof(T);
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  if (bytes + (std::size_t(1) << 28) > free_bytes) {
    err << format("\nfastreduce: skipping %s n=%zu: needs %.1f GB, %.1f GB free\n", type_name.c_str(), n,
                  bytes / 1e9, free_bytes / 1e9);
    return true;
  }
  // Slices of one allocation, rotated so that consecutive calls read cold data.
  const std::size_t stride = (n + 63) / 64 * 64;  // keep every slice 256-byte aligned
  std::size_t slices = std::max<std::size_t>(1, (3 * device.l2_bytes) / std::max<std::size_t>(bytes, 1));
  slices = std::min<std::size_t>(slices, 4096);
  while (slices > 1 && slices * stride * sizeof(T) > free_bytes / 3) --slices;
  std::vector<Options> mode_options;  // o.modes[m] as fastreduce options
  for (const auto& mode : o.modes) mode_options.push_back({.mode = mode_named(mode)});
  const std::size_t temp_bytes = bench::shared_temp_bytes<T, Op>(n, mode_options);
  bench::DeviceArray<T> arena_memory(slices * stride);
  bench::DeviceArray<A> out_memory(2);
  bench::DeviceArray<unsigned char> temp_memory(temp_bytes);
  bench::DeviceArray<unsigned> counter_memory(1);  // Options::finish_counter (--finish-counter)
  T* const arena = arena_memory.get();
  A* const d_out = out_memory.get();
  void* const temp = temp_memory.get();
  unsigned* const counter = counter_memory.get();
  if (counter != nullptr) cudaMemset(counter, 0, sizeof(unsigned));
  if (arena == nullptr || d_out == nullptr || temp == nullptr || counter == nullptr) {
    err << "\nfastreduce: allocation failed for n = " << n << '\n';
    return false;
  }
  const bench::Distribution data =
      o.data == "wide" ? bench::Distribution::WideExponents : bench::distribution_for(op_name);
  if (cudaError_t e = bench::fill_random(arena, slices * stride, bench::fresh_seed(), data);
      e != cudaSuccess) {
    err << "\nfastreduce: filling the input failed: " << cudaGetErrorString(e) << '\n';
    return false;
  }
  auto slice = [&](int call) { return arena + (std::size_t(call) % slices) * stride; };

  // CUB's result on slice 0: what ours must agree with.
  std::size_t b = temp_bytes;
  bench::cub_reduce<T, Op>(temp, b, arena, d_out + 1, n, 0);
  A cub_value{};
  cudaMemcpy(&cub_value, d_out + 1, sizeof(A), cudaMemcpyDeviceToHost);

  // The contenders, timed together with their batches interleaved (bench::time_back_to_back_interleaved).
  std::vector<std::function<void(int)>> contenders;
  std::vector<int> calls;
  auto add_contender = [&](std::function<void(int)> call, int cap) {
    calls.push_back(bench::calls_per_batch(call, 0, cap));
    contenders.push_back(std::move(call));
  };
  add_contender(
      [&](int i) {
        std::size_t tb = temp_bytes;
        bench::cub_reduce<T, Op>(temp, tb, slice(i), d_out + 1, n, 0);
      },
      1000);
  if (!o.skip_thrust) add_contender([&](int i) { (void)bench::thrust_reduce<T, Op>(slice(i), n, 0); }, 200);

  bool all_agree = true, all_ran = true;
  std::vector<std::string> timed_modes;
  std::vector<bool> agrees;
  // Each mode, and with --finish-counter the same mode with the counter (its bits must be the mode's).
  std::vector<std::pair<std::string, Options>> variants;
  for (std::size_t m = 0; m < o.modes.size(); ++m) {
    variants.emplace_back(o.modes[m], mode_options[m]);
    if (o.finish_counter) {
      Options with_counter = mode_options[m];
      with_counter.finish_counter = counter;
      variants.emplace_back(o.modes[m] + "+counter", with_counter);
    }
  }
  A previous{};  // the mode's result, which its +counter row must equal bit for bit
  for (const auto& variant : variants) {
    const std::string& mode = variant.first;
    const Options opt = variant.second;
    cudaMemset(d_out, 0xA5, sizeof(A));
    std::size_t tb = temp_bytes;
    cudaError_t status = reduce_async<T, Op>(temp, tb, arena, d_out, n, Op{}, 0, opt);
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
    if (status != cudaSuccess) {  // this mode is left out; the others are still timed
      err << "\nfastreduce: reduce_async failed (mode " << mode << "): " << cudaGetErrorString(status) << '\n';
      all_ran = false;
      continue;
    }
    A ours{};
    cudaMemcpy(&ours, d_out, sizeof(A), cudaMemcpyDeviceToHost);
    const bool counted = opt.finish_counter != nullptr;
    const bool same_bits = !counted || std::memcmp(&ours, &previous, sizeof(A)) == 0;
    if (!same_bits) {
      err << format("\nfastreduce: %s %s n=%zu mode %s: %.10g, without the counter %.10g (bits differ)\n",
                    type_name.c_str(), op_name.c_str(), n, mode.c_str(), double(ours), double(previous));
    }
    if (!counted) previous = ours;
    bool agree = true;
    if constexpr (std::is_floating_point_v<A>) {
      // Wide data: CUB's sum is no reference (its rounding errors reach the result's size), and
      // ours is checked by the accuracy report and the tests instead; a max still must agree.
      const bool unchecked = o.data == "wide" && op_name == "sum";
      const double tolerance = (std::is_same_v<A, double> ? 1e-12 : 1e-4) * std::max(1.0, std::fabs(double(cub_value)));
      agree = unchecked || std::fabs(double(ours) - double(cub_value)) <= tolerance;
    } else {
      agree = ours == cub_value;
    }
    if (!agree) {
      err << format("\nfastreduce: %s %s n=%zu mode %s: fastreduce %.10g, CUB %.10g\n", type_name.c_str(),
                    op_name.c_str(), n, mode.c_str(), double(ours), double(cub_value));
    }
    agree = agree && same_bits;
    all_agree = all_agree && agree;
    agrees.push_back(agree);
    timed_modes.push_back(mode);
    add_contender(
        [&, opt](int i) {
          std::size_t tb2 = temp_bytes;
          reduce_async<T, Op>(temp, tb2, slice(i), d_out, n, Op{}, 0, opt);
        },
        1000);
  }
  const auto timings = bench::time_back_to_back_interleaved(contenders, 0, calls,
                                                            {.warmup = 3, .repetitions = o.repetitions});
  auto gbps = [&](double us) { return us > 0 ? bytes / (us * 1e-6) / 1e9 : 0.0; };
  const double cub_us = timings[0].median_us;
  const double thrust_us = o.skip_thrust ? 0.0 : timings[1].median_us;
  const std::size_t first_mode = o.skip_thrust ? 1 : 2;
  for (std::size_t m = 0; m < timed_modes.size(); ++m) {
    const double ours_us = timings[first_mode + m].median_us;
    rows.push_back({type_name, op_name, timed_modes[m], n, ours_us, cub_us, thrust_us, gbps(ours_us), gbps(cub_us),
                    gbps(thrust_us), agrees[m]});
  }
  return all_agree && all_ran;
}

}  // namespace

int run_bench(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  const auto device = bench::current_device();
  if (!device) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  const double copy = bench::measure_copy_gbps();
  std::vector<BenchRow> rows;
  bool ok = true;
  std::size_t done = 0;
  const std::size_t total = o.types.size() * o.ops.size() * o.sizes.size();
  for (const auto& type : o.types) {
    for (const auto& op : o.ops) {
      for (std::size_t n : o.sizes) {
        err << format("\r[bench] %zu/%zu  %s %s n=%zu          ", ++done, total, type.c_str(), op.c_str(), n) << std::flush;
        runtime::with_type(type, [&]<class T>() {
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                        std::is_same_v<T, __nv_bfloat16>) {
            runtime::with_op(op, [&](auto op_tag) {
              using Op = decltype(op_tag);
              if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Max>) {
                ok = bench_one<T, Op>(o, *device, type, op, n, rows, err) && ok;
              }
            });
          }
        });
      }
    }
  }
  err << "\r" << std::string(60, ' ') << "\r";

  Table table({"type", "op", "mode", "n", "fastreduce us", "GB/s", "CUB us", "GB/s", "thrust us", "GB/s", "CUB/fastreduce"});
  for (const auto& r : rows) {
    table.add({r.type, r.op, r.mode, std::to_string(r.n), format("%.2f", r.ours_us), format("%.0f", r.ours_gbps),
               format("%.2f", r.cub_us), format("%.0f", r.cub_gbps), o.skip_thrust ? "-" : format("%.2f", r.thrust_us),
               o.skip_thrust ? "-" : format("%.0f", r.thrust_gbps), format("%.2fx", r.cub_us / r.ours_us)});
  }
  if (!o.plot.empty()) {
    const std::string csv = o.plot + ".csv";
    std::ofstream file(csv);
    file << "# " << device->name << ", copy " << format("%.0f", copy) << " GB/s\n";
    table.print_csv(file);
    file.close();
    const std::string command = std::string("python3 ") + FASTREDUCE_SOURCE_DIR + "/scripts/plot_bench.py \"" + csv +
                                "\" \"" + o.plot + "\"";
    if (std::system(command.c_str()) != 0) err << "fastreduce: plotting failed (is matplotlib installed?)\n";
  }
  if (o.format == "json") {
    nlohmann::json j;
    j["data"] = o.data;
    j["device"] = {{"name", device->name}, {"sms", device->sms}, {"l2_bytes", device->l2_bytes},
                   {"theoretical_gbps", device->theoretical_gbps()}, {"copy_gbps", copy}};
    for (const auto& r : rows) {
      j["rows"].push_back({{"type", r.type}, {"op", r.op}, {"mode", r.mode}, {"n", r.n}, {"fastreduce_us", r.ours_us},
                           {"cub_us", r.cub_us}, {"thrust_us", r.thrust_us}, {"fastreduce_gbps", r.ours_gbps},
                           {"cub_gbps", r.cub_gbps}, {"thrust_gbps", r.thrust_gbps}, {"agree", r.agree}});
    }
    out << j.dump(2) << '\n';
  } else if (o.format == "csv") {
    table.print_csv(out);
  } else {
    out << format("fastreduce bench on %s (%d SMs): per call, back to back, median of %d batches interleaved; inputs rotated "
                  "beyond the %.0f MB L2\ndevice copy %.0f GB/s (read + write), theoretical %.0f GB/s; GB/s = bytes read / time%s\n\n",
                  device->name.c_str(), device->sms, o.repetitions, device->l2_bytes / 1e6, copy,
                  device->theoretical_gbps(),
                  o.data == "wide" ? "\ndata: wide exponents, both signs (sums not compared with CUB's)" : "");
    table.print(out);
  }
  return ok ? 0 : 1;
}

}  // namespace fastreduce::cli
