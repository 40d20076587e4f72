#include "netmodels/NetworkFactory.h"

#include <algorithm>

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "netmodels/NetworkRegistry.h"

namespace gradwire {

std::vector<std::string> network_families() { return NetworkRegistry::builtin().names(); }

NetworkSettings resolve_network(const nlohmann::json& object, const std::string& path) {
  // The family's own keys: `transport` and `label` are common to all families and read after
  // them.
  nlohmann::json own = object;
  if (own.is_object()) {
    own.erase("transport");
    own.erase("label");
  }
  JsonFields fields(own, path);
  const NetworkFamilyInfo& family = NetworkRegistry::builtin().at(
      declared_string(fields, param_named(network_params(), "family")));
  std::shared_ptr<const FamilyConfig> config = family.resolve(own, path);
  const auto transport = object.find("transport");
  // The label names the network in folder names and report legends: one short line of text.
  const std::string label =
      declared_string(JsonFields(object, path), param_named(network_params(), "label"));
  constexpr std::size_t kMaxLabel = 80;
  const bool printable = std::all_of(label.begin(), label.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  });
  if (label.size() > kMaxLabel || !printable) {
    throw ConfigError(path + ".label", "expected at most " + std::to_string(kMaxLabel) +
                                           " characters without control characters, got " +
                                           brief_value(label));
  }
  return NetworkSettings(
      family.name, std::move(config),
      TransportConfig::from_json(transport == object.end() ? nlohmann::json() : *transport,
                                 path + ".transport"),
      label);
}

}  // namespace gradwire
