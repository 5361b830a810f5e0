// The engine's entry points for std::int16_t inputs (one translation unit per type).
#include "fastreduce/detail/axis_dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE_INTEGER(std::int16_t)
