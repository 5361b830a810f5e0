// The engine's entry points for int32 inputs (one translation unit per type).
#include "engine/dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE(std::int32_t, Sum)
FASTREDUCE_INSTANTIATE(std::int32_t, Prod)
FASTREDUCE_INSTANTIATE(std::int32_t, Min)
FASTREDUCE_INSTANTIATE(std::int32_t, Max)
FASTREDUCE_INSTANTIATE(std::int32_t, BitAnd)
FASTREDUCE_INSTANTIATE(std::int32_t, BitOr)
FASTREDUCE_INSTANTIATE(std::int32_t, BitXor)
