// A resolved `network` object, typed: the family it names, the transport its messages take,
// the MTU of its links and the family's own configuration, every default filled in. Resolved
// once (resolve_network, netmodels/NetworkFactory.h) and then used as is: the run builds the
// network from it, the transport reads its kind and MTU, the run's scenario.json writes its
// to_json(). Copies share the one configuration, which never changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "netmodels/FamilyConfig.h"
#include "netmodels/Network.h"
#include "netmodels/TransportConfig.h"

namespace gradwire {

class NetworkSettings {
 public:
  /// Not resolved yet (a Scenario before it is loaded): no family, and nothing to build.
  NetworkSettings() = default;
  NetworkSettings(std::string family, std::shared_ptr<const FamilyConfig> config,
                  TransportConfig transport, std::string label = "");

  /// `network.family` ("ethernet", ...); empty when not resolved.
  const std::string& family() const { return family_; }
  /// How gradwire's messages cross the network (`network.transport`).
  const TransportConfig& transport() const { return transport_; }
  /// `network.label`: the name a person gave the network (empty: none given).
  const std::string& label() const { return label_; }
  /// Largest IP packet the hosts' links carry, bytes.
  std::uint32_t mtu() const;
  /// The family's typed configuration; std::logic_error when not resolved.
  const FamilyConfig& config() const;

  /// The resolved `network` object, `transport` and `label` included (null when not resolved):
  /// written once, when the settings are made, for every reader (the rules, scenario.json).
  const nlohmann::json& to_json() const { return resolved_; }
  /// Builds the network with `hosts` application hosts into the current ns-3 simulation;
  /// std::logic_error when not resolved.
  std::unique_ptr<Network> build(std::size_t hosts) const;

 private:
  std::string family_;
  std::shared_ptr<const FamilyConfig> config_;
  TransportConfig transport_;
  std::string label_;
  nlohmann::json resolved_;
};

}  // namespace gradwire
