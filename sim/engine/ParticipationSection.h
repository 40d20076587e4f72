// A scenario's `participation` section: clients sampled per round, their availability (an
// on/off model or a trace file) and the round's deadline (nodes/schemes/Participation.h).
//
// The trace file is text, one available interval per line:
//
//   # comments start with '#'; blank lines are skipped
//   rank,start_s,end_s        (an optional header line, exactly this)
//   0,0,120.5
//   0,300,inf
//   1,10,50
//
// `rank` is a worker (0 .. training.workers - 1); `start_s` >= 0 and `end_s` > start_s are
// simulated seconds (`end_s` may be `inf`); a rank's intervals come in time order and do not
// overlap. A rank without a line is never available. A bad line is a ConfigError at
// participation.availability.trace naming the file and the line.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ParamSpec.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

/// The section's keys and the availability object's (declared once: reading and the docs).
std::vector<ParamSpec> participation_params();
std::vector<ParamSpec> availability_params();

/// Reads `participation` (absent: not enabled) for a run of `workers`.
ParticipationSpec read_participation(const nlohmann::json& document, int workers);
nlohmann::json participation_json(const ParticipationSpec& participation);

/// Reads a trace (the format above) from `in`; `file` names it in errors.
std::vector<std::vector<AvailableInterval>> read_availability_trace(std::istream& in,
                                                                    const std::string& file,
                                                                    int workers);

}  // namespace gradwire
