// `fastreduce ladder`: every rung timed on the same data, printed like the lecture's tables,
// with the seeds' correctness block (CPU reference, GPU result, relative error).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "cli/app.hpp"
#include "fastreduce/runtime.hpp"
#include "cli/table.hpp"
#include "data.hpp"
#include "device_info.hpp"
#include "device_memory.hpp"
#include "fastreduce/ladder.hpp"
#include "reference.hpp"
#include "timing.hpp"

namespace fastreduce::cli {

namespace {

struct Row {
  const ladder::Rung* rung;
  unsigned block;
  double time_us;
  double gbps;
  long double gpu_value;
  double error;      // relative error (floats) or 0/1 mismatch (exact types)
  double bound;      // what the error may be
  bool pass;
};

template <class T>
constexpr bool is_ladder_type = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
                                std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
                                std::is_same_v<T, double>;

template <class T>
std::string show(long double v) {
  if constexpr (std::is_integral_v<T>) return std::to_string(static_cast<T>(v));
  else return format("%.9Lg", v);
}

template <class T, class Op>
int ladder_typed(const LadderOptions& o, const bench::DeviceInfo& device, double copy_gbps,
                 std::ostream& out, std::ostream& err) {
  const std::size_t n = o.n;
  const std::size_t bytes = n * sizeof(T);
  // Rotate among slices of one allocation so that the timed runs read more than the L2 holds.
  std::size_t slices = bytes == 0 ? 1 : std::max<std::size_t>(1, (3 * device.l2_bytes + bytes - 1) / bytes);
  slices = std::min<std::size_t>(slices, 64);
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  while (slices > 1 && slices * bytes > free_bytes / 2) --slices;
  if (bytes + (bytes / 64) > free_bytes) {
    err << "fastreduce: " << n << " elements of " << o.type << " need " << bytes / 1e9 << " GB; the GPU has "
        << free_bytes / 1e9 << " GB free\n";
    return 1;
  }
  bench::DeviceArray<T> arena_memory(slices * n);
  bench::DeviceArray<T> out_memory(1);
  T* const arena = arena_memory.get();
  T* const d_out = out_memory.get();
  if (arena == nullptr || d_out == nullptr) {
    err << "fastreduce: cannot allocate " << slices * bytes / 1e9 << " GB on the GPU\n";
    return 1;
  }
  const std::uint64_t seed = o.seed != 0 ? o.seed : bench::fresh_seed();
  if (cudaError_t e = bench::fill_random(arena, slices * n, seed, bench::distribution_for(o.op), o.op == "and");
      e != cudaSuccess) {
    err << "fastreduce: filling the input failed: " << cudaGetErrorString(e) << '\n';
    return 1;
  }

  // CPU reference on slice 0 (compensated for floating-point sums).
  const std::vector<T> host = bench::to_host(arena, n);
  const auto cpu_start = std::chrono::steady_clock::now();
  long double expected = 0;
  if constexpr (std::is_floating_point_v<T> && std::is_same_v<Op, Sum>) expected = reference::compensated_sum(host.data(), n);
  else expected = static_cast<long double>(reference::reduce(host.data(), n, Op{}));
  const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - cpu_start).count();
  long double scale = std::fabs(expected);
  if constexpr (std::is_floating_point_v<T> && std::is_same_v<Op, Sum>) scale = reference::absolute_sum(host.data(), n);

  std::vector<const ladder::Rung*> selected;
  for (const ladder::Rung& r : ladder::rungs()) {
    if (o.rung == "all" || o.rung == r.id) selected.push_back(&r);
  }
  std::vector<unsigned> blocks = {o.block};
  if (o.sweep_blocks) blocks = {32, 64, 128, 256, 512, 1024};

