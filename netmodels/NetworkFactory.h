// Builds the ns-3 network named by a scenario's `network` object, through the family registry
// (netmodels/NetworkRegistry.h): adding a family touches netmodels/ and the schema, nothing else.
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
/// input, naming `path`.key). `transport` is carried through unchecked: the transport layer
/// (TransportConfig) validates it.
nlohmann::json resolve_network(const nlohmann::json& object, const std::string& path);

/// Largest IP packet the hosts' links carry (the family's `mtu`, 1500 when it has none).
std::uint32_t network_mtu(const nlohmann::json& resolved);

/// Builds a resolved network with `hosts` application hosts into the current simulation.
std::unique_ptr<Network> build_network(const nlohmann::json& resolved, std::size_t hosts);

}  // namespace gradwire
