// Learning rate per step: linear warm-up from base/warmup_steps (Goyal et al. 2017, as used with
// large-batch and compressed training) then step decay by `gamma` at each milestone.
#pragma once

#include <cstdint>
#include <vector>

namespace gradwire {

struct LearningRateSchedule {
  double base_lr = 0.05;
  std::int64_t warmup_steps = 0;
  std::vector<std::int64_t> milestones;  ///< steps at which lr *= gamma (ascending)
  double gamma = 0.1;

  /// Learning rate used for the update of `step` (0-based).
  double at(std::int64_t step) const {
    double lr = base_lr;
    if (warmup_steps > 0 && step < warmup_steps) {
      lr *= static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    }
    for (std::int64_t m : milestones) {
      if (step >= m) lr *= gamma;
    }
    return lr;
  }
};

}  // namespace gradwire
