// Explicit instantiations of the ladder for uint32 (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"

namespace fastreduce::ladder {
template cudaError_t run<std::uint32_t, Sum>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, Prod>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, Min>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, Max>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, BitAnd>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, BitOr>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
}  // namespace fastreduce::ladder
