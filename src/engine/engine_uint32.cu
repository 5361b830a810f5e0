// The engine's entry points for std::uint32_t inputs (one translation unit per type).
#include "fastreduce/detail/axis_dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE_INTEGER(std::uint32_t)
FASTREDUCE_INSTANTIATE_WIDE_ALL(std::uint32_t)
