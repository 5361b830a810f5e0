// Explicit instantiations of the ladder for double (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"

namespace fastreduce::ladder {
template cudaError_t run<double, Sum>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<double, Prod>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<double, Min>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<double, Max>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
}  // namespace fastreduce::ladder
