// A scenario's `compute` section: how a step's compute and the codecs' work become simulated
// time, and what LibTorch runs on.
#pragma once

#include <nlohmann/json.hpp>

#include "common/JsonFields.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

ComputeSpec read_compute(const JsonFields& compute);
/// Expands a `compute.profile` list to one device per worker (ConfigError naming the path
/// when its workers do not add up to `workers`, or a group is not one of `network`'s).
void resolve_worker_profiles(ComputeSpec& compute, int workers, const NetworkSettings& network);
nlohmann::json compute_json(const ComputeSpec& compute);

}  // namespace gradwire