  ladder::Workspace workspace;
  std::vector<Row> rows;
  std::size_t done = 0;
  const std::size_t total = selected.size() * blocks.size();
  bool all_pass = true;
  for (const ladder::Rung* rung : selected) {
    for (unsigned block : blocks) {
      ++done;
      if (o.format == "table") err << format("\r[ladder] %zu/%zu  rung %-5s block %-5u", done, total, rung->id, block) << std::flush;
      const ladder::Limits limits = ladder::device_limits(device.index, block);
      // Correctness on slice 0, output poisoned first.
      cudaMemset(d_out, 0xA5, sizeof(T));
      cudaError_t status = ladder::run<T, Op>(*rung, arena, d_out, n, block, workspace, 0, limits);
      if (status == cudaSuccess) status = cudaDeviceSynchronize();
      if (status != cudaSuccess) {
        err << "\nfastreduce: rung " << rung->id << " failed: " << cudaGetErrorString(status) << '\n';
        return 1;
      }
      T result{};
      cudaMemcpy(&result, d_out, sizeof(T), cudaMemcpyDeviceToHost);
      Row row{rung, block, 0, 0, static_cast<long double>(result), 0, 0, true};
      if constexpr (std::is_floating_point_v<T> && (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>)) {
        const std::size_t depth = ladder::error_depth(*rung, n, block, limits);
        row.error = expected != 0 ? double(std::fabs(row.gpu_value - expected) / std::fabs(expected)) : double(std::fabs(row.gpu_value));
        row.bound = double(depth) * std::numeric_limits<T>::epsilon() * double(scale / std::max<long double>(std::fabs(expected), 1e-300L));
        row.pass = std::fabs(row.gpu_value - expected) <= depth * std::numeric_limits<T>::epsilon() * scale;
      } else {
        row.pass = static_cast<T>(expected) == result || (std::isnan(double(expected)) && std::isnan(double(result)));
        row.error = row.pass ? 0.0 : 1.0;
      }
      all_pass = all_pass && row.pass;
      const auto timing = bench::time_each(
          [&](int call) {
            ladder::run<T, Op>(*rung, arena + (std::size_t(call) % slices) * n, d_out, n, block, workspace, 0, limits);
          },
          0, {.warmup = 3, .repetitions = o.repetitions});
      row.time_us = timing.median_us;
      const std::size_t moved = ladder::bytes_moved(ladder::plan_for(*rung, n, block, limits), sizeof(T));
      row.gbps = row.time_us > 0 ? moved / (row.time_us * 1e-6) / 1e9 : 0;
      rows.push_back(row);
    }
  }
  if (o.format == "table") err << "\r" << std::string(50, ' ') << "\r";

  // The main table: rows at the chosen block size (the sweep's rows at --block).
  const double peak = device.theoretical_gbps();
  std::vector<const Row*> main_rows;
  for (const Row& r : rows) if (r.block == o.block) main_rows.push_back(&r);
  const double first_time = main_rows.empty() ? 0 : main_rows.front()->time_us;

  if (o.format == "json") {
    nlohmann::json j;
    j["device"] = {{"name", device.name}, {"sms", device.sms}, {"l2_bytes", device.l2_bytes},
                   {"theoretical_gbps", peak}, {"copy_gbps", copy_gbps}};
    j["n"] = n;
    j["type"] = o.type;
    j["op"] = o.op;
    j["seed"] = seed;
    j["cpu_reference"] = double(expected);
    j["cpu_ms"] = cpu_ms;
    for (const Row& r : rows) {
      j["rows"].push_back({{"rung", r.rung->id}, {"kernel", r.rung->name}, {"block", r.block},
                           {"time_us", r.time_us}, {"gbps", r.gbps}, {"pct_peak", 100 * r.gbps / peak},
                           {"pct_copy", copy_gbps > 0 ? 100 * r.gbps / copy_gbps : 0.0},
                           {"gpu_result", double(r.gpu_value)}, {"rel_error", r.error}, {"pass", r.pass}});
    }
    out << j.dump(2) << '\n';
    return all_pass ? 0 : 1;
  }

