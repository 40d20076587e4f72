// The rules between a scenario's sections, checked when it is validated, so `gradwire
// validate` and a sweep's expansion refuse whatever a run would refuse, with the JSON path.
#pragma once

#include <cstdint>

#include "sim/engine/Scenario.h"

namespace gradwire {

/// `train_samples`: the training set's size (read once by the loader). ConfigError naming the
/// key a user would change:
///  - dataset: at least one training sample per worker; compute.slow_workers: ranks of workers;
///  - faults: only with a scheme that handles them (sync), not with the scheme's settings it
///    refuses (gossip's tau > 0), not with a multi-round codec, not over UDP;
///  - network: impairment host indices within the run's hosts;
///  - codec: `none` with schemes that send parameters;
///  - model: reads the dataset's samples, its data-dependent sizes (patches, image sides); the
///    run fits in memory (parameters per model, the data set, a batch's activations; named
///    model, training.workers, dataset or training.batch); a TorchScript file that loads,
///    matches the data, trains one step and has one output per class.
void check_scenario_rules(const Scenario& scenario, std::int64_t train_samples);

}  // namespace gradwire
