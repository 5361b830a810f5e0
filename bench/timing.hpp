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

// Calls per timed batch so that a batch lasts about 2 ms (1 to cap), for calls of about `us` each.
int calls_per_batch(double us, int cap);
// The same for fn, timed first (two warm-up calls, the median of three).
int calls_per_batch(const std::function<void(int)>& fn, cudaStream_t stream, int cap);

// Times contenders back to back: a batch of calls[k] calls of fns[k](i) between two events,
// divided by calls[k], is the cost of a call when a program issues many (launch overhead
// included, as users see it). The batches are interleaved: repetition r runs one batch of each,
// starting with contender r % count (in reverse order every other round of `count`
// repetitions), so that a slow spell of the host or the GPU falls on all of them alike. The call
// index i counts over all contenders' calls. Per contender, the median of options.repetitions
// batches counts.
std::vector<Timing> time_back_to_back_interleaved(const std::vector<std::function<void(int)>>& fns,
                                                  cudaStream_t stream, const std::vector<int>& calls,
                                                  TimingOptions options);

}  // namespace fastreduce::bench
