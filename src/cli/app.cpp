#include "cli/app.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <cmath>

#include "fastreduce/runtime.hpp"
#include "cli/table.hpp"
#include "fastreduce/ladder.hpp"

namespace fastreduce::cli {

std::vector<std::size_t> default_bench_sizes() {
  std::vector<std::size_t> sizes;
  for (int p = 10; p <= 30; p += 2) sizes.push_back(std::size_t(1) << p);
  sizes.push_back(1000003);
  sizes.push_back(100000007);
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

std::vector<std::size_t> default_axis_lengths(std::size_t total) {
  std::vector<std::size_t> lengths;
  for (int p : {0, 2, 4, 6, 8, 10, 12, 16, 20, 22, 24, 26, 28}) {
    if ((std::size_t(1) << p) <= total) lengths.push_back(std::size_t(1) << p);
  }
  return lengths;
}

std::optional<std::size_t> parse_size(std::string_view text) {
  auto number = [](std::string_view s) -> std::optional<std::size_t> {
    std::size_t value = 0;
    if (s.empty()) return std::nullopt;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return value;
  };
  auto power = [](std::size_t base, std::optional<std::size_t> exponent) -> std::optional<std::size_t> {
    if (!exponent || *exponent > 62) return std::nullopt;
    return base << *exponent;
  };
  if (auto p = text.find('^'); p != std::string_view::npos) {
    if (text.substr(0, p) != "2") return std::nullopt;
    return power(1, number(text.substr(p + 1)));
  }
  if (auto p = text.find("<<"); p != std::string_view::npos) {
    const auto base = number(text.substr(0, p));
    const auto shifted = base ? power(*base, number(text.substr(p + 2))) : std::nullopt;
    if (!shifted || (*base != 0 && *shifted >> *number(text.substr(p + 2)) != *base)) return std::nullopt;
    return shifted;
  }
  if (!text.empty()) {
    const char unit = text.back();
    const int shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    if (shift != 0) {
      const auto base = number(text.substr(0, text.size() - 1));
      if (!base || *base > (std::size_t(1) << (63 - shift))) return std::nullopt;
      return *base << shift;
    }
  }
  return number(text);
}

namespace {
// Whether a list of names (string_views or the options' strings) has `name`.
template <class Names>
bool contains(const Names& names, std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}
// The arg-extremes, which take arithmetic types only (bench-axis).
bool asks_arg_extremes(const std::vector<std::string>& ops) {
  return contains(ops, "argmax") || contains(ops, "argmin");
}
constexpr std::string_view kFormats[] = {"table", "csv", "json"};
constexpr std::string_view kBenchTypes[] = {"float", "double", "int32", "bfloat16"};
constexpr std::string_view kBenchOps[] = {"sum", "max"};
constexpr std::string_view kBenchNewOps[] = {"argmax", "var", "norm2", "dot"};  // bench_ops.cu
constexpr std::string_view kModes[] = {"fast", "reproducible", "exact"};
}  // namespace

Mode mode_named(std::string_view name) {
  return name == "reproducible" ? Mode::Reproducible : name == "exact" ? Mode::Exact : Mode::Fast;
}

std::optional<std::string> validate(const LadderOptions& o) {
  if (!contains(ladder::kTypeNames, o.type)) {
    return "--type must be one of int32, uint32, int64, float, double (got '" + o.type + "')";
  }
  if (!contains(ladder::kOpNames, o.op)) {
    return "--op must be one of sum, prod, min, max, and, or (got '" + o.op + "')";
  }
  if (runtime::is_bitwise_op(o.op) && !runtime::is_integer_type(o.type)) {
    return "--op " + o.op + " needs an integer --type (int32, uint32, int64), not " + o.type;
  }
  if (!ladder::valid_block(o.block)) {
    return "--block must be a power of two from 32 to 1024 (got " + std::to_string(o.block) + ")";
  }
  const bool reference = contains(ladder::kReferenceIds, o.rung);
  if (o.rung != "all" && o.rung != "list" && !reference && ladder::find_rung(o.rung) == nullptr) {
    return "--rung '" + o.rung + "' is not a rung or a reference row; `fastreduce ladder --rung list` lists them";
  }
  if (o.profile_pass && (o.rung == "all" || o.rung == "list")) {
    return "--profile-pass needs one --rung (a rung id, engine, cub or read-bound)";
  }
  if (o.profile_pass && o.sweep_blocks) return "--profile-pass runs one block size: drop --sweep-blocks";
  if (o.rung == "cub" && o.op != "sum") return "--rung cub is cub::DeviceReduce::Sum: it needs --op sum";
  if (!contains(kFormats, o.format)) return "--format must be table, csv or json";
  if (o.repetitions < 1) return "--repetitions must be at least 1";
  return std::nullopt;
}

std::optional<std::string> validate(const BenchOptions& o) {
  for (const auto& t : o.types) {
    if (!contains(kBenchTypes, t)) return "--types: '" + t + "' is not one of float, double, int32, bfloat16";
  }
  std::size_t engine_ops = 0;
  for (const auto& op : o.ops) {
    if (!contains(kBenchOps, op) && !contains(kBenchNewOps, op)) {
      return "--ops: '" + op + "' is not one of sum, max, argmax, var, norm2, dot";
    }
    engine_ops += contains(kBenchOps, op) ? 1 : 0;
  }
  if (engine_ops > 0 && engine_ops < o.ops.size()) {
    return "--ops: sum and max run apart from argmax, var, norm2 and dot (two calls)";
  }
  if (engine_ops == 0 && !o.ops.empty()) {
    for (const auto& t : o.types) {
      if (t != "float" && t != "double") return "--ops argmax,var,norm2,dot take --types float,double";
    }
    if (!o.gpus.empty()) return "--gpus is the multi-GPU sum: leave --ops out";
  }
  for (const auto& m : o.modes) {
    if (!contains(kModes, m)) return "--modes: '" + m + "' is not one of fast, reproducible, exact";
  }
  if (o.data != "default" && o.data != "wide") return "--data must be default or wide";
  if (o.data == "wide" && (engine_ops == 0 || !o.gpus.empty())) return "--data wide: for --ops sum,max on one GPU";
  if (o.types.empty() || o.ops.empty() || o.modes.empty()) return "--types, --ops and --modes need at least one name";
  if (!contains(kFormats, o.format)) return "--format must be table, csv or json";
  if (o.repetitions < 1) return "--repetitions must be at least 1";
  return std::nullopt;
}

std::optional<std::string> validate(const BenchAxisOptions& o) {
  for (const auto& t : o.types) {
    if (t != "float" && t != "bfloat16") return "--types: '" + t + "' is not one of float, bfloat16";
  }
  static constexpr std::string_view kAxisOps[] = {"sum",   "max",  "argmax", "argmin",  "mean", "var",
                                                  "std",   "norm1", "norm2", "norminf", "dot",  "sumsq"};
  for (const auto& op : o.ops) {
    if (!contains(kAxisOps, op)) {
      return "--ops: '" + op + "' is not one of sum, max, argmax, argmin, mean, var, std, norm1, norm2, norminf, dot, sumsq";
    }
  }
  // (Else the rows asked for would be left out of the table without a word.)
  if (contains(o.types, "bfloat16") && asks_arg_extremes(o.ops)) {
    return "--ops argmax and argmin take --types float (the arg-extremes need an arithmetic type)";
  }
  for (const auto& a : o.axes) {
    if (a != "rows" && a != "columns" && a != "segments") return "--axes: '" + a + "' is not one of rows, columns, segments";
  }
  for (const auto& m : o.modes) {
    if (!contains(kModes, m)) return "--modes: '" + m + "' is not one of fast, reproducible, exact";
  }
  if (o.types.empty() || o.ops.empty() || o.axes.empty() || o.modes.empty() || o.totals.empty()) {
    return "--types, --ops, --axes, --modes and --totals need at least one value";
  }
  for (std::size_t t : o.totals) {
    if (t == 0 || t > (std::size_t(1) << 32)) return "--totals: each between 1 and 2^32";
  }
  for (std::size_t l : o.lengths) {
    if (l == 0) return "--lengths: each at least 1";
  }
  if (!contains(kFormats, o.format)) return "--format must be table, csv or json";
  if (o.repetitions < 1) return "--repetitions must be at least 1";
  return std::nullopt;
}

std::optional<std::string> validate(const AccuracyOptions& o) {
  if (o.type != "float" && o.type != "double") return "--type must be float or double";
  if (o.n < 2) return "--n must be at least 2";
  if (!contains(kFormats, o.format)) return "--format must be table, csv or json";
  return std::nullopt;
}

void print_rungs(std::ostream& out) {
  out << "id    rung  kernel                  what it changes                                                   source\n";
  for (const ladder::Rung& r : ladder::rungs()) {
    out << format("%-5s %-5d %-23s %-65s %s\n", r.id, r.number, r.name, r.change, r.seed);
  }
  out << "\nReference rows (printed under the rungs; --rung takes their ids too):\n"
         "engine      fastreduce::reduce (fast mode)\n"
         "cub         cub::DeviceReduce::Sum (sum only)\n"
         "read-bound  one pass of 16-byte loads, block totals combined by atomics in no fixed order\n";
}

int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"fastreduce: parallel reduction on NVIDIA GPUs (the seeds' ladder and a production engine)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fastreduce 0.1.0");

