// The family ops of the Python module for float (see family.cuh).
#include "family.cuh"

namespace fastreduce_python {
FASTREDUCE_PYTHON_FAMILY(float)
}  // namespace fastreduce_python
