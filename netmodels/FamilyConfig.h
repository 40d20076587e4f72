// One network family's resolved configuration, typed (EthernetConfig, WifiConfig, ...) behind
// the little every caller needs: its resolved JSON, the MTU of its links, and building it.
// NetworkSettings holds one; a family's declaration (NetworkFamilyInfo::resolve) makes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <nlohmann/json.hpp>

#include "netmodels/Network.h"

namespace gradwire {

class FamilyConfig {
 public:
  virtual ~FamilyConfig() = default;

  /// The family's resolved `network` object: `family` and every key of its own with the
  /// defaults filled in (no `transport`: NetworkSettings adds it).
  virtual nlohmann::json to_json() const = 0;
  /// Largest IP packet the hosts' links carry, bytes.
  virtual std::uint32_t mtu() const = 0;
  /// Builds the network with `hosts` application hosts into the current ns-3 simulation.
  virtual std::unique_ptr<Network> build(std::size_t hosts) const = 0;
};

}  // namespace gradwire
