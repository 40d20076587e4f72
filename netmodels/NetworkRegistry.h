// The network families a scenario's `network` object can name, each declared once in its own
// file (a NetworkFamilyInfo: name, summary, keys, and how it is resolved into a typed
// configuration that builds the network). Scenario validation, `gradwire networks` and
// docs/networks.md all read this declaration.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/KindRegistry.h"
#include "common/ParamSpec.h"
#include "netmodels/NetworkFamilyInfo.h"

namespace gradwire {

class NetworkRegistry : public KindRegistry<NetworkFamilyInfo>,
                        public BuiltinKinds<NetworkRegistry> {
 private:
  friend class BuiltinKinds<NetworkRegistry>;
  NetworkRegistry();
};

/// `family`, `transport` and `label`: the keys every `network` object takes. `family`'s
/// choices are the registry's names when it is asked for (a family a test declares included).
std::vector<ParamSpec> network_params();

/// The declaration as Markdown (docs/networks.md's generated part) and as JSON
/// (`gradwire networks --json`).
std::string network_reference_markdown();
nlohmann::json network_reference_json();

}  // namespace gradwire
