// Which runs a step trace can replay exactly (sim/engine/StepTrace.h), and whether a trace
// belongs to a run. A replay is allowed only where nothing the network does can reach the
// training: the workers meet in a synchronous collective (ring, synchronous parameter server),
// every byte arrives (TCP), compute and codec time come from the scenario (fixed or profile,
// not measured), no worker leaves, and no round samples its clients. Everything else is
// refused, naming the key, never approximated (docs/scenarios.md, "Train once, replay every
// network").
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/ConfigError.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

struct StepTrace;

/// Why `scenario` cannot be replayed from a trace (the key that prevents it), or nothing.
std::optional<ConfigError> replay_refusal(const Scenario& scenario);

/// What decides a run's training in its resolved scenario: all of it but the name, the output
/// folder and the network (whose transport stays: it decides whether bytes can be lost).
nlohmann::json training_identity(const nlohmann::json& resolved);

/// The first path ("training.steps", "codec.ratio") at which two JSON values differ; empty
/// when they are equal.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b,
                             const std::string& path = "");

/// Throws ConfigError("--replay", ...) unless `trace_scenario` (a trace's recorded scenario)
/// trains as `scenario` does, naming the first key that differs.
void check_trace_matches(const Scenario& scenario, const nlohmann::json& trace_scenario,
                         const std::string& trace_path);

/// Throws ConfigError("compute.codec_time", ...) when `scenario` charges codec time and a codec
/// of `trace` did different work for two decodes of one payload size (DGC's decode depends on
/// how many values a payload holds, not only its bytes): the trace keeps only sizes, so that
/// time cannot be replayed. Checked before anything runs, so a sweep trains such a run in full.
void check_codec_time_replayable(const Scenario& scenario, const StepTrace& trace,
                                 const std::string& trace_path);

}  // namespace gradwire
