// `fastreduce accuracy`: on named adversarial data sets, the error of each way of summing
// against the exact sum (correctly rounded), in units in the last place and relative.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "baselines.hpp"
#include "cli/app.hpp"
#include "cli/table.hpp"
#include "device_info.hpp"
#include "device_memory.hpp"
#include "fastreduce/fastreduce.cuh"
#include "reference.hpp"

namespace fastreduce::cli {

namespace {

struct DataSet {
  const char* name;
  const char* what;
};
constexpr DataSet kDataSets[] = {
    {"uniform", "values in [0, 1): well conditioned"},
    {"wide-range", "random signs, magnitudes 10^-8 .. 10^8 (log-uniform)"},
    {"wide-range-sorted", "the same values sorted by increasing magnitude"},
    {"cancellation", "pairs +x, -x of magnitude ~10^6 hiding small values ~10^-3, shuffled"},
};

template <class T>
std::vector<T> make(std::string_view name, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<T> v(n);
  if (name == "uniform") {
    for (auto& x : v) x = static_cast<T>(unit(rng));
  } else if (name == "wide-range" || name == "wide-range-sorted") {
    for (auto& x : v) x = static_cast<T>((unit(rng) < 0.5 ? -1.0 : 1.0) * std::pow(10.0, -8.0 + 16.0 * unit(rng)));
    if (name == "wide-range-sorted") std::sort(v.begin(), v.end(), [](T a, T b) { return std::fabs(a) < std::fabs(b); });
  } else {  // cancellation
    std::size_t i = 0;
    for (; i + 3 <= n; i += 3) {
      const T big = static_cast<T>(1e6 * (1.0 + unit(rng)));
      v[i] = big;
      v[i + 1] = -big;
      v[i + 2] = static_cast<T>(1e-3 * unit(rng));
    }
    for (; i < n; ++i) v[i] = static_cast<T>(1e-3 * unit(rng));
    std::shuffle(v.begin(), v.end(), rng);
  }
  return v;
}

template <class T>
double ulps(T value, double exact) {
  const T rounded = static_cast<T>(exact);
  const T up = std::nextafter(static_cast<T>(std::fabs(rounded)), std::numeric_limits<T>::infinity());
  const double ulp = double(up) - std::fabs(double(rounded));
  return std::fabs(double(value) - exact) / ulp;
}

template <class T>
std::string hex(T value) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  return format(sizeof(T) == 4 ? "0x%08llx" : "0x%016llx", static_cast<unsigned long long>(std::bit_cast<Bits>(value)));
}

template <class T>
int accuracy_typed(const AccuracyOptions& o, const bench::DeviceInfo& device, std::ostream& out, std::ostream& err) {
  const std::size_t n = o.n;
  const std::size_t temp_bytes =
      bench::shared_temp_bytes<T, Sum>(n, {{.mode = Mode::Reproducible}, {.mode = Mode::Exact}, {}});
  bench::DeviceArray<T> in_memory(n);
  bench::DeviceArray<T> out_memory(1);
  bench::DeviceArray<unsigned char> temp_memory(temp_bytes);
  T* const d_in = in_memory.get();
  T* const d_out = out_memory.get();
  void* const temp = temp_memory.get();
  if (d_in == nullptr || d_out == nullptr || temp == nullptr) {
    err << "fastreduce: allocation failed\n";
    return 1;
  }
  auto run = [&](auto&& launch) {
    cudaMemset(d_out, 0xA5, sizeof(T));
    std::size_t tb = temp_bytes;
    cudaError_t e = launch(tb);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) throw Error(e, std::string("accuracy run: ") + cudaGetErrorString(e));
    T value{};
    cudaMemcpy(&value, d_out, sizeof(T), cudaMemcpyDeviceToHost);
    return value;
  };

