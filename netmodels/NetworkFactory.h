// Builds the ns-3 network named by a scenario's `network` object. The only place that maps a
// family name to a builder: adding a family touches netmodels/ and the schema, nothing else.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "netmodels/Network.h"

namespace gradwire {

/// Families this build knows.
std::vector<std::string> network_families();

/// Validates a `network` object and returns it with defaults filled in (ConfigError on bad
/// input, naming `path`.key).
nlohmann::json resolve_network(const nlohmann::json& object, const std::string& path);

/// Builds a resolved network with `hosts` application hosts into the current simulation.
std::unique_ptr<Network> build_network(const nlohmann::json& resolved, std::size_t hosts);

}  // namespace gradwire
