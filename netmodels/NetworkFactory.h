// Resolves a scenario's `network` object into NetworkSettings through the family registry
// (netmodels/NetworkRegistry.h): adding a family touches netmodels/ and nothing else.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "netmodels/NetworkSettings.h"

namespace gradwire {

/// Families this build knows.
std::vector<std::string> network_families();

/// Validates a `network` object (its family's keys, then `transport`) and returns it typed,
/// with every default filled in; ConfigError on bad input, naming `path`.key.
NetworkSettings resolve_network(const nlohmann::json& object, const std::string& path);

}  // namespace gradwire
