// The engine's entry points for double inputs (one translation unit per type).
#include "engine/dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE(double, Sum)
FASTREDUCE_INSTANTIATE(double, Prod)
FASTREDUCE_INSTANTIATE(double, Min)
FASTREDUCE_INSTANTIATE(double, Max)
