#include "sim/engine/ComputeTime.h"

#include <stdexcept>

#include "sim/engine/Scenario.h"

namespace gradwire {

const std::vector<DeviceProfile>& device_profiles() {
  // Sustained rates assume ~40-50% of the vendor's fp32 peak, typical of data-parallel CNN
  // training (peaks: NVIDIA data sheets). Overheads are order-of-magnitude figures for a
  // framework step on each class of device.
  static const std::vector<DeviceProfile> kProfiles = {
      {"raspberry-pi-4", 6e9, 5e-3, "Cortex-A72 x4, ~13.5 GFLOP/s fp32 peak (NEON)", 4e9},
      {"jetson-nano", 1.2e11, 4e-3, "Maxwell 128 cores, 236 GFLOP/s fp32 peak", 1.5e10},
      {"cpu-core", 2.0e10, 1e-3, "one modern x86 core with AVX2, ~50 GFLOP/s fp32 peak", 1.2e10},
      {"gtx-1080ti", 5.0e12, 2e-3, "Pascal, 11.3 TFLOP/s fp32 peak (the DGC paper's era)", 3.6e11},
      {"titan-xp", 5.5e12, 2e-3, "Pascal, 12.1 TFLOP/s fp32 peak", 4.1e11},
      {"v100", 7.0e12, 1.5e-3, "Volta, 15.7 TFLOP/s fp32 peak", 7.5e11},
      {"a100", 9.0e12, 1e-3, "Ampere, 19.5 TFLOP/s fp32 peak (no TF32)", 1.3e12},
      // Memory bandwidths: ~75% of the data sheet's peak for GPUs (what STREAM-like kernels
      // reach), ~35-60% for the boards' shared LPDDR and one x86 core's share of DDR4.
      // Current devices. Peaks from the vendors' data sheets (dense, no sparsity); the same
      // ~40-45% sustained share for GPUs, ~20% for CPUs, whose framework kernels reach less.
      {"raspberry-pi-5", 3.0e10, 4e-3,
       "Cortex-A76 x4 at 2.4 GHz, ~154 GFLOP/s fp32 peak (2 x 128-bit NEON FMA per core)", 1.0e10},
      {"jetson-orin-nano", 5.5e11, 3e-3,
       "Orin Nano 8GB, Ampere 1024 cores at 625 MHz, 1.28 TFLOP/s fp32 peak", 5.0e10},
      {"jetson-agx-orin", 2.3e12, 2.5e-3,
       "AGX Orin 64GB, Ampere 2048 cores at 1.3 GHz, 5.3 TFLOP/s fp32 peak", 1.5e11},
      {"rtx-4090", 3.5e13, 1e-3, "Ada, 82.6 TFLOP/s fp32 peak", 8.0e11},
      {"a100-tf32", 6.5e13, 1e-3, "Ampere, 156 TFLOP/s TF32 tensor-core peak", 1.3e12},
      {"a100-bf16", 1.3e14, 1e-3, "Ampere, 312 TFLOP/s BF16 tensor-core peak", 1.3e12},
      {"h100-bf16", 4.0e14, 7e-4, "H100 SXM, Hopper, 989 TFLOP/s BF16 tensor-core peak", 2.6e12},
  };
  return kProfiles;
}

std::vector<std::string> device_profile_names() {
  std::vector<std::string> names;
  for (const auto& p : device_profiles()) names.push_back(p.name);
  return names;
}

const DeviceProfile& device_profile(const std::string& name) {
  for (const auto& p : device_profiles()) {
    if (p.name == name) return p;
  }
  throw std::invalid_argument("unknown device profile " + name);
}

double optimizer_step_seconds(const DeviceProfile& device, std::int64_t parameters,
                              bool momentum) {
  // Reads: parameters, gradients (+ momentum buffer); writes: parameters (+ buffer).
  const double passes = momentum ? 5.0 : 3.0;
  return passes * 4.0 * static_cast<double>(parameters) / device.memory_bandwidth;
}

std::function<double(double)> optimizer_time_model(const ComputeSpec& spec,
                                                   std::int64_t parameters, bool momentum) {
  if (spec.mode == "measured") {
    const double scale = spec.scale;
    return [scale](double wall) { return wall * scale; };
  }
  if (spec.mode == "profile" && !spec.profile.empty()) {
    const double seconds =
        optimizer_step_seconds(device_profile(spec.profile), parameters, momentum);
    return [seconds](double) { return seconds; };
  }
  return nullptr;
}

namespace {

// SplitMix64 (Steele et al. 2014): a stateless hash of (seed, rank, step) to a uniform draw,
// so whether a step straggles does not depend on the order events happen in.
double uniform_draw(std::uint64_t seed, int rank, std::int64_t step) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(rank) * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(step) * 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

ComputeTimeModel base_compute_time_model(const ComputeSpec& spec,
                                         std::int64_t forward_flops_per_sample,
                                         std::int64_t batch) {
  if (spec.mode == "measured") {
    const double scale = spec.scale;
    return [scale](double wall, std::int64_t) { return wall * scale; };
  }
  if (spec.mode == "fixed") {
    const double seconds = spec.seconds;
    return [seconds](double, std::int64_t) { return seconds; };
  }
  if (spec.mode == "profile") {
    if (spec.seconds_per_sample > 0) {
      const double seconds = spec.seconds_per_sample * static_cast<double>(batch);
      return [seconds](double, std::int64_t) { return seconds; };
    }
    const std::int64_t flops =
        spec.flops_per_sample > 0 ? spec.flops_per_sample : forward_flops_per_sample;
    const DeviceProfile& p = device_profile(spec.profile);
    const double seconds = p.step_overhead_s + 3.0 * static_cast<double>(flops) *
                                                   static_cast<double>(batch) / p.sustained_flops;
    return [seconds](double, std::int64_t) { return seconds; };
  }
  throw std::invalid_argument("unknown compute mode " + spec.mode);
}

}  // namespace

ComputeTimeModel make_compute_time_model(const ComputeSpec& spec,
                                         std::int64_t forward_flops_per_sample,
                                         std::int64_t batch, int rank, std::uint64_t seed) {
  ComputeTimeModel base = base_compute_time_model(spec, forward_flops_per_sample, batch);
  const double scale = static_cast<std::size_t>(rank) < spec.worker_scale.size()
                           ? spec.worker_scale[static_cast<std::size_t>(rank)]
                           : 1.0;
  const double p = spec.straggler_probability;
  const double slowdown = spec.straggler_slowdown;
  if (scale == 1.0 && p <= 0) return base;
  return [base, scale, p, slowdown, seed, rank](double wall, std::int64_t step) {
    double t = base(wall, step) * scale;
    if (p > 0 && uniform_draw(seed, rank, step) < p) t *= slowdown;
    return t;
  };
}

}  // namespace gradwire
