// The arg-extremes of the Python module for the integer types (see family.cuh).
#include "family.cuh"

namespace fastreduce_python {
FASTREDUCE_PYTHON_FAMILY(std::int8_t)
FASTREDUCE_PYTHON_FAMILY(std::uint8_t)
FASTREDUCE_PYTHON_FAMILY(std::int16_t)
FASTREDUCE_PYTHON_FAMILY(std::int32_t)
FASTREDUCE_PYTHON_FAMILY(std::int64_t)
}  // namespace fastreduce_python
