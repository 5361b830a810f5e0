// The engine's entry points for __nv_bfloat16 inputs (one translation unit per type).
#include "fastreduce/detail/axis_dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE_FLOATING(__nv_bfloat16)
FASTREDUCE_INSTANTIATE_NARROW_ALL(__nv_bfloat16)
