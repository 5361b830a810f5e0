// Explicit instantiations of the ladder for int64 (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"

namespace fastreduce::ladder {
template cudaError_t run<std::int64_t, Sum>(const Rung&, const std::int64_t*, std::int64_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int64_t, Prod>(const Rung&, const std::int64_t*, std::int64_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int64_t, Min>(const Rung&, const std::int64_t*, std::int64_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int64_t, Max>(const Rung&, const std::int64_t*, std::int64_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int64_t, BitAnd>(const Rung&, const std::int64_t*, std::int64_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<std::int64_t, BitOr>(const Rung&, const std::int64_t*, std::int64_t*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
}  // namespace fastreduce::ladder
