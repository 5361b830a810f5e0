// Explicit instantiations of the ladder for uint32 (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"
#include "ladder/read_bound.cuh"

namespace fastreduce::ladder {
template cudaError_t run<std::uint32_t, Sum>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, Prod>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, Min>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, Max>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, BitAnd>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::uint32_t, BitOr>(const Rung&, const std::uint32_t*, std::uint32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t read_bound<std::uint32_t, Sum>(const std::uint32_t*, std::uint32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::uint32_t, Prod>(const std::uint32_t*, std::uint32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::uint32_t, Min>(const std::uint32_t*, std::uint32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::uint32_t, Max>(const std::uint32_t*, std::uint32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::uint32_t, BitAnd>(const std::uint32_t*, std::uint32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::uint32_t, BitOr>(const std::uint32_t*, std::uint32_t*, std::size_t, cudaStream_t);
}  // namespace fastreduce::ladder
