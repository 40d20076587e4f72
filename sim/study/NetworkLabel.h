// A network's name for people: run folder names, report tables and legends. One short line made
// from the resolved `network` object and the run's worker count ("802.11ax 80 MHz, 8 stations
// within 15 m", "LTE 20 MHz, 4 UEs at 80-400 m", "hybrid: 2 Wi-Fi + 2 LTE + 2 Ethernet",
// "Ethernet 1 Gbit/s"), or the object's `label` when one was given. It names what tells
// networks apart at a glance (standard, width, cell size, link rate); a difference it leaves out
// is shown beside it by the report. analysis/runs.py makes the same label for the report
// (network_label there; tests/analysis/runs_test.py compares the two through
// `gradwire validate`).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace gradwire {

/// The label of a resolved `network` object carrying `workers` workers.
std::string network_label(const nlohmann::json& network, std::int64_t workers);

/// The label as a file-system-safe slug: letters, digits and '.', runs of anything else as one
/// '-' ("802.11ax-80-MHz-8-stations-within-15-m").
std::string label_slug(const std::string& label);

}  // namespace gradwire