  nlohmann::json json;
  json["device"] = device.name;
  json["type"] = o.type;
  json["n"] = n;
  json["seed"] = o.seed;
  Table table({"data set", "method", "result", "bits", "error (ulp)", "rel. error"});
  bool repro_stable = true;
  bool exact_correct = true;  // Mode::Exact gave the correctly rounded sum's bits on every set
  for (const DataSet& set : kDataSets) {
    const std::vector<T> host = make<T>(set.name, n, o.seed);
    cudaMemcpy(d_in, host.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    const double exact = reference::exact_sum(host.data(), n);
    const T correctly_rounded = static_cast<T>(reference::exact_rounded<T>(host.data(), n));
    T plain = 0;
    for (T x : host) plain += x;
    const T repro = run([&](std::size_t& tb) {
      return reduce_async<T, Sum>(temp, tb, d_in, d_out, n, Sum{}, 0, {.mode = Mode::Reproducible});
    });
    // The reproducible result must not depend on the grid.
    for (unsigned max_blocks : {1u, 3u, 7u, 64u, 132u}) {
      const T again = run([&](std::size_t& tb) {
        return reduce_async<T, Sum>(temp, tb, d_in, d_out, n, Sum{}, 0,
                                    {.mode = Mode::Reproducible, .max_blocks = max_blocks});
      });
      repro_stable = repro_stable && std::memcmp(&again, &repro, sizeof(T)) == 0;
    }
    const T exact_mode = run([&](std::size_t& tb) {
      return reduce_async<T, Sum>(temp, tb, d_in, d_out, n, Sum{}, 0, {.mode = Mode::Exact});
    });
    exact_correct = exact_correct && std::memcmp(&exact_mode, &correctly_rounded, sizeof(T)) == 0;
    const T fast = run([&](std::size_t& tb) { return reduce_async<T, Sum>(temp, tb, d_in, d_out, n, Sum{}, 0, {}); });
    const T cub = run([&](std::size_t& tb) { return bench::cub_reduce<T, Sum>(temp, tb, d_in, d_out, n, 0); });
    const std::pair<const char*, T> results[] = {
        {"fastreduce exact", exact_mode}, {"fastreduce reproducible", repro}, {"fastreduce fast", fast}, {"CUB DeviceReduce::Sum", cub}, {"plain loop (CPU)", plain}};
    table.add({set.name, "exact (correctly rounded)", format("%.17g", exact), hex(correctly_rounded), "", ""});
    for (const auto& [method, value] : results) {
      const double rel = exact != 0 ? std::fabs(double(value) - exact) / std::fabs(exact) : std::fabs(double(value));
      table.add({"", method, format("%.17g", double(value)), hex(value), format("%.3g", ulps(value, exact)), format("%.2e", rel)});
      json["sets"][set.name][method] = {{"result", double(value)}, {"bits", hex(value)}, {"ulps", ulps(value, exact)}, {"rel_error", rel}};
    }
    json["sets"][set.name]["exact"] = exact;
  }
  json["reproducible_same_bits_for_max_blocks_1_3_7_64_132"] = repro_stable;
  json["exact_mode_correctly_rounded_on_every_set"] = exact_correct;
  if (o.format == "json") {
    out << json.dump(2) << '\n';
  } else if (o.format == "csv") {
    table.print_csv(out);
  } else {
    out << format("fastreduce accuracy: %s sums, n = %zu per data set, seed %llu, on %s\n", o.type.c_str(), n,
                  static_cast<unsigned long long>(o.seed), device.name.c_str());
    for (const DataSet& set : kDataSets) out << format("  %-18s %s\n", set.name, set.what);
    out << "error: |result - exact| in units in the last place of the exact sum's " << o.type << ", and relative\n\n";
    table.print(out);
    out << "\nreproducible mode, max_blocks = 1, 3, 7, 64, 132 and automatic: "
        << (repro_stable ? "identical bits on every data set" : "BITS DIFFER") << '\n';
    out << "exact mode: " << (exact_correct ? "the correctly rounded sum, bit for bit, on every data set" : "NOT CORRECTLY ROUNDED")
        << '\n';
  }
  return repro_stable && exact_correct ? 0 : 1;
}

}  // namespace

int run_accuracy(const AccuracyOptions& o, std::ostream& out, std::ostream& err) {
  const auto device = bench::current_device();
  if (!device) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  try {
    return o.type == "double" ? accuracy_typed<double>(o, *device, out, err) : accuracy_typed<float>(o, *device, out, err);
  } catch (const Error& e) {
    err << "fastreduce: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace fastreduce::cli
