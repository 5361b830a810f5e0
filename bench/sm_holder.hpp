// Another program's kernel holding part of the GPU, for measurements and tests: one block of a
// spinning kernel on each of `sms` SMs, each block taking all of its SM's shared memory so that
// nothing else fits beside it, until release() (or destruction, or 8 s at most).
#pragma once

#include <cuda_runtime.h>

namespace fastreduce::bench {

class SmHolder {
 public:
  // Starts the holder on a stream of its own and returns once every block is resident (ok()),
  // or after 5 s (not ok()).
  explicit SmHolder(unsigned sms);
  ~SmHolder();
  SmHolder(const SmHolder&) = delete;
  SmHolder& operator=(const SmHolder&) = delete;

  // Every block is resident and none has given up yet.
  [[nodiscard]] bool holding() const { return ok_ && !released_ && count(sms_) == 0; }
  [[nodiscard]] bool ok() const { return ok_; }
  // Lets the blocks go and waits for the kernel to end.
  void release();

 private:
  // How many of the words [first, first + sms) are set.
  [[nodiscard]] unsigned count(unsigned first) const;
  unsigned sms_;
  unsigned* flags_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool ok_ = false;
  bool released_ = false;
};

}  // namespace fastreduce::bench
