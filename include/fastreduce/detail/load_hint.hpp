// How a kernel's 16-byte loads are issued (primitives::load_vec); host-visible so that policies
// can name it.
#pragma once

namespace fastreduce::primitives {

enum class LoadHint {
  ReadOnly,        // ld.global.nc (what __ldg emits)
  StreamPrefetch,  // ld.global.nc, no L1 allocation, L2 prefetches the surrounding 256 bytes
};

}  // namespace fastreduce::primitives
