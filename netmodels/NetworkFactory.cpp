#include "netmodels/NetworkFactory.h"

#include "codecs/JsonFields.h"
#include "netmodels/EthernetNetwork.h"

namespace gradwire {

std::vector<std::string> network_families() { return {"ethernet"}; }

nlohmann::json resolve_network(const nlohmann::json& object, const std::string& path) {
  JsonFields fields(object, path);
  const std::string family = fields.string("family", "ethernet", network_families());
  // Only ethernet exists so far; each family validates its own keys.
  (void)family;
  return EthernetConfig::from_json(object, path).to_json();
}

std::unique_ptr<Network> build_network(const nlohmann::json& resolved, std::size_t hosts) {
  return std::make_unique<EthernetNetwork>(EthernetConfig::from_json(resolved, "network"),
                                           hosts);
}

}  // namespace gradwire
