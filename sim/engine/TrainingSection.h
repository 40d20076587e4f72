// A scenario's `training` section: workers, steps or epochs, batch, optimizer, evaluation,
// targets and gradient buckets.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/JsonFields.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

/// `tokens`: the dataset yields token sequences (perplexity targets); `train_samples`: the
/// training set's size, for `epochs`. Buckets are read apart (read_buckets): they depend on
/// the topology, faults and participation.
TrainingSpec read_training(const JsonFields& training, bool tokens, std::int64_t train_samples);

/// `training.buckets`: "none" or {"size_mb": 25, "first_mb": 1}. `whole_gradient_for` names
/// what needs the whole gradient after backward ("faults", "participation"; empty: nothing),
/// which makes "none" the default and refuses buckets.
void read_buckets(const JsonFields& training, const TopologyConfig& topology,
                  const std::string& whole_gradient_for, TrainingSpec& spec);

nlohmann::json training_json(const TrainingSpec& training);

}  // namespace gradwire
