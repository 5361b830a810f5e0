// Pieces every rung kernel shares: the dynamic shared-memory array and the launch shape.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace fastreduce::ladder {

// The block's dynamic shared memory viewed as T. (One raw array for all T: an
// `extern __shared__ T sdata[]` per template instance would conflict across types.)
template <class T>
__device__ __forceinline__ T* shared_slots() {
  extern __shared__ __align__(16) unsigned char shared_raw[];
  return reinterpret_cast<T*>(shared_raw);
}

// Shared memory a rung with a last-warp tail needs: the tail of warp 0 reads up to slot 63,
// so a 32-thread block gets 64 slots and fills the upper 32 with the identity.
inline std::size_t tail_shared_bytes(unsigned block, std::size_t elem_size) {
  return (block < 64 ? 64 : block) * elem_size;
}

}  // namespace fastreduce::ladder
