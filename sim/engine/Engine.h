// Wires one run: dataset and shards, the ns-3 network, a Messenger per host, codecs, the
// collective and the Worker applications; runs ns-3's event loop (whose clock is the training
// clock) and writes runs/<name>/{scenario.json, metrics.jsonl, summary.json}.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/Scenario.h"

namespace gradwire {

struct StepTrace;

/// Train once, replay every network (sim/engine/StepTrace.h).
struct TraceOptions {
  /// Record the run's step trace: in RunResult::trace, and as <run>/trace/steps.gwtrace.
  bool record = false;
  /// Replay this trace instead of training: the scenario must train as the trace's did
  /// (ReplaySafety.h); only its network may differ.
  std::shared_ptr<const StepTrace> replay;
  /// Where the replayed trace came from, as summary.json's `replayed_from` says it.
  std::string replay_source;
};

struct RunResult {
  nlohmann::json summary;
  std::string metrics_jsonl;  ///< the metrics lines, as written
  std::string directory;      ///< where outputs went ("" when none were written)
  /// The evaluated model's parameters when the run ended, flat in forward order (the scheme's
  /// model, or worker 0's where the replicas agree): what tests compare runs by.
  std::vector<float> final_parameters;
  /// The recorded step trace (TraceOptions::record); null otherwise.
  std::shared_ptr<const StepTrace> trace;
};

class Engine {
 public:
  explicit Engine(Scenario scenario, TraceOptions trace = {});

  /// Runs the scenario. Writes outputs under `<out_dir>/<name>/` when `out_dir` is not empty.
  /// Progress lines go to `progress` (may be null). Throws ConfigError for problems that
  /// depend on this machine (missing dataset, CUDA not available), std::exception otherwise;
  /// nothing is left in `out_dir` on failure. Recording or replaying a scenario that cannot be
  /// replayed is a ConfigError naming the key (ReplaySafety.h); so is a trace of another
  /// training. A replayed run has no final_parameters (its parameters were not computed).
  RunResult run(const std::string& out_dir, std::ostream* progress);

 private:
  Scenario scenario_;
  TraceOptions trace_;
};

}  // namespace gradwire
