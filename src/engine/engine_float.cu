// The engine's entry points for float inputs (one translation unit per type).
#include "engine/dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE(float, Sum)
FASTREDUCE_INSTANTIATE(float, Prod)
FASTREDUCE_INSTANTIATE(float, Min)
FASTREDUCE_INSTANTIATE(float, Max)
