#include "sim/engine/ComputeTime.h"

#include <stdexcept>

#include "sim/engine/Scenario.h"

namespace gradwire {

const std::vector<DeviceProfile>& device_profiles() {
  // Sustained rates assume ~40-50% of the vendor's fp32 peak, typical of data-parallel CNN
  // training (peaks: NVIDIA data sheets). Overheads are order-of-magnitude figures for a
  // framework step on each class of device.
  // Power: busy watts are the device's power budget (the vendor's TDP or the board's power
  // mode), an upper bound for a training step; idle watts what it draws doing nothing. Boards
  // are measured at the supply, GPUs are the card alone (the host around them is not counted).
  static const std::vector<DeviceProfile> kProfiles = {
      {"raspberry-pi-4", 6e9, 5e-3, "Cortex-A72 x4, ~13.5 GFLOP/s fp32 peak (NEON)", 4e9, 6.4, 2.7,
       "measured at the supply: idle 2.7 W, 4-core stress 6.4 W (J. Geerling, Raspberry Pi 4 "
       "power consumption benchmarks, Pi Dramble, 2019)"},
      {"jetson-nano", 1.2e11, 4e-3, "Maxwell 128 cores, 236 GFLOP/s fp32 peak", 1.5e10, 10.0, 2.0,
       "busy: the 10 W power mode (NVIDIA Jetson Nano data sheet); idle: estimate"},
      {"cpu-core", 2.0e10, 1e-3, "one modern x86 core with AVX2, ~50 GFLOP/s fp32 peak", 1.2e10,
       10.0, 1.0, "estimate: one core's share of a 65 W 6-8-core desktop part"},
      {"gtx-1080ti", 5.0e12, 2e-3, "Pascal, 11.3 TFLOP/s fp32 peak (the DGC paper's era)", 3.6e11,
       250.0, 15.0, "busy: 250 W board power (NVIDIA GeForce GTX 1080 Ti specifications); idle: estimate"},
      {"titan-xp", 5.5e12, 2e-3, "Pascal, 12.1 TFLOP/s fp32 peak", 4.1e11, 250.0, 15.0,
       "busy: 250 W board power (NVIDIA TITAN Xp specifications); idle: estimate"},
      {"v100", 7.0e12, 1.5e-3, "Volta, 15.7 TFLOP/s fp32 peak", 7.5e11, 300.0, 40.0,
       "busy: 300 W TDP, SXM2 (NVIDIA Tesla V100 data sheet); idle: estimate"},
      {"a100", 9.0e12, 1e-3, "Ampere, 19.5 TFLOP/s fp32 peak (no TF32)", 1.3e12, 400.0, 50.0,
       "busy: 400 W TDP, SXM4 (NVIDIA A100 Tensor Core GPU data sheet); idle: estimate"},
      // Memory bandwidths: ~75% of the data sheet's peak for GPUs (what STREAM-like kernels
      // reach), ~35-60% for the boards' shared LPDDR and one x86 core's share of DDR4.
      // Current devices. Peaks from the vendors' data sheets (dense, no sparsity); the same
      // ~40-45% sustained share for GPUs, ~20% for CPUs, whose framework kernels reach less.
      {"raspberry-pi-5", 3.0e10, 4e-3,
       "Cortex-A76 x4 at 2.4 GHz, ~154 GFLOP/s fp32 peak (2 x 128-bit NEON FMA per core)", 1.0e10,
       7.0, 2.7,
       "measured at the supply: idle 2.7 W, 4-core stress ~7 W (J. Geerling, Raspberry Pi 5 "
       "power consumption benchmarks, 2023)"},
      {"jetson-orin-nano", 5.5e11, 3e-3,
       "Orin Nano 8GB, Ampere 1024 cores at 625 MHz, 1.28 TFLOP/s fp32 peak", 5.0e10, 15.0, 4.0,
       "busy: the 15 W power mode, whose GPU clock is 625 MHz (7 W mode: 408 MHz; NVIDIA Jetson "
       "Orin Nano Series data sheet); idle: estimate"},
      {"jetson-agx-orin", 2.3e12, 2.5e-3,
       "AGX Orin 64GB, Ampere 2048 cores at 1.3 GHz, 5.3 TFLOP/s fp32 peak", 1.5e11, 60.0, 10.0,
       "busy: the 60 W MAXN power mode (NVIDIA Jetson AGX Orin Series data sheet); idle: estimate"},
      {"rtx-4090", 3.5e13, 1e-3, "Ada, 82.6 TFLOP/s fp32 peak", 8.0e11, 450.0, 20.0,
       "busy: 450 W total graphics power (NVIDIA GeForce RTX 4090 specifications); idle: estimate"},
      {"a100-tf32", 6.5e13, 1e-3, "Ampere, 156 TFLOP/s TF32 tensor-core peak", 1.3e12, 400.0, 50.0,
       "busy: 400 W TDP, SXM4 (NVIDIA A100 Tensor Core GPU data sheet); idle: estimate"},
      {"a100-bf16", 1.3e14, 1e-3, "Ampere, 312 TFLOP/s BF16 tensor-core peak", 1.3e12, 400.0, 50.0,
       "busy: 400 W TDP, SXM4 (NVIDIA A100 Tensor Core GPU data sheet); idle: estimate"},
      {"h100-bf16", 4.0e14, 7e-4, "H100 SXM, Hopper, 989 TFLOP/s BF16 tensor-core peak", 2.6e12,
       700.0, 70.0, "busy: 700 W TDP, SXM5 (NVIDIA H100 Tensor Core GPU data sheet); idle: estimate"},
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

const DeviceProfile* worker_device(const ComputeSpec& spec, int rank) {
  if (spec.mode == "fixed") return nullptr;
  if (spec.mode == "measured" && spec.measured_on.empty()) return nullptr;
  const std::string& name = spec.profile_of(rank);
  return name.empty() ? nullptr : &device_profile(name);
}

double measured_device_factor(const ComputeSpec& spec, int rank) {
  if (spec.measured_on.empty()) return 1.0;
  return device_profile(spec.measured_on).sustained_flops /
         device_profile(spec.profile_of(rank)).sustained_flops;
}

std::function<double(double)> optimizer_time_model(const ComputeSpec& spec,
                                                   std::int64_t parameters, bool momentum,
                                                   int rank) {
  if (spec.mode == "measured") {
    const double scale = spec.scale * measured_device_factor(spec, rank);
    return [scale](double wall) { return wall * scale; };
  }
  if (spec.mode == "profile" && !spec.profile_of(rank).empty()) {
    const double seconds =
        optimizer_step_seconds(device_profile(spec.profile_of(rank)), parameters, momentum);
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
                                         std::int64_t batch, int rank) {
  if (spec.mode == "measured") {
    // The step this machine ran, on the worker's device: slower or faster by the ratio of
    // their sustained throughputs (1 when no devices are named).
    const double scale = spec.scale * measured_device_factor(spec, rank);
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
    const DeviceProfile& p = device_profile(spec.profile_of(rank));
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
  ComputeTimeModel base = base_compute_time_model(spec, forward_flops_per_sample, batch, rank);
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
