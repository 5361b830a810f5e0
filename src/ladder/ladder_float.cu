// Explicit instantiations of the ladder for float (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"
#include "ladder/read_bound.cuh"

namespace fastreduce::ladder {
template cudaError_t run<float, Sum>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<float, Prod>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<float, Min>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<float, Max>(const Rung&, const float*, float*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t read_bound<float, Sum>(const float*, float*, std::size_t, cudaStream_t);
template cudaError_t read_bound<float, Prod>(const float*, float*, std::size_t, cudaStream_t);
template cudaError_t read_bound<float, Min>(const float*, float*, std::size_t, cudaStream_t);
template cudaError_t read_bound<float, Max>(const float*, float*, std::size_t, cudaStream_t);
}  // namespace fastreduce::ladder
