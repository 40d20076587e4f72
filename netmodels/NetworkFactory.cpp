#include "netmodels/NetworkFactory.h"

#include "codecs/JsonFields.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/HybridNetwork.h"
#include "netmodels/Impairments.h"
#include "netmodels/LteNetwork.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {

std::vector<std::string> network_families() { return {"ethernet", "wifi", "lte", "hybrid"}; }

namespace {

/// The family's own keys: `transport` is common to all families and handled here.
nlohmann::json without_transport(const nlohmann::json& object) {
  nlohmann::json rest = object;
  if (rest.is_object()) rest.erase("transport");
  return rest;
}

nlohmann::json resolve_family(const nlohmann::json& object, const std::string& path) {
  JsonFields fields(object, path);
  const std::string family = fields.string("family", "ethernet", network_families());
  // Each family validates its own keys and fills in its defaults.
  if (family == "wifi") return WifiConfig::from_json(object, path).to_json();
  if (family == "lte") return LteConfig::from_json(object, path).to_json();
  if (family == "hybrid") return HybridConfig::from_json(object, path).to_json();
  return EthernetConfig::from_json(object, path).to_json();
}

}  // namespace

nlohmann::json resolve_network(const nlohmann::json& object, const std::string& path) {
  nlohmann::json resolved = resolve_family(without_transport(object), path);
  const nlohmann::json transport =
      object.is_object() && object.contains("transport") ? object.at("transport") : nlohmann::json();
  resolved["transport"] = TransportConfig::from_json(transport, path + ".transport").to_json();
  return resolved;
}

TransportConfig transport_of(const nlohmann::json& resolved) {
  const auto it = resolved.find("transport");
  return TransportConfig::from_json(it == resolved.end() ? nlohmann::json() : *it,
                                    "network.transport");
}

std::uint32_t network_mtu(const nlohmann::json& resolved) {
  const auto it = resolved.find("mtu");
  return it != resolved.end() && it->is_number_unsigned() ? it->get<std::uint32_t>() : 1500u;
}

std::unique_ptr<Network> build_network(const nlohmann::json& object, std::size_t hosts) {
  const nlohmann::json resolved = without_transport(object);
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
