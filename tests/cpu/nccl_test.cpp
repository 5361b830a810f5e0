// The multi-GPU API's host-side rules (no GPU needed): NCCL errors as CUDA errors, and the
// argument checks of CommTransport and LocalGroup.
#include <gtest/gtest.h>

#include "fastreduce/nccl.cuh"

namespace nccl = fastreduce::nccl;

TEST(Nccl, ErrorsMapToCudaErrors) {
  EXPECT_EQ(nccl::to_cuda_error(ncclSuccess), cudaSuccess);
  EXPECT_EQ(nccl::to_cuda_error(ncclInvalidArgument), cudaErrorInvalidValue);
  EXPECT_EQ(nccl::to_cuda_error(ncclInvalidUsage), cudaErrorInvalidValue);
  EXPECT_EQ(nccl::to_cuda_error(ncclSystemError), cudaErrorOperatingSystem);
  EXPECT_EQ(nccl::to_cuda_error(ncclInProgress), cudaErrorNotSupported);
  EXPECT_EQ(nccl::to_cuda_error(ncclInternalError), cudaErrorUnknown);
  EXPECT_EQ(nccl::to_cuda_error(ncclRemoteError), cudaErrorUnknown);
  EXPECT_NE(nccl::to_cuda_error(ncclUnhandledCudaError), cudaSuccess);
}

TEST(Nccl, NullCommunicatorIsAnError) {
  const nccl::CommTransport transport(nullptr);
  EXPECT_EQ(transport.status(), cudaErrorInvalidValue);
  EXPECT_NE(transport.last_error().find("null"), std::string::npos);
  std::size_t bytes = 0;
  EXPECT_EQ(nccl::reduce_async(nullptr, bytes, ncclComm_t{}, static_cast<const float*>(nullptr), 0,
                               static_cast<float*>(nullptr)),
            cudaErrorInvalidValue);
  EXPECT_THROW((void)nccl::reduce(ncclComm_t{}, static_cast<const float*>(nullptr), 0), fastreduce::Error);
}

TEST(Nccl, LocalGroupSizeIsChecked) {
  EXPECT_THROW(nccl::LocalGroup(0), fastreduce::Error);
  EXPECT_THROW(nccl::LocalGroup(-3), fastreduce::Error);
  EXPECT_THROW(nccl::LocalGroup(nccl::LocalGroup::kMaxRanks + 1), fastreduce::Error);
}