  auto size_option = [](CLI::App* cmd, const char* name, std::size_t& target, const char* help) {
    return cmd->add_option_function<std::string>(
        name,
        [&target, name](const std::string& text) {
          const auto value = parse_size(text);
          if (!value) throw CLI::ValidationError(name, "not a size: '" + text + "' (try 16777216, 2^24 or 16M)");
          target = *value;
        },
        help);
  };

  auto* info = app.add_subcommand("info", "GPU name, SMs, L2, theoretical and measured copy bandwidth");

  LadderOptions lo;
  auto* ladder_cmd = app.add_subcommand("ladder", "run the seeds' optimisation ladder, one row per rung");
  size_option(ladder_cmd, "--n", lo.n, "elements (default 2^24; accepts 2^K, 1<<K, 16M)");
  ladder_cmd->add_option("--type", lo.type, "int32 | uint32 | int64 | float | double")->capture_default_str();
  ladder_cmd->add_option("--op", lo.op, "sum | prod | min | max | and | or")->capture_default_str();
  ladder_cmd->add_option("--block", lo.block, "threads per block, power of two 32-1024")->capture_default_str();
  ladder_cmd->add_option("--rung", lo.rung, "a rung id, 'all', or 'list' to list them (no GPU needed)")
      ->capture_default_str();
  ladder_cmd->add_flag("--sweep-blocks", lo.sweep_blocks, "also time every block size 32-1024 (the lecture's table)");
  ladder_cmd->add_option("--format", lo.format, "table | csv | json")->capture_default_str();
  ladder_cmd->add_option("--repetitions", lo.repetitions, "timed runs per row (median reported)")->capture_default_str();
  ladder_cmd->add_option("--seed", lo.seed, "data seed (0: fresh random data)");
  ladder_cmd->add_flag("--profile-pass", lo.profile_pass,
                       "run --rung once between cudaProfilerStart/Stop and print nothing else (scripts/ladder_profile.py)");
  ladder_cmd->add_option("--hold-sms", lo.hold_sms,
                         "also run each row once while another kernel holds this many SMs (0: skip)");

