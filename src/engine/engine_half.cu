// The engine's entry points for half inputs (one translation unit per type).
#include "engine/dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE(__half, Sum)
FASTREDUCE_INSTANTIATE(__half, Prod)
FASTREDUCE_INSTANTIATE(__half, Min)
FASTREDUCE_INSTANTIATE(__half, Max)
