// `fastreduce bench-axis`: axis and segmented reductions over the shapes of one table, fastreduce
// beside cub::DeviceSegmentedReduce (rows and segments; CUB has no strided or column form) and
// beside fastreduce's own 1-D Sum of the same elements, in the same run. Every op of the family
// takes the same shapes (--ops sum,max,argmax,argmin,mean,var,std,norm1,norm2,norminf,dot,sumsq:
// the built-ins through the library, the others through fastreduce/stats.cuh, `sumsq` a user's
// transform of x into x * x summed), and each row says how its GB/s compares with Sum's on the
// same shape. Each shape's contenders are timed back to back with their batches interleaved,
// inputs rotated beyond the L2. GB/s counts the bytes read and written (a short reduced axis
// writes as much as it reads; dot reads two inputs).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include "baselines.hpp"
#include "cli/app.hpp"
#include "cli/table.hpp"
#include "data.hpp"
#include "device_info.hpp"
#include "device_memory.hpp"
#include "fastreduce/detail/describe.hpp"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/runtime.hpp"
#include "fastreduce/stats.cuh"
#include "timing.hpp"

#ifndef FASTREDUCE_SOURCE_DIR
#define FASTREDUCE_SOURCE_DIR "."
#endif

namespace fastreduce::cli {

namespace {

// The most input slices a shape rotates through (each call reads the next).
constexpr std::size_t kMaxSlices = 4096;

struct AxisRow {
  std::string type, op, mode, axis, path;
  std::size_t total = 0, length = 0, outputs = 0;
  double ours_us = 0, cub_us = 0, flat_us = 0;  // cub_us 0: no CUB form
  double bytes = 0;                             // read + written by this shape
  double flat_bytes = 0;                        // read by the 1-D reduction of the same elements
  bool agree = true;
};

// A user's transform-reduce: the sum of squares, in float.
struct SquareOf {
  template <class T>
  __host__ __device__ float operator()(const T& x) const {
    const float v = static_cast<float>(x);
    return v * v;
  }
};

// The ops of `--ops`, by name: f(Op{}) with the op's object.
template <class F>
bool with_family_op(std::string_view name, F&& f) {
  if (name == "argmax") f(ArgMax{});
  else if (name == "argmin") f(ArgMin{});
  else if (name == "mean") f(Mean{});
  else if (name == "var") f(Var{1});
  else if (name == "std") f(Std{1});
  else if (name == "norm1") f(NormL1{});
  else if (name == "norm2") f(NormL2{});
  else if (name == "norminf") f(NormInf{});
  else if (name == "dot") f(Dot{});
  else if (name == "sumsq") f(transformed(SquareOf{}, Sum{}));
  else return runtime::with_op(name, f);
  return true;
}

template <class T, class Op>
constexpr bool kTwoInputs = std::is_same_v<Op, Dot>;
// The op applies to T (the arg-extremes need an arithmetic type).
template <class T, class Op>
constexpr bool applies() {
  if constexpr (reducible<T, Op>) return true;
  else if constexpr (kTwoInputs<T, Op>) return header_op2<T, T, Op>;
  else return header_op<T, Op>;
}

// What an op writes per output.
template <class T, class Op, int Kind = reducible<T, Op> ? 0 : kTwoInputs<T, Op> ? 2 : 1>
struct OutputOf {
  using type = acc_t<T, Op>;
};
template <class T, class Op>
struct OutputOf<T, Op, 1> {
  using type = result_t<T, Op>;
};
template <class T, class Op>
struct OutputOf<T, Op, 2> {
  using type = result2_t<T, T, Op>;
};
template <class T, class Op>
using output_t = typename OutputOf<T, Op>::type;

// One call of the op over the shape (y: the second input of dot).
template <class T, class Op>
cudaError_t axis_call(void* temp, std::size_t& bytes, const T* x, const T* y, output_t<T, Op>* out, const Axis& axis,
                      const std::int64_t* offsets, std::size_t segments, const Op& op, const Options& opt) {
  if constexpr (kTwoInputs<T, Op>) {
    if (offsets != nullptr) return reduce_segments_async(temp, bytes, x, y, out, segments, offsets, offsets + 1, op, 0, opt);
    return reduce_axis_async(temp, bytes, x, y, out, axis, op, 0, opt);
  } else {
    (void)y;
    if (offsets != nullptr) return reduce_segments_async(temp, bytes, x, out, segments, offsets, offsets + 1, op, 0, opt);
    return reduce_axis_async(temp, bytes, x, out, axis, op, 0, opt);
  }
}

// The path an axis reduction takes.
template <class T, class Op>
std::string axis_path(const T* x, const T* y, const Axis& axis, const Op& op, const Options& opt) {
  engine::AxisPlan plan{};
  if constexpr (reducible<T, Op>) {
    engine::describe_axis<storage_t<T>, Op>(reinterpret_cast<const storage_t<T>*>(x), axis, opt, plan);
  } else if constexpr (kTwoInputs<T, Op>) {
    using R = reduction2_t<T, T, Op>;
    engine::describe_axis_reduction<R>({x, y}, axis, opt, plan);
  } else {
    (void)y;
    (void)op;
    engine::describe_axis_reduction<reduction_t<T, Op>>({x}, axis, opt, plan);
  }
  return engine::axis_path_name(plan.path);
}


// Offsets of `total` elements cut into consecutive segments: equal rows, or lengths drawn from a
// power law between 0 and 2^20 (log-uniform), in a fixed sequence.
std::vector<std::int64_t> row_offsets(std::size_t total, std::size_t length) {
  std::vector<std::int64_t> offsets(total / length + 1);
  for (std::size_t r = 0; r < offsets.size(); ++r) offsets[r] = std::int64_t(r * length);
  return offsets;
}
std::vector<std::int64_t> power_law_offsets(std::size_t total) {
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> exponent(0.0, 20.0);
  std::vector<std::int64_t> offsets{0};
  std::size_t at = 0;
  while (at < total) {
    const std::size_t length = std::min(total - at, static_cast<std::size_t>(std::exp2(exponent(rng))) - 1);
    at += length;
    offsets.push_back(std::int64_t(at));
  }
  return offsets;
}

struct Shape {
  std::string axis;  // rows, columns, segments
  std::size_t length = 0;
  Axis ax{};
  const std::int64_t* d_offsets = nullptr;  // rows and segments: outputs + 1 offsets
  std::size_t outputs = 0;
  const std::int64_t* h_offsets = nullptr;  // d_offsets' host copy
};

template <class T, class Op>
bool bench_shape(const BenchAxisOptions& o, const bench::DeviceInfo& device, const std::string& type_name,
                 const std::string& op_name, const Op& op, std::size_t total, const Shape& shape, double flat_us,
                 std::vector<AxisRow>& rows, std::ostream& err) {
  using A = output_t<T, Op>;
  constexpr bool kTwo = kTwoInputs<T, Op>;
  const std::size_t in_bytes = total * sizeof(T);
  std::size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  const std::size_t out_bytes = shape.outputs * sizeof(A);
  // Slices rotated beyond the L2 (dot reads slice i and i + 1: two at least). Up to 4096 of
  // them, as bench --ops: small totals need hundreds to leave the L2 (a cap of 64 kept totals
  // under about 2 MB in it).
  std::size_t slices =
      std::clamp<std::size_t>(3 * device.l2_bytes / std::max<std::size_t>(in_bytes, 1), kTwo ? 2 : 1, kMaxSlices);
  while (slices > (kTwo ? 2u : 1u) && slices * in_bytes + 2 * out_bytes > free_bytes / 2) --slices;
  if (slices * in_bytes + 2 * out_bytes + (std::size_t(1) << 28) > free_bytes) {
    err << format("\nfastreduce: skipping %s %s total=%zu: not enough device memory\n", op_name.c_str(), shape.axis.c_str(),
                  total);
    return true;
  }
  bench::DeviceArray<T> arena(slices * total);
  bench::DeviceArray<A> out(shape.outputs), cub_out(shape.outputs);
  if (arena.get() == nullptr || out.get() == nullptr || cub_out.get() == nullptr) {
    err << "\nfastreduce: allocation failed\n";
    return false;
  }
  if (bench::fill_random(arena.get(), slices * total, bench::fresh_seed(), bench::distribution_for(op_name)) !=
      cudaSuccess) {
    return false;
  }
  auto slice = [&](int call) { return arena.get() + (std::size_t(call) % slices) * total; };
  auto second = [&](int call) { return arena.get() + ((std::size_t(call) + 1) % slices) * total; };
  const std::int64_t* offsets = shape.axis == "segments" ? shape.d_offsets : nullptr;
  constexpr bool kCubOp = std::is_same_v<Op, Sum> || std::is_same_v<Op, Max>;
  const bool has_cub = kCubOp && shape.axis != "columns";
  std::size_t temp_bytes = 16;
  for (const auto& mode : o.modes) {
    const Options opt{.mode = mode_named(mode)};
    std::size_t b = 0;
    const cudaError_t e = axis_call<T>(nullptr, b, arena.get(), second(0), out.get(), shape.ax, offsets, shape.outputs, op, opt);
    if (e == cudaErrorNotSupported) continue;  // the op has no such mode (skipped below)
    if (e != cudaSuccess) return false;
    temp_bytes = std::max(temp_bytes, b);
  }
  if constexpr (kCubOp) {
    if (has_cub) {
      std::size_t b = 0;
      bench::cub_segmented_reduce<T, Op>(nullptr, b, arena.get(), cub_out.get(), shape.outputs, shape.d_offsets,
                                         shape.d_offsets + 1, 0);
      temp_bytes = std::max(temp_bytes, b);
    }
  }
  bench::DeviceArray<unsigned char> temp(temp_bytes);
  if (temp.get() == nullptr) return false;
  auto cub_call = [&](int i) {
    if constexpr (kCubOp) {
      std::size_t b = temp_bytes;
      bench::cub_segmented_reduce<T, Op>(temp.get(), b, slice(i), cub_out.get(), shape.outputs, shape.d_offsets,
                                         shape.d_offsets + 1, 0);
    }
  };
  bool ok = true;
  for (const auto& mode : o.modes) {
    const Options opt{.mode = mode_named(mode)};
    std::size_t probe = temp_bytes;
    if (axis_call<T>(nullptr, probe, arena.get(), second(0), out.get(), shape.ax, offsets, shape.outputs, op, opt) ==
        cudaErrorNotSupported) {
      continue;
    }
    auto ours = [&, opt](int i) {
      std::size_t b = temp_bytes;
      axis_call<T>(temp.get(), b, slice(i), second(i), out.get(), shape.ax, offsets, shape.outputs, op, opt);
    };
    std::vector<std::function<void(int)>> contenders{ours};
    if (has_cub) contenders.push_back(cub_call);
    std::vector<int> calls;
    for (const auto& c : contenders) calls.push_back(bench::calls_per_batch(c, 0, 1000));
    // Agreement with CUB on slice 0, where CUB has the shape.
    bool agree = true;
    if constexpr (kCubOp) {
      if (has_cub) {
        ours(0);
        cub_call(0);
        if (cudaDeviceSynchronize() != cudaSuccess) return false;
        const auto a = bench::to_host(out.get(), shape.outputs);
        const auto c = bench::to_host(cub_out.get(), shape.outputs);
        for (std::size_t q = 0; q < shape.outputs; q += std::max<std::size_t>(1, shape.outputs / 1000)) {
          // An empty segment: the op's identity here (-inf for Max), CUB's initial value there
          // (the lowest finite value); the GPU tests hold ours.
          if (shape.h_offsets != nullptr && shape.h_offsets[q + 1] == shape.h_offsets[q]) continue;
          const double x = double(a[q]), y = double(c[q]);
          if (!(std::fabs(x - y) <= 1e-3 * std::max(1.0, std::fabs(y)))) {
            err << format("\nfastreduce: %s %s %s length=%zu output %zu: fastreduce %.8g, CUB %.8g\n", type_name.c_str(),
                          op_name.c_str(), shape.axis.c_str(), shape.length, q, x, y);
            agree = false;
            break;
          }
        }
      }
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return false;
    const auto timings = bench::time_back_to_back_interleaved(contenders, 0, calls, {.warmup = 3, .repetitions = o.repetitions});
    if (cudaGetLastError() != cudaSuccess) return false;
    const std::string path = shape.axis == "segments" ? "segments" : axis_path<T>(arena.get(), second(0), shape.ax, op, opt);
    AxisRow row{type_name, op_name, mode, shape.axis, path, total, shape.length, shape.outputs};
    row.ours_us = timings[0].median_us;
    row.cub_us = has_cub && mode == "fast" ? timings[1].median_us : 0.0;
    row.flat_us = flat_us;
    row.bytes = double((kTwo ? 2 : 1) * in_bytes + out_bytes);
    row.flat_bytes = double(in_bytes);
    row.agree = agree;
    rows.push_back(row);
    ok = ok && agree;
  }
  return ok;
}

// The 1-D reduction of `total` elements: the bandwidth every shape is measured against.
template <class T, class Op>
double time_flat(const bench::DeviceInfo& device, std::size_t total, int repetitions) {
  using A = acc_t<T, Op>;
  const std::size_t bytes = total * sizeof(T);
  const std::size_t slices = std::clamp<std::size_t>(3 * device.l2_bytes / std::max<std::size_t>(bytes, 1), 1, kMaxSlices);
  bench::DeviceArray<T> arena(slices * total);
  bench::DeviceArray<A> out(1);
  std::size_t temp_bytes = 0;
  reduce_async<T, Op>(nullptr, temp_bytes, arena.get(), out.get(), total);
  bench::DeviceArray<unsigned char> temp(temp_bytes);
  if (arena.get() == nullptr || temp.get() == nullptr) return 0;
  bench::fill_random(arena.get(), slices * total, bench::fresh_seed(), bench::Distribution::Positive);
  auto call = [&](int i) {
    std::size_t b = temp_bytes;
    reduce_async<T, Op>(temp.get(), b, arena.get() + (std::size_t(i) % slices) * total, out.get(), total);
  };
  const std::vector<std::function<void(int)>> contenders{call};
  const std::vector<int> calls{bench::calls_per_batch(call, 0, 1000)};
  return bench::time_back_to_back_interleaved(contenders, 0, calls, {.warmup = 3, .repetitions = repetitions})[0]
      .median_us;
}

}  // namespace

int run_bench_axis(const BenchAxisOptions& o, std::ostream& out, std::ostream& err) {
  const auto device = bench::current_device();
  if (!device) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  std::vector<AxisRow> rows;
  bool ok = true;
  std::map<std::string, double> flat_us;  // per type, op and total
  for (std::size_t total : o.totals) {
    std::vector<std::size_t> lengths = o.lengths.empty() ? default_axis_lengths(total) : o.lengths;
    std::erase_if(lengths, [&](std::size_t l) { return l > total || total % l != 0; });
    std::vector<Shape> shapes;
    for (const auto& axis : o.axes) {
      if (axis == "segments") {
        shapes.push_back({axis, 0, {}, nullptr, 0});
        continue;
      }
      for (std::size_t length : lengths) {
        Shape s{axis, length, {}, nullptr, total / length};
        s.ax = axis == "rows" ? Axis{.outer = total / length, .length = length} : Axis{.length = length, .inner = total / length};
        shapes.push_back(s);
      }
    }
    std::size_t done = 0;
    for (Shape& shape : shapes) {
      // Offsets for CUB (rows) and for segments, made once per shape.
      std::vector<std::int64_t> offsets;
      if (shape.axis == "rows") offsets = row_offsets(total, shape.length);
      if (shape.axis == "segments") {
        offsets = power_law_offsets(total);
        shape.outputs = offsets.size() - 1;
      }
      bench::DeviceArray<std::int64_t> d_offsets(offsets.size());
      if (!offsets.empty()) {
        if (d_offsets.get() == nullptr) {
          err << "\nfastreduce: allocation failed (offsets)\n";
          return 1;
        }
        cudaMemcpy(d_offsets.get(), offsets.data(), offsets.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice);
        shape.d_offsets = d_offsets.get();
        shape.h_offsets = offsets.data();
      }
      ++done;
      for (const auto& type : o.types) {
        for (const auto& op : o.ops) {
          err << format("\r[bench-axis] total %zu: shape %zu/%zu  %s length %zu, %s %s          ", total, done,
                        shapes.size(), shape.axis.c_str(), shape.length, type.c_str(), op.c_str())
              << std::flush;
          runtime::with_type(type, [&]<class T>() {
            if constexpr (std::is_same_v<T, float> || std::is_same_v<T, __nv_bfloat16>) {
              with_family_op(op, [&](auto op_object) {
                using Op = decltype(op_object);
                if constexpr (applies<T, Op>()) {
                  // Every shape's 1-D reference: the Sum of the same elements (Max for max).
                  using Flat = std::conditional_t<std::is_same_v<Op, Max>, Max, Sum>;
                  const std::string key = type + " " + Flat::name + " " + std::to_string(total);
                  if (!flat_us.count(key)) flat_us[key] = time_flat<T, Flat>(*device, total, o.repetitions);
                  ok = bench_shape<T, Op>(o, *device, type, op, op_object, total, shape, flat_us[key], rows, err) && ok;
                }
              });
            }
          });
        }
      }
    }
  }
  err << "\r" << std::string(90, ' ') << "\r";

  auto gbps = [](double bytes, double us) { return us > 0 ? bytes / (us * 1e-6) / 1e9 : 0.0; };
  // Each row against Sum on the same shape, type and mode (when --ops has sum).
  auto shape_key = [](const AxisRow& r) {
    return r.type + " " + r.mode + " " + r.axis + " " + std::to_string(r.total) + " " + std::to_string(r.length);
  };
  std::map<std::string, double> sum_gbps;
  for (const auto& r : rows) {
    if (r.op == "sum") sum_gbps[shape_key(r)] = gbps(r.bytes, r.ours_us);
  }
  auto of_sum = [&](const AxisRow& r) {
    const auto it = sum_gbps.find(shape_key(r));
    return it == sum_gbps.end() ? 0.0 : gbps(r.bytes, r.ours_us) / std::max(it->second, 1e-9);
  };
  Table table({"type", "op", "mode", "axis", "total", "length", "outputs", "path", "fastreduce us", "GB/s", "1-D GB/s",
               "of 1-D", "of sum", "CUB us", "CUB GB/s", "CUB/fastreduce"});
  for (const auto& r : rows) {
    const double ours = gbps(r.bytes, r.ours_us), flat = gbps(r.flat_bytes, r.flat_us);
    table.add({r.type, r.op, r.mode, r.axis, std::to_string(r.total), r.axis == "segments" ? "power law" : std::to_string(r.length),
               std::to_string(r.outputs), r.path, format("%.2f", r.ours_us), format("%.0f", ours), format("%.0f", flat),
               format("%.0f%%", 100.0 * ours / std::max(flat, 1e-9)), of_sum(r) > 0 ? format("%.0f%%", 100.0 * of_sum(r)) : "-",
               r.cub_us > 0 ? format("%.2f", r.cub_us) : "-", r.cub_us > 0 ? format("%.0f", gbps(r.bytes, r.cub_us)) : "-",
               r.cub_us > 0 ? format("%.2fx", r.cub_us / r.ours_us) : "-"});
  }
  if (!o.plot.empty()) {
    const std::string csv = o.plot + ".csv";
    std::ofstream file(csv);
    file << "# " << device->name << "\n";
    table.print_csv(file);
    file.close();
    const std::string command = std::string("python3 ") + FASTREDUCE_SOURCE_DIR + "/scripts/plot_axis.py \"" + csv +
                                "\" \"" + o.plot + "\"";
    if (std::system(command.c_str()) != 0) err << "fastreduce: plotting failed (is matplotlib installed?)\n";
  }
  if (o.format == "json") {
    nlohmann::json j;
    j["device"] = {{"name", device->name}, {"sms", device->sms}, {"theoretical_gbps", device->theoretical_gbps()}};
    for (const auto& r : rows) {
      j["rows"].push_back({{"type", r.type}, {"op", r.op}, {"mode", r.mode}, {"axis", r.axis}, {"path", r.path},
                           {"total", r.total}, {"length", r.length}, {"outputs", r.outputs},
                           {"fastreduce_us", r.ours_us}, {"fastreduce_gbps", gbps(r.bytes, r.ours_us)},
                           {"flat_gbps", gbps(r.flat_bytes, r.flat_us)}, {"of_sum", of_sum(r)}, {"cub_us", r.cub_us},
                           {"cub_gbps", gbps(r.bytes, r.cub_us)}, {"agree", r.agree}});
    }
    out << j.dump(2) << '\n';
  } else if (o.format == "csv") {
    table.print_csv(out);
  } else {
    out << format("fastreduce bench-axis on %s (%d SMs): per call, back to back, median of %d batches interleaved; "
                  "inputs rotated beyond the L2\nGB/s = (bytes read + bytes written) / time; 1-D GB/s: fastreduce::reduce "
                  "of the same elements (bytes read), in the same run\n\n",
                  device->name.c_str(), device->sms, o.repetitions);
    table.print(out);
  }
  return ok ? 0 : 1;
}

}  // namespace fastreduce::cli