  BenchOptions bo;
  std::vector<std::string> size_texts;
  auto* bench_cmd = app.add_subcommand("bench", "fastreduce vs CUB DeviceReduce vs thrust::reduce, same data, same run");
  auto* bench_types = bench_cmd->add_option("--types", bo.types, "float,double,int32,bfloat16 (argmax,var,norm2,dot: float)")
                          ->delimiter(',')
                          ->capture_default_str();
  bench_cmd->add_option("--ops", bo.ops,
                        "sum,max; or argmax,var,norm2,dot (against CUB ArgMax, cuBLAS nrm2 and dot, and fast Sum)")
      ->delimiter(',')
      ->capture_default_str();
  bench_cmd->add_option("--sizes", size_texts, "element counts (default 2^10..2^30 every 4x, 1000003, 100000007)")
      ->delimiter(',');
  bench_cmd->add_option("--modes", bo.modes, "fast,reproducible,exact")->delimiter(',')->capture_default_str();
  bench_cmd->add_option("--format", bo.format, "table | csv | json")->capture_default_str();
  bench_cmd->add_option("--plot", bo.plot, "write a PNG of GB/s against n (needs python3 + matplotlib)");
  bench_cmd->add_option("--repetitions", bo.repetitions, "timed batches per measurement (median reported)")
      ->capture_default_str();
  bench_cmd->add_flag("--skip-thrust", bo.skip_thrust, "leave thrust::reduce out");
  bench_cmd->add_flag("--finish-counter", bo.finish_counter,
                      "also time each mode with Options::finish_counter (a grid of several blocks finishes in its "
                      "last block: one launch), as rows of mode <mode>+counter whose bits must equal the mode's");
  bench_cmd->add_option("--data", bo.data,
                        "default (per op: sums of values in [0.5, 1.5), ...) | wide (floating point: both signs, "
                        "exponents over the type's whole range, subnormals included; results not compared with CUB's)")
      ->capture_default_str();
  bench_cmd->add_option("--gpus", bo.gpus,
                        "GPU counts, e.g. 1,2: the multi-GPU float sum through NCCL, one rank per GPU (sizes per GPU, "
                        "default 2^20..2^30 every 4x)")
      ->delimiter(',');

