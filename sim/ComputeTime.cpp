#include "sim/ComputeTime.h"

#include <stdexcept>

#include "sim/Scenario.h"

namespace gradwire {

const std::vector<DeviceProfile>& device_profiles() {
  // Sustained rates assume ~40-50% of the vendor's fp32 peak, typical of data-parallel CNN
  // training (peaks: NVIDIA data sheets). Overheads are order-of-magnitude figures for a
  // framework step on each class of device.
  static const std::vector<DeviceProfile> kProfiles = {
      {"raspberry-pi-4", 6e9, 5e-3, "Cortex-A72 x4, ~13.5 GFLOP/s fp32 peak (NEON)"},
      {"jetson-nano", 1.2e11, 4e-3, "Maxwell 128 cores, 236 GFLOP/s fp32 peak"},
      {"cpu-core", 2.0e10, 1e-3, "one modern x86 core with AVX2, ~50 GFLOP/s fp32 peak"},
      {"gtx-1080ti", 5.0e12, 2e-3, "Pascal, 11.3 TFLOP/s fp32 peak (the DGC paper's era)"},
      {"titan-xp", 5.5e12, 2e-3, "Pascal, 12.1 TFLOP/s fp32 peak"},
      {"v100", 7.0e12, 1.5e-3, "Volta, 15.7 TFLOP/s fp32 peak"},
      {"a100", 9.0e12, 1e-3, "Ampere, 19.5 TFLOP/s fp32 peak (no TF32)"},
  };
  return kProfiles;
}

ComputeTimeModel make_compute_time_model(const ComputeSpec& spec,
                                         std::int64_t forward_flops_per_sample,
                                         std::int64_t batch) {
  if (spec.mode == "measured") {
    const double scale = spec.scale;
    return [scale](double wall) { return wall * scale; };
  }
  if (spec.mode == "fixed") {
    const double seconds = spec.seconds;
    return [seconds](double) { return seconds; };
  }
  if (spec.mode == "profile") {
    if (spec.seconds_per_sample > 0) {
      const double seconds = spec.seconds_per_sample * static_cast<double>(batch);
      return [seconds](double) { return seconds; };
    }
    for (const auto& p : device_profiles()) {
      if (p.name == spec.profile) {
        const double seconds = p.step_overhead_s + 3.0 * static_cast<double>(forward_flops_per_sample) *
                                                       static_cast<double>(batch) /
                                                       p.sustained_flops;
        return [seconds](double) { return seconds; };
      }
    }
    throw std::invalid_argument("unknown device profile " + spec.profile);
  }
  throw std::invalid_argument("unknown compute mode " + spec.mode);
}

}  // namespace gradwire
