// The runs of segment pieces that the warps of a segmented reduction take (segments.cuh,
// repro_segments.cuh): host and device share them, so that the CPU tests check the indexing.
#pragma once

#include <cstddef>

#include "fastreduce/detail/exact_arith.hpp"  // FASTREDUCE_HOST_DEVICE

namespace fastreduce::engine {

// The run of pieces [first, last) of worker w of `workers` (at most the grid's warps; fewer when
// there are few pieces, about kMinRun a run, so that every run has at least one).
inline constexpr unsigned kMinRun = 2;
struct PieceRun {
  unsigned long long first, last;
};
FASTREDUCE_HOST_DEVICE std::size_t active_workers(unsigned long long total, std::size_t warps) {
  const unsigned long long wanted = (total + kMinRun - 1) / kMinRun;
  return wanted < warps ? static_cast<std::size_t>(wanted > 0 ? wanted : 1) : warps;
}
FASTREDUCE_HOST_DEVICE PieceRun piece_run(unsigned long long total, std::size_t w, std::size_t workers) {
  if (w >= workers) return {total, total};
  return {total * w / workers, total * (w + 1) / workers};
}

// The worker whose run (piece_run, of `workers` runs of `total` pieces) holds piece p < total.
FASTREDUCE_HOST_DEVICE std::size_t worker_of_piece(unsigned long long total, std::size_t workers, unsigned long long p) {
  // The last worker whose run starts at or before p: total * w / workers <= p.
  std::size_t w = static_cast<std::size_t>(((p + 1) * workers - 1) / total);
  while (w + 1 < workers && piece_run(total, w + 1, workers).first <= p) ++w;
  while (w > 0 && piece_run(total, w, workers).first > p) --w;
  return w;
}

}  // namespace fastreduce::engine
