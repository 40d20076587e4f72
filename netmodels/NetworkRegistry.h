// The network families a scenario's `network` object can name, declared once: each entry's
// name, summary, keys (netmodels/NetworkParams.h) and how it is resolved and built. Scenario
// validation, `gradwire networks` and docs/networks.md all read this declaration.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ParamSpec.h"
#include "netmodels/Network.h"

namespace gradwire {

enum class NetworkFamily { kEthernet, kWifi, kLte, kHybrid };

struct NetworkFamilyInfo {
  NetworkFamily family = NetworkFamily::kEthernet;
  std::string name;  ///< `network.family`
  std::string summary;
  /// Keys of its own, besides `family` and `transport` (network_params()).
  std::vector<ParamSpec> params;
  /// Keys it takes as an entry of a hybrid network's `groups`, besides `family` and `workers`
  /// (hybrid_group_params()); empty when it cannot be a group.
  std::vector<ParamSpec> group_params;
  /// The smallest object of this family that resolves: the family plus its required keys.
  nlohmann::json minimal;
  /// Validates a `network` object of this family (without `transport`) and returns it with
  /// every default filled in; ConfigError naming `path`.key.
  std::function<nlohmann::json(const nlohmann::json& object, const std::string& path)> resolve;
  /// Builds a resolved object with `hosts` application hosts into the current simulation.
  std::function<std::unique_ptr<Network>(const nlohmann::json& resolved, std::size_t hosts)>
      build;
};

class NetworkRegistry {
 public:
  static const NetworkRegistry& builtin();

  const NetworkFamilyInfo& at(NetworkFamily family) const;
  /// nullptr when no family has that name.
  const NetworkFamilyInfo* find(const std::string& name) const;
  const std::vector<NetworkFamilyInfo>& list() const { return families_; }
  std::vector<std::string> names() const;

 private:
  NetworkRegistry();
  std::vector<NetworkFamilyInfo> families_;
};

/// Every family, in the order listings show them.
const std::vector<NetworkFamily>& all_network_families();
std::string network_family_name(NetworkFamily family);
/// The family named `name`; std::invalid_argument when there is none.
NetworkFamily parse_network_family(const std::string& name);

/// The declaration as Markdown (docs/networks.md's generated part) and as JSON
/// (`gradwire networks --json`).
std::string network_reference_markdown();
nlohmann::json network_reference_json();

}  // namespace gradwire
