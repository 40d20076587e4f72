// The radios' joules in a run's summary.json: each worker's `radio_j` in the `energy` object's
// `workers` entries (the entry of worker i, created if the summary has none), the server
// host's under `energy.server`, and their sum as `energy.radio_total_j`. Where the summary
// already holds the workers' compute energy (named devices), each worker's, each profile's and
// the run's `total_j` (and the flat `energy_j`) then add the workers' radios; `energy.radio_j`
// is the workers' radio joules. Energy to target is the metrics' own (sim/engine/MetricsRecorder).
#pragma once

#include <cstddef>
#include <map>

#include <nlohmann/json.hpp>

namespace gradwire {

/// `radio_joules` as Network::radio_joules() reports them (host index -> joules; workers are
/// hosts 0..workers-1, a server host comes next). Nothing when it is empty (no radios): the
/// summary keeps whatever `energy` it has. A worker without a radio (an Ethernet host of a
/// hybrid network) gets `radio_j` null.
void add_radio_energy(nlohmann::json& summary, const std::map<std::size_t, double>& radio_joules,
                      std::size_t workers);

}  // namespace gradwire
