// The engine's entry points for bfloat16 inputs (one translation unit per type).
#include "engine/dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE(__nv_bfloat16, Sum)
FASTREDUCE_INSTANTIATE(__nv_bfloat16, Prod)
FASTREDUCE_INSTANTIATE(__nv_bfloat16, Min)
FASTREDUCE_INSTANTIATE(__nv_bfloat16, Max)
