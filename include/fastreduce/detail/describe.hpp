// Which path reduce_async takes, for tests and tools (host only: no kernels in this header).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/detail/plan.hpp"
#include "fastreduce/fastreduce.cuh"

namespace fastreduce::engine {

// The route reduce_async<T, Op> would take for these arguments on the current device (the same
// planning code, without launching anything). T is a storage type (storage_t of the input type).
// Returns the error reduce_async would return from planning, if any.
template <class T, class Op>
cudaError_t describe_launch(const T* d_in, std::size_t n, const Options& opt, Route& route);

// The plan reduce_axis_async<T, Op> would follow for these arguments on the current device.
template <class T, class Op>
cudaError_t describe_axis(const T* d_in, const Axis& axis, const Options& opt, AxisPlan& plan);

}  // namespace fastreduce::engine
