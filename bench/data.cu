#include <chrono>
#include <cmath>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <type_traits>

#include "data.hpp"

namespace fastreduce::bench {

namespace {

__host__ __device__ inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class T>
__global__ void fill_kernel(T* d, std::size_t n, std::uint64_t seed, Distribution dist, bool clear,
                            double near_one_width) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint64_t bits = splitmix64(seed ^ splitmix64(i));
    const double unit = double(bits >> 11) * 0x1.0p-53;  // [0, 1)
    if constexpr (std::is_same_v<T, bool>) {
      d[i] = (bits >> 17) & 1;  // true and false alike, whatever the distribution
    } else if constexpr (std::is_integral_v<T>) {
      T value{};
      switch (dist) {
        case Distribution::Positive: value = static_cast<T>(bits % 1024); break;
        case Distribution::Signed:
        case Distribution::WideExponents: value = static_cast<T>(bits); break;
        case Distribution::NearOne: value = static_cast<T>(bits | 1u); break;
        case Distribution::SmallIntegers: value = static_cast<T>(1 + bits % 15); break;
        case Distribution::SignedSmallIntegers:
          value = static_cast<T>((bits >> 32) & 1 ? -static_cast<long long>(1 + bits % 15) : 1 + bits % 15);
          break;
        case Distribution::SparseBits: {
          const T one_bit = static_cast<T>(T(1) << (bits % (8 * sizeof(T))));
          value = clear ? static_cast<T>(~one_bit) : one_bit;
          break;
        }
      }
      d[i] = value;
    } else {
      double value = 0.0;
      switch (dist) {
        case Distribution::Positive: value = 0.5 + unit; break;
        case Distribution::Signed: value = 2.0 * unit - 1.0; break;
        case Distribution::NearOne: value = 1.0 + near_one_width * (2.0 * unit - 1.0); break;
        case Distribution::SmallIntegers: value = double(1 + bits % 15); break;
        // A sum over any fixed set of k such values has mean 0 and deviation 9.1 sqrt(k): for k up
        // to 2^33 it stays below 2^24 (so it is exact in float) except with probability under
        // e^-190 (20 deviations), so every partial sum of a summation order that does not depend
        // on the data is exact.
        case Distribution::SignedSmallIntegers:
          value = (bits >> 32) & 1 ? -double(1 + bits % 15) : double(1 + bits % 15);
          break;
        case Distribution::SparseBits: value = 0.5 + unit; break;
        case Distribution::WideExponents: {
          // The exponent range of T's values, the lowest reaching into subnormals, the highest
          // kept 31 below the accumulator's largest so that 2^30 elements cannot overflow the sum
          // (half: its whole finite range, since it sums in float).
          constexpr int lo = std::is_same_v<T, double> ? -1060 : std::is_same_v<T, __half> ? -24 : -140;
          constexpr int hi = std::is_same_v<T, double> ? 1023 - 31 : std::is_same_v<T, __half> ? 14 : 127 - 31;
          const std::uint64_t more = splitmix64(bits);  // exponent and sign, apart from unit's bits
          const int k = lo + static_cast<int>(more % static_cast<std::uint64_t>(hi - lo + 1));
          value = std::ldexp((more >> 63) != 0 ? -(1.0 + unit) : 1.0 + unit, k);
          break;
        }
      }
      if constexpr (std::is_same_v<T, __half>) d[i] = __double2half(value);
      else if constexpr (std::is_same_v<T, __nv_bfloat16>) d[i] = __double2bfloat16(value);
      else d[i] = static_cast<T>(value);
    }
  }
}

}  // namespace

Distribution distribution_for(std::string_view op) {
  if (op == "prod") return Distribution::NearOne;
  if (op == "and" || op == "or" || op == "xor") return Distribution::SparseBits;
  if (op == "min" || op == "max") return Distribution::Signed;
  return Distribution::Positive;
}

template <class T>
cudaError_t fill_random(T* d, std::size_t n, std::uint64_t seed, Distribution dist, bool clear) {
  if (n == 0) return cudaSuccess;
  // Products of n values in [1 - a, 1 + a] drift like a random walk of step a: keep it small.
  const double width = std::fmin(0.5, 4.0 / std::sqrt(double(n)));
  const std::size_t blocks = std::min<std::size_t>((n + 255) / 256, 65536);
  fill_kernel<T><<<static_cast<unsigned>(blocks), 256>>>(d, n, seed, dist, clear, width);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return cudaDeviceSynchronize();
}

template <class T>
std::vector<T> to_host(const T* d, std::size_t n) {
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> packs bits: copy bytes, then convert
    const std::vector<unsigned char> bytes = to_host(reinterpret_cast<const unsigned char*>(d), n);
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> host(n);
    if (n > 0) cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }
}

std::uint64_t fresh_seed() {
  static std::atomic<std::uint64_t> counter{0};
  const auto now = std::chrono::high_resolution_clock::now().time_since_epoch().count();
  return splitmix64(static_cast<std::uint64_t>(now) ^ splitmix64(counter.fetch_add(1)));
}

#define FASTREDUCE_DATA(T)                                                                      \
  template cudaError_t fill_random<T>(T*, std::size_t, std::uint64_t, Distribution, bool);     \
  template std::vector<T> to_host<T>(const T*, std::size_t);
FASTREDUCE_DATA(bool)
FASTREDUCE_DATA(std::int8_t)
FASTREDUCE_DATA(std::uint8_t)
FASTREDUCE_DATA(std::int16_t)
FASTREDUCE_DATA(std::uint16_t)
FASTREDUCE_DATA(std::int32_t)
FASTREDUCE_DATA(std::uint32_t)
FASTREDUCE_DATA(std::int64_t)
FASTREDUCE_DATA(std::uint64_t)
FASTREDUCE_DATA(float)
FASTREDUCE_DATA(double)
FASTREDUCE_DATA(__half)
FASTREDUCE_DATA(__nv_bfloat16)
#undef FASTREDUCE_DATA

}  // namespace fastreduce::bench
