// `bench --gpus` in a build without NCCL.
#include "cli/app.hpp"

namespace fastreduce::cli {

int run_bench_gpus(const BenchOptions&, std::ostream&, std::ostream& err) {
  err << "fastreduce: this build has no NCCL, so no multi-GPU bench (configure where NCCL is found, or set "
         "FASTREDUCE_NCCL_ROOT)\n";
  return 2;
}

}  // namespace fastreduce::cli