  Table table({"rung", "kernel", "block", "time (us)", "GB/s", "% peak", "% copy", "step", "cumulative"});
  const Row* previous = nullptr;
  for (const Row* r : main_rows) {
    table.add({r->rung->id, r->rung->name, std::to_string(r->block), format("%.1f", r->time_us),
               format("%.1f", r->gbps), format("%.1f", 100 * r->gbps / peak),
               format("%.1f", copy_gbps > 0 ? 100 * r->gbps / copy_gbps : 0.0),
               previous ? format("%.2fx", previous->time_us / r->time_us) : "-",
               format("%.2fx", first_time / r->time_us)});
    previous = r;
  }
  if (o.format == "csv") {
    table.print_csv(out);
    return all_pass ? 0 : 1;
  }

  out << format("fastreduce ladder: %s %s, n = %zu (%.1f MB), block %u, median of %d runs\n", o.type.c_str(),
                o.op.c_str(), n, bytes / 1e6, o.block, o.repetitions);
  out << format("GPU: %s, %d SMs, L2 %.0f MB; theoretical %.0f GB/s, device copy %.0f GB/s (read + write)\n\n",
                device.name.c_str(), device.sms, device.l2_bytes / 1e6, peak, copy_gbps);
  table.print(out);

  if (o.sweep_blocks) {
    out << "\nBlock-size sweep: time (us) / GB/s\n";
    std::vector<std::string> header{"block"};
    for (const ladder::Rung* rung : selected) header.push_back(std::string("rung ") + rung->id);
    Table sweep(header);
    for (unsigned block : blocks) {
      std::vector<std::string> line{std::to_string(block)};
      for (const ladder::Rung* rung : selected) {
        for (const Row& r : rows) {
          if (r.rung == rung && r.block == block) line.push_back(format("%.1f / %.0f", r.time_us, r.gbps));
        }
      }
      sweep.add(line);
    }
    sweep.print(out);
    out << "\nBest block per rung:";
    for (const ladder::Rung* rung : selected) {
      const Row* best = nullptr;
      for (const Row& r : rows) if (r.rung == rung && (!best || r.time_us < best->time_us)) best = &r;
      out << format(" %s:%u", rung->id, best->block);
    }
    out << '\n';
  }

  out << format("\nCorrectness (%s %s, n = %zu, seed 0x%016llx)\n", o.type.c_str(), o.op.c_str(), n,
                static_cast<unsigned long long>(seed));
  out << format("  CPU %-4s : %s  (%s, %.1f ms)\n", o.op.c_str(), show<T>(expected).c_str(),
                std::is_floating_point_v<T> && std::is_same_v<Op, Sum> ? "compensated, long double" : "exact",
                cpu_ms);
  Table check({"rung", "block", "GPU result", "rel. error", "bound", "GPU time (us)", "check"});
  for (const Row& r : rows) {
    check.add({r.rung->id, std::to_string(r.block), show<T>(r.gpu_value), format("%.2e", r.error),
               format("%.2e", r.bound), format("%.1f", r.time_us), r.pass ? "✅ pass" : "❌ FAIL"});
  }
  check.print(out);
  out << (all_pass ? "\nAll rungs match the CPU reference ✅\n" : "\nSome rungs do NOT match the CPU reference ❌\n");
  return all_pass ? 0 : 1;
}

}  // namespace

int run_ladder(const LadderOptions& o, std::ostream& out, std::ostream& err) {
  const auto device = bench::current_device();
  if (!device) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  const double copy = bench::measure_copy_gbps();
  int code = 1;
  runtime::with_type(o.type, [&]<class T>() {
    if constexpr (is_ladder_type<T>) {
      runtime::with_op(o.op, [&](auto op) {
        using Op = decltype(op);
        if constexpr (op_applies_to<T, Op> && !std::is_same_v<Op, BitXor>) {
          code = ladder_typed<T, Op>(o, *device, copy, out, err);
        }
      });
    }
  });
  return code;
}

}  // namespace fastreduce::cli
