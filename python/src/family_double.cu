// The family ops of the Python module for double (see family.cuh).
#include "family.cuh"

namespace fastreduce_python {
FASTREDUCE_PYTHON_FAMILY(double)
}  // namespace fastreduce_python
