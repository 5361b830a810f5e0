// The family ops of the Python module for __nv_bfloat16 (see family.cuh).
#include "family.cuh"

namespace fastreduce_python {
FASTREDUCE_PYTHON_FAMILY(__nv_bfloat16)
}  // namespace fastreduce_python
