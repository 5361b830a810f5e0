// The engine's entry points for __half inputs (one translation unit per type).
#include "fastreduce/detail/axis_dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE_FLOATING(__half)
FASTREDUCE_INSTANTIATE_NARROW_ALL(__half)
