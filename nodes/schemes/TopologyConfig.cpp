#include "nodes/schemes/TopologyConfig.h"

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/Units.h"

namespace gradwire {

TopologyConfig read_topology(const JsonFields& topo) {
  const SchemeRegistry& schemes = SchemeRegistry::builtin();
  const std::vector<ParamSpec> common = schemes.common_params();
  const auto spec = [&common](const std::string& key) -> const ParamSpec& {
    return param_named(common, key);
  };
  TopologyConfig tp;
  tp.kind = declared_string(topo, spec("kind"));
  const SchemeInfo& info = schemes.at(tp.kind);
  allow_kind_keys(topo, schemes, info, param_names(common), "topology.kind");
  tp.mode = parse_mode(declared_string(topo, spec("mode")));
  if (!info.has_mode(tp.mode)) {
    throw ConfigError(topo.path_of("mode"),
                      "expected \"" + mode_name(info.modes.front()) + "\" for " + info.name +
                          " (only " + schemes_with_mode(tp.mode) + " have an " +
                          mode_name(tp.mode) + " mode)");
  }
  tp.settings = info.read(topo, tp.mode);
  tp.timeout_s = declared_duration(topo, spec("timeout"));
  if (tp.timeout_s <= 0) throw ConfigError(topo.path_of("timeout"), "expected a duration > 0");
  return tp;
}

nlohmann::json topology_json(const TopologyConfig& t, bool faults) {
  nlohmann::json j = {{"kind", t.name()}, {"mode", mode_name(t.mode)}};
  if (faults) j["timeout"] = format_duration(t.timeout_s);
  t.scheme().write(t.settings, j);
  return j;
}

}  // namespace gradwire
