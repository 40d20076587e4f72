// The radios' joules in a run's summary.json: each worker's `radio_j` in the `energy` object's
// `workers` entries (the entry of worker i, created if the summary has none), the server
// host's under `energy.server`, and their sum as `energy.radio_total_j`. Compute energy is
// written into the same entries elsewhere; this adds only the radio's part.
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
