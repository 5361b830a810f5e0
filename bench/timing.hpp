// How things are timed (kept apart from what is measured): CUDA events around the work,
// warm-up first, the median of many repetitions.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

namespace fastreduce::bench {

struct TimingOptions {
  int warmup = 5;
  int repetitions = 30;
};

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};

// Times each call of fn(i) on its own, between two events on `stream` (i counts calls, for
// rotating among inputs).
Timing time_each(const std::function<void(int)>& fn, cudaStream_t stream, TimingOptions options);

// Times `calls` back-to-back calls of fn(i) between two events and divides: the cost of a call
// when a program issues many (launch overhead included, as users see it). Repeated
// options.repetitions times; the median batch counts.
Timing time_back_to_back(const std::function<void(int)>& fn, cudaStream_t stream, int calls,
                         TimingOptions options);

// Several contenders timed like time_back_to_back, with their batches interleaved: repetition r
// runs one batch of each, starting with contender r % count (in reverse order every other round
// of `count` repetitions), so that a slow spell of the host or the GPU falls on all of them alike.
// calls[k] is contender k's batch length; the call index counts over all contenders' calls.
std::vector<Timing> time_back_to_back_interleaved(const std::vector<std::function<void(int)>>& fns,
                                                  cudaStream_t stream, const std::vector<int>& calls,
                                                  TimingOptions options);

}  // namespace fastreduce::bench
