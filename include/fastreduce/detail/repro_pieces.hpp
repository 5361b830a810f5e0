// The reproducible axis kernels' per-output exact accumulators, unrounded: what the multi-rank
// axis sum adds across ranks before rounding (src/multi). Compiled into the engine's translation
// units (engine_<type>.cu), so that its kernels are registered once, by the engine.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/fastreduce.cuh"

namespace fastreduce::engine {

struct PiecesPlan {
  AxisLayout layout{};
  AxisPlan plan{};
  bool empty = true;  // no element: nothing launched, no pieces
  bool exact = false;  // Mode::Exact's lanes: the pieces' total is the outputs' exact sum
  // Pieces per output (each a row of kExactRowWords 8-byte words: signed limbs, then the flags).
  [[nodiscard]] unsigned chunks() const { return empty ? 0u : static_cast<unsigned>(plan.chunks); }
  [[nodiscard]] std::size_t pieces() const { return layout.outputs() * chunks(); }
};

// Plans the reproducible sum of every output of `layout` (length > 0) on `device` into pieces:
// output q's pieces are rows q * chunks() ... (q + 1) * chunks() - 1, whose exact total is the
// output's unrounded sum (Mode::Reproducible: of its tiles' partials; Mode::Exact: of its
// elements). For float, double, __half and __nv_bfloat16 inputs.
template <class T>
cudaError_t plan_repro_pieces(const AxisLayout& layout, const Options& opt, int device, PiecesPlan& out);

// Enqueues the plan's kernels on d_in (the layout's element (0, 0, 0)) into `pieces`.
template <class T>
cudaError_t launch_repro_pieces(const PiecesPlan& plan, const T* d_in, unsigned long long* pieces, cudaStream_t stream);

}  // namespace fastreduce::engine