  BenchAxisOptions xo;
  std::vector<std::string> total_texts, length_texts;
  auto* axis_cmd = app.add_subcommand("bench-axis", "axis and segmented reductions: fastreduce vs CUB segmented reduce, same data, same run");
  auto* axis_types = axis_cmd->add_option("--types", xo.types, "float,bfloat16 (argmax, argmin: float)")
                        ->delimiter(',')
                        ->capture_default_str();
  axis_cmd->add_option("--ops", xo.ops,
                       "sum,max (also argmax, argmin, mean, var, std, norm1, norm2, norminf, dot, sumsq: each row "
                       "against sum on the same shape)")
      ->delimiter(',')
      ->capture_default_str();
  axis_cmd->add_option("--totals", total_texts, "elements per shape (default 2^24,2^28)")->delimiter(',');
  axis_cmd->add_option("--lengths", length_texts, "lengths of the reduced axis (default 1,4,...,4096,2^16,...,2^28)")
      ->delimiter(',');
  axis_cmd->add_option("--axes", xo.axes, "rows,columns,segments")->delimiter(',')->capture_default_str();
  axis_cmd->add_option("--modes", xo.modes, "fast,reproducible,exact")->delimiter(',')->capture_default_str();
  axis_cmd->add_option("--format", xo.format, "table | csv | json")->capture_default_str();
  axis_cmd->add_option("--plot", xo.plot, "write a PNG heat map of GB/s per shape (needs python3 + matplotlib)");
  axis_cmd->add_option("--repetitions", xo.repetitions, "timed batches per measurement (median reported)")
      ->capture_default_str();

  AccuracyOptions ao;
  auto* accuracy_cmd = app.add_subcommand("accuracy", "error of each method on adversarial sums, against the exact sum");
  accuracy_cmd->add_option("--type", ao.type, "float | double")->capture_default_str();
  size_option(accuracy_cmd, "--n", ao.n, "elements per data set (default 2^22)");
  accuracy_cmd->add_option("--seed", ao.seed, "data seed (fixed by default, so GPUs can be compared)")
      ->capture_default_str();
  accuracy_cmd->add_option("--format", ao.format, "table | csv | json")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }

  auto fail = [&](const std::string& message) {
    err << "fastreduce: " << message << '\n';
    return 2;
  };
  if (info->parsed()) return run_info(out, err);
  if (ladder_cmd->parsed()) {
    if (auto problem = validate(lo)) return fail(*problem);
    if (lo.rung == "list") {
      print_rungs(out);
      return 0;
    }
    return run_ladder(lo, out, err);
  }
  if (bench_cmd->parsed()) {
    for (const auto& text : size_texts) {
      const auto value = parse_size(text);
      if (!value) return fail("--sizes: not a size: '" + text + "'");
      bo.sizes.push_back(*value);
    }
    if (!bo.gpus.empty()) {
      if (bo.sizes.empty()) {
        for (int k = 20; k <= 30; k += 2) bo.sizes.push_back(std::size_t(1) << k);
      }
      for (int g : bo.gpus) {
        if (g < 1) return fail("--gpus: GPU counts are 1 or more");
      }
      if (auto problem = validate(bo)) return fail(*problem);
      return run_bench_gpus(bo, out, err);
    }
    if (bo.sizes.empty()) bo.sizes = default_bench_sizes();
    const bool new_ops = !bo.ops.empty() && contains(kBenchNewOps, bo.ops.front());
    if (new_ops && bench_types->count() == 0) bo.types = {"float"};
    if (auto problem = validate(bo)) return fail(*problem);
    return new_ops ? run_bench_ops(bo, out, err) : run_bench(bo, out, err);
  }
  if (axis_cmd->parsed()) {
    for (auto [texts, values] : {std::pair{&total_texts, &xo.totals}, std::pair{&length_texts, &xo.lengths}}) {
      if (texts->empty()) continue;
      values->clear();
      for (const auto& text : *texts) {
        const auto value = parse_size(text);
        if (!value) return fail("not a size: '" + text + "'");
        values->push_back(*value);
      }
    }
    // The arg-extremes take arithmetic types: without --types, float alone.
    if (axis_types->count() == 0 && asks_arg_extremes(xo.ops)) xo.types = {"float"};
    if (auto problem = validate(xo)) return fail(*problem);
    return run_bench_axis(xo, out, err);
  }
  if (accuracy_cmd->parsed()) {
    if (auto problem = validate(ao)) return fail(*problem);
    return run_accuracy(ao, out, err);
  }
  return 2;
}

}  // namespace fastreduce::cli
