// Explicit instantiations of the ladder for float (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"

namespace fastreduce::ladder {
template cudaError_t run<float, Sum>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<float, Prod>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<float, Min>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<float, Max>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
}  // namespace fastreduce::ladder
