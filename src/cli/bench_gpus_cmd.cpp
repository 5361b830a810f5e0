// `fastreduce bench --gpus 1,2`: the multi-GPU float sum (fastreduce::nccl::reduce_async), one
// process, one rank per GPU (ncclCommInitAll), one host thread per rank.
//
// For each GPU count, size per GPU and mode: the collective reduction's time (every rank times a
// batch of calls back to back with CUDA events; the slowest rank's time per call, median over
// batches) and, on the same data, the local pass alone (the single-GPU fastreduce::reduce_async
// of one GPU's shard). Their difference is the cost of the collectives; weak-scaling efficiency
// is the single-GPU pass's time over the collective's. Every rank reads the same buffer in
// every call (no rotation), so both timings see the same caching.
#include <nccl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "cli/app.hpp"
#include "cli/table.hpp"
#include "data.hpp"
#include "device_info.hpp"
#include "fastreduce/fastreduce.cuh"
#include "fastreduce/nccl.cuh"
#include "timing.hpp"

namespace fastreduce::cli {

namespace {

struct GpusRow {
  int gpus = 1;
  std::size_t n = 0;  // per GPU
  std::string mode;
  double local_us = 0;       // single-GPU reduce of one shard
  double collective_us = 0;  // nccl::reduce_async over all ranks
  bool agree = true;         // every rank got the same bits (and, reproducible or exact, the 1-GPU bits)
};

struct Rank {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  float* data = nullptr;
  void* temp = nullptr;
  std::size_t temp_bytes = 0;
  float* out = nullptr;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Times `call` on every rank at once: batches of `calls` back to back between two events, the
// slowest rank per batch, the median batch; microseconds per call.
template <class Call>
double time_ranks(std::vector<Rank>& ranks, int calls, int repetitions, Call&& call, bool* failed) {
  const int count = static_cast<int>(ranks.size());
  std::barrier sync(count);
  std::vector<std::vector<double>> per_rank(count);
  std::vector<std::thread> threads;
  for (int r = 0; r < count; ++r) {
    threads.emplace_back([&, r] {
      Rank& k = ranks[r];
      cudaSetDevice(k.device);
      bool ok = true;
      for (int w = 0; w < 3; ++w) ok = call(r) == cudaSuccess && ok;
      ok = cudaStreamSynchronize(k.stream) == cudaSuccess && ok;
      for (int rep = 0; rep < repetitions; ++rep) {
        sync.arrive_and_wait();
        cudaEventRecord(k.start, k.stream);
        for (int c = 0; c < calls; ++c) ok = call(r) == cudaSuccess && ok;
        cudaEventRecord(k.stop, k.stream);
        ok = cudaEventSynchronize(k.stop) == cudaSuccess && ok;
        float ms = 0;
        cudaEventElapsedTime(&ms, k.start, k.stop);
        per_rank[r].push_back(1000.0 * ms / calls);
      }
      if (!ok) *failed = true;
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> slowest(repetitions, 0.0);
  for (int rep = 0; rep < repetitions; ++rep) {
    for (int r = 0; r < count; ++r) slowest[rep] = std::max(slowest[rep], per_rank[r][rep]);
  }
  return median(slowest);
}

}  // namespace

int run_bench_gpus(const BenchOptions& o, std::ostream& out, std::ostream& err) {
  int available = 0;
  if (cudaGetDeviceCount(&available) != cudaSuccess || available == 0) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  const int most = *std::max_element(o.gpus.begin(), o.gpus.end());
  if (most > available) {
    err << format("fastreduce: --gpus asks for %d GPUs, this machine has %d\n", most, available);
    return 2;
  }
  // The collectives move a few KB: NVLink multicast (NVLS) buys nothing there and reserves
  // multicast memory, so it stays off unless the environment asks for it.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const auto device = bench::current_device();
  const std::size_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  std::vector<GpusRow> rows;
  bool ok = true;
  for (int gpus : o.gpus) {
    std::vector<int> devices(gpus);
    for (int g = 0; g < gpus; ++g) devices[g] = g;
    std::vector<ncclComm_t> comms(gpus);
    if (ncclResult_t r = ncclCommInitAll(comms.data(), gpus, devices.data()); r != ncclSuccess) {
      err << "fastreduce: ncclCommInitAll: " << ncclGetErrorString(r) << '\n';
      return 1;
    }
    std::vector<Rank> ranks(gpus);
    for (int g = 0; g < gpus; ++g) {
      Rank& k = ranks[g];
      k.device = g;
      cudaSetDevice(g);
      cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking);
      cudaEventCreate(&k.start);
      cudaEventCreate(&k.stop);
      if (cudaMalloc(&k.data, largest * sizeof(float)) != cudaSuccess) {
        err << format("fastreduce: allocating %.1f GB on GPU %d failed\n", largest * 4.0 / 1e9, g);
        return 1;
      }
      std::size_t bytes = 0;
      for (const auto& mode : o.modes) {
        const Options opt{.mode = mode_named(mode)};
        for (std::size_t n : o.sizes) {  // the storage depends on the size (and the address): the largest need
          std::size_t collective = 0, local = 0;
          if (nccl::reduce_async<float>(nullptr, collective, comms[g], k.data, n, nullptr, Sum{}, k.stream, opt) !=
                  cudaSuccess ||
              reduce_async<float>(nullptr, local, k.data, nullptr, n, Sum{}, k.stream, opt) != cudaSuccess) {
            err << "fastreduce: the size query failed\n";
            return 1;
          }
          bytes = std::max({bytes, collective, local});
        }
      }
      k.temp_bytes = bytes;
      if (cudaMalloc(&k.temp, bytes) != cudaSuccess || cudaMalloc(&k.out, 2 * sizeof(float)) != cudaSuccess) {
        err << format("fastreduce: allocating the temporary storage on GPU %d failed\n", g);
        return 1;
      }
      if (bench::fill_random(k.data, largest, bench::fresh_seed(), bench::Distribution::Signed) != cudaSuccess) {
        err << "fastreduce: filling the input failed\n";
        return 1;
      }
    }
    for (std::size_t n : o.sizes) {
      for (const auto& mode : o.modes) {
        err << format("\r[bench --gpus] %d GPU(s)  n=%zu per GPU  %s          ", gpus, n, mode.c_str()) << std::flush;
        const Options opt{.mode = mode_named(mode)};
        GpusRow row{.gpus = gpus, .n = n, .mode = mode};
        bool failed = false;
        auto local = [&](int r) {
          Rank& k = ranks[r];
          std::size_t b = k.temp_bytes;
          return reduce_async<float>(k.temp, b, k.data, k.out + 1, n, Sum{}, k.stream, opt);
        };
        auto collective = [&](int r) {
          Rank& k = ranks[r];
          std::size_t b = k.temp_bytes;
          return nccl::reduce_async<float>(k.temp, b, comms[r], k.data, n, k.out, Sum{}, k.stream, opt);
        };
        std::vector<Rank> first{ranks[0]};
        row.local_us = time_ranks(first, 1, 3, local, &failed);  // a probe for the batch length
        const int calls = bench::calls_per_batch(row.local_us, 200);
        row.local_us = time_ranks(first, calls, o.repetitions, local, &failed);
        row.collective_us = time_ranks(ranks, calls, o.repetitions, collective, &failed);
        // Every rank has the same bits; reproducible and exact ones are those of the single-GPU
        // reduce of the whole array (the shards copied to GPU 0).
        std::vector<float> results(gpus);
        for (int g = 0; g < gpus; ++g) {
          cudaSetDevice(g);
          cudaMemcpy(&results[g], ranks[g].out, sizeof(float), cudaMemcpyDeviceToHost);
        }
        for (float v : results) row.agree = row.agree && std::memcmp(&v, &results[0], sizeof(float)) == 0;
        if (opt.mode != Mode::Fast) {
          cudaSetDevice(0);
          float* whole = nullptr;
          if (cudaMalloc(&whole, std::max<std::size_t>(gpus * n, 1) * sizeof(float)) == cudaSuccess) {
            for (int g = 0; g < gpus; ++g) cudaMemcpyPeer(whole + g * n, 0, ranks[g].data, g, n * sizeof(float));
            const float one = reduce(whole, gpus * n, Sum{}, opt);
            row.agree = row.agree && std::memcmp(&one, &results[0], sizeof(float)) == 0;
            cudaFree(whole);
          } else {
            cudaGetLastError();
            err << format("\nfastreduce: no room on GPU 0 to check the %s bits (n=%zu)\n", mode.c_str(), n);
          }
        }
        if (failed) {
          err << format("\nfastreduce: a call failed (%d GPUs, n=%zu, %s)\n", gpus, n, mode.c_str());
          ok = false;
        }
        ok = ok && row.agree;
        rows.push_back(row);
      }
    }
    for (int g = 0; g < gpus; ++g) {
      cudaSetDevice(g);
      cudaFree(ranks[g].data);
      cudaFree(ranks[g].temp);
      cudaFree(ranks[g].out);
      cudaEventDestroy(ranks[g].start);
      cudaEventDestroy(ranks[g].stop);
      cudaStreamDestroy(ranks[g].stream);
      ncclCommDestroy(comms[g]);
    }
    cudaSetDevice(0);
  }
  err << "\r" << std::string(70, ' ') << "\r";

  Table table({"GPUs", "n per GPU", "mode", "1-GPU pass us", "collective us", "above pass us", "GB/s per GPU",
               "weak scaling", "ranks agree"});
  for (const auto& r : rows) {
    table.add({std::to_string(r.gpus), std::to_string(r.n), r.mode, format("%.2f", r.local_us),
               format("%.2f", r.collective_us), format("%.2f", r.collective_us - r.local_us),
               format("%.0f", r.n * 4.0 / (r.collective_us * 1e3)), format("%.1f%%", 100.0 * r.local_us / r.collective_us),
               r.agree ? "yes" : "NO"});
  }
  int nccl_version = 0;
  ncclGetVersion(&nccl_version);
  const std::string name = device ? device->name : "?";
  if (o.format == "json") {
    nlohmann::json j;
    j["device"] = {{"name", name}, {"gpus_present", available}, {"nccl_version", nccl_version}};
    for (const auto& r : rows) {
      j["rows"].push_back({{"gpus", r.gpus}, {"n_per_gpu", r.n}, {"mode", r.mode}, {"local_us", r.local_us},
                           {"collective_us", r.collective_us}, {"agree", r.agree}});
    }
    out << j.dump(2) << '\n';
  } else if (o.format == "csv") {
    table.print_csv(out);
  } else {
    out << format("fastreduce bench --gpus on %d x %s, NCCL %d: float sum, one rank per GPU; per call, back to back, the "
                  "slowest rank, median of %d batches\n1-GPU pass = fastreduce::reduce_async of one shard on GPU 0; "
                  "weak scaling = 1-GPU pass / collective\n\n",
                  available, name.c_str(), nccl_version, o.repetitions);
    table.print(out);
  }
  return ok ? 0 : 1;
}

}  // namespace fastreduce::cli
