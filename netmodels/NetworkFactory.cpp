#include "netmodels/NetworkFactory.h"

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "netmodels/NetworkRegistry.h"

namespace gradwire {

std::vector<std::string> network_families() { return NetworkRegistry::builtin().names(); }

NetworkSettings resolve_network(const nlohmann::json& object, const std::string& path) {
  // The family's own keys: `transport` is common to all families and read after them.
  nlohmann::json own = object;
  if (own.is_object()) own.erase("transport");
  JsonFields fields(own, path);
  const NetworkFamilyInfo& family = NetworkRegistry::builtin().at(
      declared_string(fields, param_named(network_params(), "family")));
  std::shared_ptr<const FamilyConfig> config = family.resolve(own, path);
  const auto transport = object.find("transport");
  return NetworkSettings(
      family.name, std::move(config),
      TransportConfig::from_json(transport == object.end() ? nlohmann::json() : *transport,
                                 path + ".transport"));
}

}  // namespace gradwire
