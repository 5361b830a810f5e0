// Explicit instantiations of the ladder for int32 (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"
#include "ladder/read_bound.cuh"

namespace fastreduce::ladder {
template cudaError_t run<std::int32_t, Sum>(const Rung&, const std::int32_t*, std::int32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int32_t, Prod>(const Rung&, const std::int32_t*, std::int32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int32_t, Min>(const Rung&, const std::int32_t*, std::int32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int32_t, Max>(const Rung&, const std::int32_t*, std::int32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int32_t, BitAnd>(const Rung&, const std::int32_t*, std::int32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int32_t, BitOr>(const Rung&, const std::int32_t*, std::int32_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t read_bound<std::int32_t, Sum>(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::int32_t, Prod>(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::int32_t, Min>(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::int32_t, Max>(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::int32_t, BitAnd>(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t);
template cudaError_t read_bound<std::int32_t, BitOr>(const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t);
}  // namespace fastreduce::ladder
