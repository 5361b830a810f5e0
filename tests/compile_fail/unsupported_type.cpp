// Compiled by CTest (compile_error_names_the_type), expected to fail: an input type the library
// has no kernels for is refused at compile time, and the error names it.
#include <fastreduce/fastreduce.cuh>

long double sum_of(const long double* d_in, std::size_t n) { return fastreduce::reduce(d_in, n); }
