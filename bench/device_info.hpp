// Facts about the GPU that the tables need: name, SMs, L2, theoretical and copy bandwidth.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace fastreduce::bench {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int sms = 0;
  std::size_t l2_bytes = 0;
  std::size_t memory_bytes = 0;
  double memory_clock_mhz = 0;  // peak memory clock
  int bus_width_bits = 0;
  // The lecture's formula: 2 (double data rate) x memory clock x bus width / 8.
  [[nodiscard]] double theoretical_gbps() const {
    return 2.0 * memory_clock_mhz * 1e6 * (bus_width_bits / 8.0) / 1e9;
  }
};

// The current device, or nothing when no CUDA device is usable (the reason goes to `why`).
std::optional<DeviceInfo> current_device(std::string* why = nullptr);

// Device-to-device copy rate in GB/s counting bytes read plus bytes written (median of runs).
double measure_copy_gbps(std::size_t bytes = std::size_t(1) << 30);

// The one line every GPU command prints when there is no device.
inline constexpr const char* kNoDevice = "no CUDA device found";

}  // namespace fastreduce::bench
