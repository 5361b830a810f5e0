// `fastreduce ladder`: every rung timed on the same data, printed like the lecture's tables,
// with the seeds' correctness block (CPU reference, GPU result, relative error).
#include <cuda_profiler_api.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "cli/app.hpp"
#include "fastreduce/runtime.hpp"
#include "cli/table.hpp"
#include "data.hpp"
#include "device_info.hpp"
#include "device_memory.hpp"
#include "baselines.hpp"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/ladder.hpp"
#include "reference.hpp"
#include "sm_holder.hpp"
#include "timing.hpp"

namespace fastreduce::cli {

namespace {

// One row of the tables: a rung at one block size, or a reference row.
struct Row {
  std::string id;      // the rung's id, or engine / cub / read-bound
  std::string kernel;  // the rung's kernel name, or what the reference is
  unsigned block;      // threads per block; 0 where the library chooses (engine, cub)
  bool reference;
  double time_us = 0;
  double gbps = 0;
  long double gpu_value = 0;
  double error = 0;  // relative error (floats) or 0/1 mismatch (exact types)
  double bound = 0;  // what the error may be
  bool pass = true;
};

// Something the table times: a rung at one block size, or a reference.
template <class T>
struct Contender {
  std::string id;
  std::string kernel;
  unsigned block;
  bool reference;
  std::size_t bytes;  // read and written, as the lecture counts them
  std::size_t depth;  // longest chain of additions, for the error bound of float sums
  std::function<cudaError_t(const T*, T*, cudaStream_t)> run;
};

// A row run once while `held` SMs are held by another kernel.
struct HeldRow {
  std::string id;
  unsigned block;
  bool finished;        // within the deadline, the holder still holding
  double time_us;       // its events' time when finished, else the time waited
  std::string problem;  // a launch error, if any
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

std::string block_text(unsigned block) { return block == 0 ? "auto" : std::to_string(block); }

// Runs `c` once while `sms` SMs are held, with a one-second deadline.
template <class T>
HeldRow run_while_held(const Contender<T>& c, const T* in, T* out, unsigned sms, cudaStream_t stream) {
  HeldRow row{c.id, c.block, false, 0, ""};
  c.run(in, out, stream);  // warm-up on this stream: modules loaded, workspace sized
  cudaStreamSynchronize(stream);
  bench::SmHolder holder(sms);
  if (!holder.ok()) {
    row.problem = "could not hold the SMs";
    return row;
  }
  cudaEvent_t begin, end;
  cudaEventCreate(&begin);
  cudaEventCreate(&end);
  const auto start = std::chrono::steady_clock::now();
  cudaEventRecord(begin, stream);
  const cudaError_t launched = c.run(in, out, stream);
  cudaEventRecord(end, stream);
  cudaError_t status = cudaErrorNotReady;
  while ((status = cudaEventQuery(end)) == cudaErrorNotReady &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
    std::this_thread::yield();
  }
  row.finished = launched == cudaSuccess && status == cudaSuccess && holder.holding();
  const double waited_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  holder.release();
  cudaStreamSynchronize(stream);
  float ms = 0;
  if (row.finished && cudaEventElapsedTime(&ms, begin, end) == cudaSuccess) row.time_us = ms * 1e3;
  else row.time_us = waited_us;
  if (launched != cudaSuccess) row.problem = cudaGetErrorString(launched);
  cudaGetLastError();
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  return row;
}

template <class T, class Op>
int ladder_typed(const LadderOptions& o, const bench::DeviceInfo& device, double copy_gbps,
                 std::ostream& out, std::ostream& err) {
  const std::size_t n = o.n;
  const std::size_t bytes = n * sizeof(T);
  // Rotate among slices of one allocation so that the timed runs read more than the L2 holds.
  std::size_t slices = bytes == 0 ? 1 : std::max<std::size_t>(1, (3 * device.l2_bytes + bytes - 1) / bytes);
  slices = o.profile_pass ? 1 : std::min<std::size_t>(slices, 64);
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  while (slices > 1 && slices * bytes > free_bytes / 2) --slices;
  if (bytes + (bytes / 64) > free_bytes) {
    err << "fastreduce: " << n << " elements of " << o.type << " need " << bytes / 1e9 << " GB; the GPU has "
        << free_bytes / 1e9 << " GB free\n";
    return 1;
  }
  if (o.hold_sms >= unsigned(device.sms)) {
    err << "fastreduce: --hold-sms " << o.hold_sms << " leaves no SM free; the GPU has " << device.sms << '\n';
    return 2;
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

  // What runs: the selected rungs at each block size, then the reference rows.
  std::vector<unsigned> blocks = {o.block};
  if (o.sweep_blocks) blocks = {32, 64, 128, 256, 512, 1024};
  ladder::Workspace workspace;
  std::vector<Contender<T>> contenders;
  for (const ladder::Rung& r : ladder::rungs()) {
    if (o.rung != "all" && o.rung != r.id) continue;
    for (unsigned block : blocks) {
      const ladder::Limits limits = ladder::device_limits(device.index, block);
      const ladder::Rung* rung = &r;
      contenders.push_back({r.id, r.name, block, false,
                            ladder::bytes_moved(ladder::plan_for(r, n, block, limits), sizeof(T)),
                            ladder::error_depth(r, n, block, limits),
                            [rung, n, block, limits, &workspace](const T* in, T* result, cudaStream_t stream) {
                              return ladder::run<T, Op>(*rung, in, result, n, block, workspace, stream, limits);
                            }});
    }
  }
  const bool all = o.rung == "all";
  // The references' error bound: rung 11's chains (the read-bound kernel's tiles) plus one
  // addition per tile for its atomics.
  const ladder::Limits limits256 = ladder::device_limits(device.index, 256);
  const std::size_t reference_depth = ladder::error_depth(*ladder::find_rung("11"), n, 256, limits256) + n / 4096 + 1;
  std::size_t temp_bytes = 0;
  std::size_t engine_bytes = 0, cub_bytes = 0;
  reduce_async<T, Op>(nullptr, engine_bytes, nullptr, nullptr, n, Op{}, 0);
  if constexpr (std::is_same_v<Op, Sum>) bench::cub_sum<T>(nullptr, cub_bytes, nullptr, nullptr, n, 0);
  temp_bytes = std::max(engine_bytes, cub_bytes);
  bench::DeviceArray<char> temp_memory(temp_bytes);
  char* const temp = temp_memory.get();
  if (all || o.rung == "engine") {
    contenders.push_back({"engine", "fastreduce::reduce", 0, true, bytes, reference_depth,
                          [temp, engine_bytes, n](const T* in, T* result, cudaStream_t stream) {
                            std::size_t b = engine_bytes;
                            return reduce_async<T, Op>(temp, b, in, result, n, Op{}, stream);
                          }});
  }
  if constexpr (std::is_same_v<Op, Sum>) {
    if (all || o.rung == "cub") {
      contenders.push_back({"cub", "cub::DeviceReduce::Sum", 0, true, bytes, reference_depth,
                            [temp, cub_bytes, n](const T* in, T* result, cudaStream_t stream) {
                              std::size_t b = cub_bytes;
                              return bench::cub_sum<T>(temp, b, in, result, n, stream);
                            }});
    }
  }
  if (all || o.rung == "read-bound") {
    contenders.push_back({"read-bound", "one pass, atomics", 256, true, bytes, reference_depth,
                          [n](const T* in, T* result, cudaStream_t stream) {
                            return ladder::read_bound<T, Op>(in, result, n, stream);
                          }});
  }

  if (o.profile_pass) {
    // Nsight Compute (--profile-from-start off) sees the second run only: the first loads the
    // modules and sizes the workspace.
    const Contender<T>& c = contenders.front();
    cudaError_t status = c.run(arena, d_out, 0);
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
    cudaProfilerStart();
    if (status == cudaSuccess) status = c.run(arena, d_out, 0);
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
    cudaProfilerStop();
    if (status != cudaSuccess) {
      err << "fastreduce: " << c.id << " failed: " << cudaGetErrorString(status) << '\n';
      return 1;
    }
    err << "profiled " << c.id << " (block " << block_text(c.block) << "), " << o.type << ' ' << o.op << ", n = " << n << '\n';
    return 0;
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

  std::vector<Row> rows;
  bool all_pass = true;
  std::size_t done = 0;
  for (const Contender<T>& c : contenders) {
    ++done;
    if (o.format == "table") err << format("\r[ladder] %zu/%zu  %-10s block %-5s", done, contenders.size(), c.id.c_str(), block_text(c.block).c_str()) << std::flush;
    // Correctness on slice 0, output poisoned first.
    cudaMemset(d_out, 0xA5, sizeof(T));
    cudaError_t status = c.run(arena, d_out, 0);
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
    if (status != cudaSuccess) {
      err << "\nfastreduce: " << c.id << " failed: " << cudaGetErrorString(status) << '\n';
      return 1;
    }
    T result{};
    cudaMemcpy(&result, d_out, sizeof(T), cudaMemcpyDeviceToHost);
    Row row{c.id, c.kernel, c.block, c.reference};
    row.gpu_value = static_cast<long double>(result);
    if constexpr (std::is_floating_point_v<T> && (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>)) {
      row.error = expected != 0 ? double(std::fabs(row.gpu_value - expected) / std::fabs(expected)) : double(std::fabs(row.gpu_value));
      row.bound = double(c.depth) * std::numeric_limits<T>::epsilon() * double(scale / std::max<long double>(std::fabs(expected), 1e-300L));
      row.pass = std::fabs(row.gpu_value - expected) <= c.depth * std::numeric_limits<T>::epsilon() * scale;
    } else {
      row.pass = static_cast<T>(expected) == result || (std::isnan(double(expected)) && std::isnan(double(result)));
      row.error = row.pass ? 0.0 : 1.0;
    }
    all_pass = all_pass && row.pass;
    const auto timing = bench::time_each(
        [&](int call) { c.run(arena + (std::size_t(call) % slices) * n, d_out, 0); }, 0,
        {.warmup = 3, .repetitions = o.repetitions});
    row.time_us = timing.median_us;
    row.gbps = row.time_us > 0 ? c.bytes / (row.time_us * 1e-6) / 1e9 : 0;
    rows.push_back(row);
  }
  if (o.format == "table") err << "\r" << std::string(50, ' ') << "\r";

  // Rows at the chosen block size (the sweep's rows at --block), references included.
  std::vector<const Row*> main_rows;
  for (const Row& r : rows) if (r.reference || r.block == o.block) main_rows.push_back(&r);

  std::vector<HeldRow> held;
  if (o.hold_sms > 0) {
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    for (const Contender<T>& c : contenders) {
      if (!c.reference && c.block != o.block) continue;
      if (o.format == "table") err << format("\r[ladder] %-10s with %u SMs held", c.id.c_str(), o.hold_sms) << std::flush;
      held.push_back(run_while_held(c, arena, d_out, o.hold_sms, stream));
    }
    cudaStreamDestroy(stream);
    if (o.format == "table") err << "\r" << std::string(50, ' ') << "\r";
  }

  const double peak = device.theoretical_gbps();
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
      j["rows"].push_back({{"rung", r.id}, {"kernel", r.kernel}, {"block", r.block}, {"reference", r.reference},
                           {"time_us", r.time_us}, {"gbps", r.gbps}, {"pct_peak", 100 * r.gbps / peak},
                           {"pct_copy", copy_gbps > 0 ? 100 * r.gbps / copy_gbps : 0.0},
                           {"gpu_result", double(r.gpu_value)}, {"rel_error", r.error}, {"pass", r.pass}});
    }
    if (!held.empty()) {
      j["held_sms"] = o.hold_sms;
      for (const HeldRow& h : held) {
        j["held"].push_back({{"rung", h.id}, {"block", h.block}, {"finished", h.finished}, {"time_us", h.time_us},
                             {"problem", h.problem}});
      }
    }
    out << j.dump(2) << '\n';
    return all_pass ? 0 : 1;
  }

  Table table({"rung", "kernel", "block", "time (us)", "GB/s", "% peak", "% copy", "step", "cumulative"});
  const Row* previous = nullptr;
  for (const Row* r : main_rows) {
    const bool step = previous != nullptr && !r->reference;
    table.add({r->id, r->kernel, block_text(r->block), format("%.1f", r->time_us),
               format("%.1f", r->gbps), format("%.1f", 100 * r->gbps / peak),
               format("%.1f", copy_gbps > 0 ? 100 * r->gbps / copy_gbps : 0.0),
               step ? format("%.2fx", previous->time_us / r->time_us) : "-",
               format("%.2fx", first_time / r->time_us)});
    if (!r->reference) previous = r;
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
  out << "Reference rows (engine, cub, read-bound) count the input bytes only; cub runs for sum only.\n";

  if (o.sweep_blocks) {
    out << "\nBlock-size sweep: time (us) / GB/s\n";
    std::vector<std::string> ids;
    for (const Contender<T>& c : contenders) {
      if (!c.reference && (ids.empty() || ids.back() != c.id)) ids.push_back(c.id);
    }
    std::vector<std::string> header{"block"};
    for (const std::string& id : ids) header.push_back("rung " + id);
    Table sweep(header);
    for (unsigned block : blocks) {
      std::vector<std::string> line{std::to_string(block)};
      for (const std::string& id : ids) {
        for (const Row& r : rows) {
          if (!r.reference && r.id == id && r.block == block) line.push_back(format("%.1f / %.0f", r.time_us, r.gbps));
        }
      }
      sweep.add(line);
    }
    sweep.print(out);
    out << "\nBest block per rung:";
    for (const std::string& id : ids) {
      const Row* best = nullptr;
      for (const Row& r : rows) if (!r.reference && r.id == id && (!best || r.time_us < best->time_us)) best = &r;
      out << format(" %s:%u", id.c_str(), best->block);
    }
    out << '\n';
  }

  if (!held.empty()) {
    out << format("\nWith %u of %d SMs held by another kernel (one run each, 1 s deadline):\n", o.hold_sms, device.sms);
    Table t({"rung", "block", "alone (us)", "while held (us)", "outcome"});
    for (const HeldRow& h : held) {
      double alone = 0;
      for (const Row* r : main_rows) if (r->id == h.id) alone = r->time_us;
      t.add({h.id, block_text(h.block), format("%.1f", alone), h.finished ? format("%.1f", h.time_us) : "-",
             h.finished ? "finished on the free SMs"
                        : (h.problem.empty() ? format("not finished after %.0f ms: waits for the held SMs", h.time_us / 1e3)
                                             : "launch failed: " + h.problem)});
    }
    t.print(out);
  }

  out << format("\nCorrectness (%s %s, n = %zu, seed 0x%016llx)\n", o.type.c_str(), o.op.c_str(), n,
                static_cast<unsigned long long>(seed));
  out << format("  CPU %-4s : %s  (%s, %.1f ms)\n", o.op.c_str(), show<T>(expected).c_str(),
                std::is_floating_point_v<T> && std::is_same_v<Op, Sum> ? "compensated, long double" : "exact",
                cpu_ms);
  Table check({"rung", "block", "GPU result", "rel. error", "bound", "GPU time (us)", "check"});
  for (const Row& r : rows) {
    check.add({r.id, block_text(r.block), show<T>(r.gpu_value), format("%.2e", r.error),
               format("%.2e", r.bound), format("%.1f", r.time_us), r.pass ? "✅ pass" : "❌ FAIL"});
  }
  check.print(out);
  out << (all_pass ? "\nAll rows match the CPU reference ✅\n" : "\nSome rows do NOT match the CPU reference ❌\n");
  return all_pass ? 0 : 1;
}

}  // namespace

int run_ladder(const LadderOptions& o, std::ostream& out, std::ostream& err) {
  const auto device = bench::current_device();
  if (!device) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  const double copy = o.profile_pass ? 0.0 : bench::measure_copy_gbps();
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
