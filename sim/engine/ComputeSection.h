// A scenario's `compute` section: how a step's compute and the codecs' work become simulated
// time, and what LibTorch runs on.
#pragma once

#include <nlohmann/json.hpp>

#include "common/JsonFields.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

ComputeSpec read_compute(const JsonFields& compute);
nlohmann::json compute_json(const ComputeSpec& compute);

}  // namespace gradwire
