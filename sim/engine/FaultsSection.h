// A scenario's `faults`: workers leaving and rejoining at simulated times.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/Scenario.h"

namespace gradwire {

/// `faults`: [{"rank": r, "leave_at": "0.5s", "rejoin_at": "1.2s"}] (rejoin_at optional). One
/// entry per rank; at least one worker must stay. Empty when the document has none.
std::vector<FaultSpec> read_faults(const nlohmann::json& document, int workers);
nlohmann::json faults_json(const std::vector<FaultSpec>& faults);

}  // namespace gradwire
