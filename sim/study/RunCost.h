// What a run costs in wall time, measured on a short pilot run of the same scenario, so a
// screening can be sized to a budget before it starts: a fixed start-up (loading data, building
// the network, writing outputs), a price per training step and a price per evaluation.
#pragma once

#include <cstdint>
#include <string>

namespace gradwire {

struct RunCost {
  double startup_s = 0;  ///< process start to the first step, plus writing the outputs
  double step_s = 0;     ///< wall seconds per training step (median between evaluations)
  double eval_s = 0;     ///< wall seconds per evaluation
  /// Simulated compute seconds of a step (median over steps of the workers' mean compute_s).
  double step_compute_s = 0;

  /// Wall seconds of a run of `steps` steps with `evals` evaluations.
  double estimate_s(std::int64_t steps, std::int64_t evals) const;

  /// Reads a finished run's metrics.jsonl (cumulative `wall_time_s` on every record). `elapsed_s`
  /// is the wall time of the whole process that made it, start-up included. Throws
  /// std::runtime_error when the folder holds no step records.
  static RunCost from_run(const std::string& run_dir, double elapsed_s);
};

}  // namespace gradwire
