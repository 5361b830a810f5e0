// The engine's entry points for int64 inputs (one translation unit per type).
#include "engine/dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE(std::int64_t, Sum)
FASTREDUCE_INSTANTIATE(std::int64_t, Prod)
FASTREDUCE_INSTANTIATE(std::int64_t, Min)
FASTREDUCE_INSTANTIATE(std::int64_t, Max)
FASTREDUCE_INSTANTIATE(std::int64_t, BitAnd)
FASTREDUCE_INSTANTIATE(std::int64_t, BitOr)
FASTREDUCE_INSTANTIATE(std::int64_t, BitXor)
