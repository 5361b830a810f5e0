// The engine's entry points for bool inputs (one translation unit per type).
#include "fastreduce/detail/axis_dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE_INTEGER(bool)
