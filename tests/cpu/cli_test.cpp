// Command-line parsing and the errors that need no GPU.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"

#include <cuda_runtime.h>

namespace cli = fastreduce::cli;

namespace {
struct Result {
  int code;
  std::string out;
  std::string err;
};
Result run(std::vector<const char*> args) {
  args.insert(args.begin(), "fastreduce");
  std::ostringstream out, err;
  const int code = cli::run(static_cast<int>(args.size()), args.data(), out, err);
  return {code, out.str(), err.str()};
}
bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}
}  // namespace

TEST(ParseSize, AcceptsTheUsualSpellings) {
  EXPECT_EQ(cli::parse_size("16777216"), std::size_t(1) << 24);
  EXPECT_EQ(cli::parse_size("2^24"), std::size_t(1) << 24);
  EXPECT_EQ(cli::parse_size("1<<24"), std::size_t(1) << 24);
  EXPECT_EQ(cli::parse_size("3<<2"), 12u);
  EXPECT_EQ(cli::parse_size("16M"), std::size_t(16) << 20);
  EXPECT_EQ(cli::parse_size("1G"), std::size_t(1) << 30);
  EXPECT_EQ(cli::parse_size("0"), 0u);
  EXPECT_EQ(cli::parse_size("2^33"), std::size_t(1) << 33);
}

TEST(ParseSize, RejectsGarbage) {
  for (const char* bad : {"", "abc", "-5", "12x", "3^4", "2^99", "1<<", "M", "1.5M", "99999999999999999999"}) {
    EXPECT_FALSE(cli::parse_size(bad).has_value()) << bad;
  }
}

TEST(Cli, RungListNeedsNoGpu) {
  const auto r = run({"ladder", "--rung", "list"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("interleaved_divergent"), std::string::npos);
  EXPECT_NE(r.out.find("8f64"), std::string::npos);
  EXPECT_NE(r.out.find("tensor_core_sum"), std::string::npos);
  EXPECT_NE(r.out.find("read-bound"), std::string::npos);
}

TEST(Cli, BadArgumentsAreOneClearLineAndExitCode2) {
  struct Case {
    std::vector<const char*> args;
    const char* says;
  };
  const Case cases[] = {
      {{"ladder", "--block", "48"}, "--block must be a power of two"},
      {{"ladder", "--block", "2048"}, "--block must be a power of two"},
      {{"ladder", "--type", "float", "--op", "and"}, "needs an integer --type"},
      {{"ladder", "--type", "bfloat16"}, "--type must be one of"},
      {{"ladder", "--op", "median"}, "--op must be one of"},
      {{"ladder", "--rung", "42"}, "is not a rung"},
      {{"ladder", "--format", "xml"}, "--format must be"},
      {{"ladder", "--profile-pass"}, "--profile-pass needs one --rung"},
      {{"ladder", "--profile-pass", "--rung", "12", "--sweep-blocks"}, "drop --sweep-blocks"},
      {{"ladder", "--rung", "cub", "--op", "max"}, "it needs --op sum"},
      {{"bench", "--types", "float,half"}, "'half' is not one of"},
      {{"bench", "--ops", "prod"}, "'prod' is not one of"},
      {{"bench", "--modes", "slow"}, "'slow' is not one of"},
      {{"bench", "--ops", "sum,argmax"}, "run apart from argmax"},
      {{"bench", "--ops", "var", "--types", "int32"}, "take --types float,double"},
      {{"bench", "--ops", "median"}, "argmax, var, norm2, dot"},
      {{"bench", "--sizes", "12,abc"}, "not a size: 'abc'"},
      {{"bench", "--gpus", "1,0"}, "--gpus: GPU counts are 1 or more"},
      {{"bench", "--gpus", "2", "--modes", "slow"}, "'slow' is not one of"},
      {{"bench", "--data", "narrow"}, "--data must be default or wide"},
      {{"bench", "--data", "wide", "--ops", "argmax"}, "--data wide: for --ops sum,max on one GPU"},
      {{"bench", "--data", "wide", "--gpus", "1"}, "--data wide: for --ops sum,max on one GPU"},
      {{"bench-axis", "--types", "float,half"}, "'half' is not one of float, bfloat16"},
      {{"bench-axis", "--ops", "median"}, "'median' is not one of"},
      {{"bench-axis", "--axes", "diagonal"}, "'diagonal' is not one of rows, columns, segments"},
      {{"bench-axis", "--types", "float,bfloat16", "--ops", "sum,argmin"}, "argmax and argmin take --types float"},
      {{"bench-axis", "--types", "bfloat16", "--ops", "argmax"}, "argmax and argmin take --types float"},
      {{"accuracy", "--type", "int32"}, "--type must be float or double"},
  };
  for (const auto& c : cases) {
    const auto r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args[0] << ' ' << c.args[1];
    EXPECT_NE(r.err.find(c.says), std::string::npos) << "stderr was: " << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(Cli, BadSizeIsRejectedByTheParser) {
  const auto r = run({"ladder", "--n", "lots"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a size"), std::string::npos) << r.err;
}

TEST(Cli, NoSubcommandIsAnError) {
  EXPECT_EQ(run({}).code, 2);
  EXPECT_EQ(run({"frobnicate"}).code, 2);
}

TEST(Cli, HelpSucceeds) {
  const auto r = run({"ladder", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--sweep-blocks"), std::string::npos);
}

TEST(Cli, GpuCommandsSayNoDeviceWithoutAGpu) {
  if (has_gpu()) GTEST_SKIP() << "a GPU is present; the GPU tier runs these commands";
  for (std::vector<const char*> args : {std::vector<const char*>{"info"}, {"ladder"}, {"bench", "--sizes", "1024"}, {"accuracy"},
        {"bench-axis", "--ops", "argmax", "--totals", "1024"}}) {  // (default types: float alone for argmax)
    const auto r = run(args);
    EXPECT_EQ(r.code, 1) << args[0];
    EXPECT_EQ(r.err, "fastreduce: no CUDA device found\n") << args[0];
  }
}

TEST(Cli, DefaultBenchSizesCoverTheIssueRange) {
  const auto sizes = cli::default_bench_sizes();
  EXPECT_EQ(sizes.front(), std::size_t(1) << 10);
  EXPECT_EQ(sizes.back(), std::size_t(1) << 30);
  EXPECT_EQ(sizes.size(), 13u);
}
