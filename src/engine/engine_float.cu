// The engine's entry points for float inputs (one translation unit per type).
#include "fastreduce/detail/axis_dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE_FLOATING(float)
