// How long a training step takes in simulated time. Three sources:
//  * measured: the wall time the real LibTorch step took here, times `scale` (not repeatable);
//  * fixed:    a constant number of seconds per step (repeatable; for network studies);
//  * profile:  a device's sustained training throughput applied to the model's FLOPs, or an
//              explicit seconds-per-sample (repeatable).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nodes/schemes/Worker.h"

namespace gradwire {

struct ComputeSpec;

struct DeviceProfile {
  std::string name;
  double sustained_flops;   ///< training FLOP/s actually achieved (well below peak)
  double step_overhead_s;   ///< per-step fixed cost: kernel launches, optimizer, data loading
  std::string source;       ///< where the numbers come from
  double memory_bandwidth;  ///< sustained bytes/s: the rate of codec passes and the optimizer
  /// Power while the device works (a step's compute, codec work, the optimizer) and while it
  /// waits (for the network, for other workers), watts: what compute energy is charged at.
  double busy_watts;
  double idle_watts;
  std::string power_source;  ///< where the watts come from
};

/// The profiles' names, in table order (what validation offers).
std::vector<std::string> device_profile_names();

/// The named profile; std::invalid_argument when there is none (validation names them first).
const DeviceProfile& device_profile(const std::string& name);

/// Simulated seconds of one SGD optimizer step over `parameters` float32 values on `device`: it
/// streams the parameters, the gradients and (with momentum) the momentum buffer, and writes
/// the parameters and the buffer back.
double optimizer_step_seconds(const DeviceProfile& device, std::int64_t parameters, bool momentum);

/// The named devices `compute.profile` accepts.
const std::vector<DeviceProfile>& device_profiles();

/// Simulated seconds of a worker's optimizer step: a profile device streams the SGD state at
/// its memory bandwidth; measured compute scales the step's wall time; fixed and per-sample
/// compute already cover it (empty function).
std::function<double(double wall_seconds)> optimizer_time_model(const ComputeSpec& spec,
                                                                std::int64_t parameters,
                                                                bool momentum, int rank = 0);

/// Worker `rank`'s device profile, or null when its compute has none (fixed compute, an
/// explicit seconds_per_sample, measured compute without `measured_on`).
const DeviceProfile* worker_device(const ComputeSpec& spec, int rank);

/// How much longer a step measured on this machine takes on worker `rank`'s device: the
/// `measured_on` device's sustained FLOP/s over the worker's (1 without per-device profiles).
double measured_device_factor(const ComputeSpec& spec, int rank);

/// Builds the model for worker `rank`. A training step costs ~3x the forward FLOPs (backward
/// is about twice the forward; Kaplan et al. 2020, "Scaling Laws", sec. 2.1). The result is
/// multiplied by the worker's `slow_workers` scale and, on straggling steps (drawn per worker
/// and step from `seed`, so runs repeat), by the straggler slowdown.
ComputeTimeModel make_compute_time_model(const ComputeSpec& spec,
                                         std::int64_t forward_flops_per_sample,
                                         std::int64_t batch, int rank, std::uint64_t seed);

}  // namespace gradwire
