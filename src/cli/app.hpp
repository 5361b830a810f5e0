// The `fastreduce` command: parsing, validation and the subcommands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "fastreduce/fastreduce.cuh"

namespace fastreduce::cli {

// The Mode a --modes name stands for ("fast", "reproducible", "exact"; validated before).
Mode mode_named(std::string_view name);

struct LadderOptions {
  std::size_t n = std::size_t(1) << 24;  // the seeds' default size (seed 002)
  std::string type = "float";
  std::string op = "sum";
  unsigned block = 256;
  std::string rung = "all";  // an id from `--rung list`, a reference id (engine, cub, read-bound), "all" or "list"
  bool sweep_blocks = false;
  bool profile_pass = false;  // run --rung once between cudaProfilerStart/Stop (for Nsight Compute)
  unsigned hold_sms = 0;      // also time each row while another kernel holds this many SMs
  std::string format = "table";
  int repetitions = 20;
  std::uint64_t seed = 0;  // 0: fresh data every run
};

struct BenchOptions {
  std::vector<std::string> types{"float", "double", "int32", "bfloat16"};
  std::vector<std::string> ops{"sum", "max"};
  std::vector<std::size_t> sizes;  // empty: 2^10 ... 2^30 every 4x, 1000003, 100000007
  std::vector<std::string> modes{"fast"};
  std::string format = "table";
  std::string plot;  // PNG path: also writes <plot>.csv and runs scripts/plot_bench.py
  int repetitions = 15;
  bool skip_thrust = false;
  std::string data = "default";  // "wide": floating-point exponents over the whole range (sum, max)
  std::vector<int> gpus;  // non-empty: the multi-GPU float sum on these GPU counts (bench_gpus_cmd.cpp)
  bool finish_counter = false;  // each mode also with Options::finish_counter (rows of mode "<mode>+counter")
};

struct BenchAxisOptions {
  std::vector<std::string> types{"float", "bfloat16"};
  std::vector<std::string> ops{"sum", "max"};
  std::vector<std::size_t> totals{std::size_t(1) << 24, std::size_t(1) << 28};  // elements per shape
  std::vector<std::size_t> lengths;  // empty: 1, 4, 16, ..., 4096, 2^16, 2^20, 2^22, 2^24, 2^26, 2^28 (up to the total)
  std::vector<std::string> axes{"rows", "columns", "segments"};
  std::vector<std::string> modes{"fast"};
  std::string format = "table";
  std::string plot;  // PNG path: also writes <plot>.csv and runs scripts/plot_axis.py
  int repetitions = 10;
};

struct AccuracyOptions {
  std::string type = "float";
  std::size_t n = std::size_t(1) << 22;
  std::uint64_t seed = 2026;  // fixed: the same inputs on every GPU, so results can be compared
  std::string format = "table";
};

// The default bench sizes.
std::vector<std::size_t> default_bench_sizes();
// The default lengths of bench-axis: those up to `total`.
std::vector<std::size_t> default_axis_lengths(std::size_t total);

// Parses "16777216", "2^24", "1<<24", "16M" (2^20 units: K, M, G). Nothing on a bad string.
std::optional<std::size_t> parse_size(std::string_view text);

// Checks that cannot wait for a GPU. Returns the error line, or nothing.
std::optional<std::string> validate(const LadderOptions& options);
std::optional<std::string> validate(const BenchOptions& options);
std::optional<std::string> validate(const AccuracyOptions& options);
std::optional<std::string> validate(const BenchAxisOptions& options);

// Runs the command line; returns the process exit code (0 ok, 1 runtime failure or no GPU,
// 2 bad arguments).
int run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

int run_info(std::ostream& out, std::ostream& err);
int run_ladder(const LadderOptions& options, std::ostream& out, std::ostream& err);
int run_bench(const BenchOptions& options, std::ostream& out, std::ostream& err);
// `bench --gpus`: only in builds with NCCL (FASTREDUCE_HAVE_NCCL); elsewhere it says so.
int run_bench_gpus(const BenchOptions& options, std::ostream& out, std::ostream& err);
// `bench --ops argmax,var,norm2,dot` (bench_ops.cu).
int run_bench_ops(const BenchOptions& options, std::ostream& out, std::ostream& err);
int run_bench_axis(const BenchAxisOptions& options, std::ostream& out, std::ostream& err);
int run_accuracy(const AccuracyOptions& options, std::ostream& out, std::ostream& err);

// Lists the rungs (no GPU needed).
void print_rungs(std::ostream& out);

}  // namespace fastreduce::cli
