#include <algorithm>
#include <vector>

#include "timing.hpp"

namespace fastreduce::bench {

int calls_per_batch(double us, int cap) {
  return std::clamp(static_cast<int>(2000.0 / std::max(us, 1.0)), 1, cap);
}

int calls_per_batch(const std::function<void(int)>& fn, cudaStream_t stream, int cap) {
  return calls_per_batch(time_each(fn, stream, {.warmup = 2, .repetitions = 3}).median_us, cap);
}

namespace {
Timing summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  Timing t;
  if (samples.empty()) return t;
  t.min_us = samples.front();
  t.max_us = samples.back();
  const std::size_t mid = samples.size() / 2;
  t.median_us = samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  return t;
}

struct EventPair {
  cudaEvent_t start{}, stop{};
  EventPair() {
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  double elapsed_us() const {
    float ms = 0;
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&ms, start, stop);
    return 1000.0 * ms;
  }
};
}  // namespace

Timing time_each(const std::function<void(int)>& fn, cudaStream_t stream, TimingOptions options) {
  int call = 0;
  for (int i = 0; i < options.warmup; ++i) fn(call++);
  cudaStreamSynchronize(stream);
  EventPair events;
  std::vector<double> samples;
  samples.reserve(options.repetitions);
  for (int i = 0; i < options.repetitions; ++i) {
    cudaEventRecord(events.start, stream);
    fn(call++);
    cudaEventRecord(events.stop, stream);
    samples.push_back(events.elapsed_us());
  }
  return summarize(std::move(samples));
}

std::vector<Timing> time_back_to_back_interleaved(const std::vector<std::function<void(int)>>& fns,
                                                  cudaStream_t stream, const std::vector<int>& calls,
                                                  TimingOptions options) {
  const std::size_t count = fns.size();
  int call = 0;  // one counter for all: every call reads the input least recently read
  for (std::size_t k = 0; k < count; ++k) {
    for (int i = 0; i < options.warmup; ++i) fns[k](call++);
  }
  cudaStreamSynchronize(stream);
  EventPair events;
  std::vector<std::vector<double>> samples(count);
  for (int r = 0; r < options.repetitions; ++r) {
    // Rotated, and reversed every other round of rotations: each contender follows each other
    // one equally often.
    const bool reversed = (std::size_t(r) / count) % 2 == 1;
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t k = (std::size_t(r) + (reversed ? count - 1 - j : j)) % count;
      cudaEventRecord(events.start, stream);
      for (int i = 0; i < calls[k]; ++i) fns[k](call++);
      cudaEventRecord(events.stop, stream);
      samples[k].push_back(events.elapsed_us() / calls[k]);
    }
  }
  std::vector<Timing> timings;
  for (auto& s : samples) timings.push_back(summarize(std::move(s)));
  return timings;
}

}  // namespace fastreduce::bench
