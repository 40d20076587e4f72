// Wires one run: dataset and shards, the ns-3 network, a Messenger per host, codecs, the
// collective and the Worker applications; runs ns-3's event loop (whose clock is the training
// clock) and writes runs/<name>/{scenario.json, metrics.jsonl, summary.json}.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/Scenario.h"

namespace gradwire {

struct RunResult {
  nlohmann::json summary;
  std::string metrics_jsonl;  ///< the metrics lines, as written
  std::string directory;      ///< where outputs went ("" when none were written)
  /// The evaluated model's parameters when the run ended, flat in forward order (the scheme's
  /// model, or worker 0's where the replicas agree): what tests compare runs by.
  std::vector<float> final_parameters;
};

class Engine {
 public:
  explicit Engine(Scenario scenario);

  /// Runs the scenario. Writes outputs under `<out_dir>/<name>/` when `out_dir` is not empty.
  /// Progress lines go to `progress` (may be null). Throws ConfigError for problems that
  /// depend on this machine (missing dataset, CUDA not available), std::exception otherwise;
  /// nothing is left in `out_dir` on failure.
  RunResult run(const std::string& out_dir, std::ostream* progress);

 private:
  Scenario scenario_;
};

}  // namespace gradwire
