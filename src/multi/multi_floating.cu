// The multi-rank entry points for the floating-point input types.
#include "multi/multi.cuh"

using namespace fastreduce;

FASTREDUCE_INSTANTIATE_NCCL_FLOATING(float)
FASTREDUCE_INSTANTIATE_NCCL_FLOATING(double)
FASTREDUCE_INSTANTIATE_NCCL_FLOATING(__half)
FASTREDUCE_INSTANTIATE_NCCL_FLOATING(__nv_bfloat16)
