#include "netmodels/NetworkFactory.h"

#include "common/JsonFields.h"
#include "common/DeclaredFields.h"
#include "netmodels/Impairments.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/NetworkRegistry.h"

namespace gradwire {

std::vector<std::string> network_families() { return NetworkRegistry::builtin().names(); }

namespace {

/// The family's own keys: `transport` is common to all families and handled here.
nlohmann::json without_transport(const nlohmann::json& object) {
  nlohmann::json rest = object;
  if (rest.is_object()) rest.erase("transport");
  return rest;
}

const ParamSpec& family_spec() { return param_named(network_params(), "family"); }

nlohmann::json resolve_family(const nlohmann::json& object, const std::string& path) {
  JsonFields fields(object, path);
  const std::string family = declared_string(fields, family_spec());
  // Each family validates its own keys and fills in its defaults.
  return NetworkRegistry::builtin().find(family)->resolve(object, path);
}

}  // namespace

nlohmann::json resolve_network(const nlohmann::json& object, const std::string& path) {
  nlohmann::json resolved = resolve_family(without_transport(object), path);
  // How messages cross the hosts is the transport layer's to validate (nodes/transport); the
  // network only carries the key through.
  if (object.is_object() && object.contains("transport")) {
    resolved["transport"] = object.at("transport");
  }
  return resolved;
}

std::uint32_t network_mtu(const nlohmann::json& resolved) {
  const auto it = resolved.find("mtu");
  return it != resolved.end() && it->is_number_unsigned() ? it->get<std::uint32_t>() : 1500u;
}

std::unique_ptr<Network> build_network(const nlohmann::json& object, std::size_t hosts) {
  const nlohmann::json resolved = without_transport(object);
  const NetworkRegistry& registry = NetworkRegistry::builtin();
  const std::string fallback = family_spec().default_value.get<std::string>();
  const NetworkFamilyInfo* family = registry.find(resolved.value("family", fallback));
  // resolve_network returns known families only; any other object is built as the default
  // family, whose builder checks its keys.
  if (family == nullptr) family = registry.find(fallback);
  reset_streams();
  return family->build(resolved, hosts);
}

}  // namespace gradwire
