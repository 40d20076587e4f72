// What a network family declares (common/KindRegistry.h's shape): its name, summary and keys
// (netmodels/NetworkParams.h), its keys as a hybrid group, the smallest object that resolves,
// and how an object of it is resolved into a typed configuration. Each family's declaration
// lives in its own file (netmodels/EthernetFamily.cpp, ...); NetworkRegistry lists them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/KindRegistry.h"
#include "common/ParamSpec.h"
#include "netmodels/FamilyConfig.h"

namespace gradwire {

struct NetworkFamilyInfo : KindDeclaration {
  // KindDeclaration: `name` is `network.family`; `params` its own keys besides `family`,
  // `transport` and `label` (network_params()).

  /// Keys it takes as an entry of a hybrid network's `groups`, besides `family` and `workers`
  /// (hybrid_group_params()); empty when it cannot be a group.
  std::vector<ParamSpec> group_params;
  /// Keys every entry of its own `groups` list takes, besides the group family's keys (the
  /// hybrid's `family` and `workers`); empty when it has no groups.
  std::vector<ParamSpec> entry_params;
  /// The smallest object of this family that resolves: the family plus its required keys.
  nlohmann::json minimal;
  /// Validates a `network` object of this family (without `transport`) and returns its typed
  /// configuration, every default filled in; ConfigError naming `path`.key.
  std::function<std::shared_ptr<const FamilyConfig>(const nlohmann::json& object,
                                                    const std::string& path)>
      resolve;
};

/// A family's `Config` (EthernetConfig, ...) from a `network` object, read twice: validated
/// and defaulted, then read again from its resolved object (to_json()). A network is built
/// from that second reading because a rerun reads the run's scenario.json, the resolved
/// object: run and rerun then build the same network to the last bit (a duration written as
/// "0.05ms" reads to other bits than the "50us" its resolved object holds).
template <typename Config>
Config read_resolved(const nlohmann::json& object, const std::string& path) {
  return Config::from_json(Config::from_json(object, path).to_json(), path);
}

}  // namespace gradwire
