#include "cli/app.hpp"
#include "cli/table.hpp"
#include "device_info.hpp"

namespace fastreduce::cli {

int run_info(std::ostream& out, std::ostream& err) {
  const auto device = bench::current_device();
  if (!device) {
    err << "fastreduce: " << bench::kNoDevice << '\n';
    return 1;
  }
  const double copy = bench::measure_copy_gbps();
  out << format("GPU                 %s (device %d, compute capability %d.%d)\n", device->name.c_str(),
                device->index, device->compute_major, device->compute_minor);
  out << format("SMs                 %d\n", device->sms);
  out << format("L2 cache            %.1f MB\n", device->l2_bytes / 1e6);
  out << format("memory              %.1f GB, %d-bit bus, %.0f MHz\n", device->memory_bytes / 1e9,
                device->bus_width_bits, device->memory_clock_mhz);
  out << format("theoretical peak    %.0f GB/s  (2 x memory clock x bus width / 8)\n", device->theoretical_gbps());
  out << format("device copy         %.0f GB/s  (read + write, cudaMemcpy 1 GiB, median)  %.1f%% of peak\n",
                copy, 100.0 * copy / device->theoretical_gbps());
  return 0;
}

}  // namespace fastreduce::cli
