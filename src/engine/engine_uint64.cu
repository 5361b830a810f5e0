// The engine's entry points for uint64 inputs (one translation unit per type).
#include "engine/dispatch.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE(std::uint64_t, Sum)
FASTREDUCE_INSTANTIATE(std::uint64_t, Prod)
FASTREDUCE_INSTANTIATE(std::uint64_t, Min)
FASTREDUCE_INSTANTIATE(std::uint64_t, Max)
FASTREDUCE_INSTANTIATE(std::uint64_t, BitAnd)
FASTREDUCE_INSTANTIATE(std::uint64_t, BitOr)
FASTREDUCE_INSTANTIATE(std::uint64_t, BitXor)
