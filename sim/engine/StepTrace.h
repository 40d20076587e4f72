// A step trace: what a training run did that does not depend on the network, recorded so that
// the same training can be replayed over other networks without computing it again
// (docs/outputs.md, "Step trace"; docs/scenarios.md, "Train once, replay every network").
//
// A synchronous run over TCP with fixed or profile compute trains the same way on every
// network: the same gradients, payloads, losses and evaluations; only when each step ends
// differs. The trace holds, per worker and step, the loss, the compute time, the instants
// backward released each bucket and the optimizer's time; every codec object's calls
// (payload sizes and headers, density, declared work, round shapes: codecs/CodecCallLog.h);
// and every evaluation. A replay drives the run's own collectives and ns-3 with these
// (sim/engine/Engine.h) and produces the same outputs the full co-simulation would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codecs/CodecCallLog.h"
#include "nodes/schemes/Worker.h"
#include "sim/engine/Evaluation.h"

namespace gradwire {

/// One evaluation of the recorded run, after `step` steps.
struct RecordedEvaluation {
  std::int64_t step = 0;
  EvalResult result;
  double consensus_distance = 0;
};

struct StepTrace {
  /// The recorded run's resolved scenario (what a replay must agree with but for its network).
  nlohmann::json scenario;
  /// The model's parameter count.
  std::int64_t parameters = 0;
  /// [rank][step]: loss, compute_s, optimizer_s, release_s and participated of each step.
  std::vector<std::vector<StepRecord>> steps;
  std::vector<RecordedEvaluation> evaluations;
  /// [bucket][rank] (rank == workers: the server's instance).
  std::vector<std::vector<CodecCallLog>> codecs;
};

}  // namespace gradwire
