#include "netmodels/NetworkFactory.h"

#include "codecs/JsonFields.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/HybridNetwork.h"
#include "netmodels/Impairments.h"
#include "netmodels/LteNetwork.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {

std::vector<std::string> network_families() { return {"ethernet", "wifi", "lte", "hybrid"}; }

nlohmann::json resolve_network(const nlohmann::json& object, const std::string& path) {
  JsonFields fields(object, path);
  const std::string family = fields.string("family", "ethernet", network_families());
  // Each family validates its own keys and fills in its defaults.
  if (family == "wifi") return WifiConfig::from_json(object, path).to_json();
  if (family == "lte") return LteConfig::from_json(object, path).to_json();
  if (family == "hybrid") return HybridConfig::from_json(object, path).to_json();
  return EthernetConfig::from_json(object, path).to_json();
}

std::unique_ptr<Network> build_network(const nlohmann::json& resolved, std::size_t hosts) {
  const std::string family = resolved.value("family", "ethernet");
  reset_streams();
  if (family == "wifi") {
    return std::make_unique<WifiNetwork>(WifiConfig::from_json(resolved, "network"), hosts);
  }
  if (family == "lte") {
    return std::make_unique<LteNetwork>(LteConfig::from_json(resolved, "network"), hosts);
  }
  if (family == "hybrid") {
    return std::make_unique<HybridNetwork>(HybridConfig::from_json(resolved, "network"), hosts);
  }
  return std::make_unique<EthernetNetwork>(EthernetConfig::from_json(resolved, "network"),
                                           hosts);
}

}  // namespace gradwire
