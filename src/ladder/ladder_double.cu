// Explicit instantiations of the ladder for double (one translation unit per type keeps the
// build parallel and each unit small).
#include "ladder/driver.cuh"
#include "ladder/read_bound.cuh"

namespace fastreduce::ladder {
template cudaError_t run<double, Sum>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<double, Prod>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<double, Min>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t run<double, Max>(const Rung&, const double*, double*, std::size_t, unsigned, Workspace&, cudaStream_t, const Limits&);
template cudaError_t read_bound<double, Sum>(const double*, double*, std::size_t, cudaStream_t);
template cudaError_t read_bound<double, Prod>(const double*, double*, std::size_t, cudaStream_t);
template cudaError_t read_bound<double, Min>(const double*, double*, std::size_t, cudaStream_t);
template cudaError_t read_bound<double, Max>(const double*, double*, std::size_t, cudaStream_t);
}  // namespace fastreduce::ladder
