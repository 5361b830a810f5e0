// The family ops of the Python module for __half (see family.cuh).
#include "family.cuh"

namespace fastreduce_python {
FASTREDUCE_PYTHON_FAMILY(__half)
}  // namespace fastreduce_python
