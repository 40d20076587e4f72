#include "netmodels/NetworkRegistry.h"

#include <stdexcept>

#include "netmodels/EthernetNetwork.h"
#include "netmodels/HybridNetwork.h"
#include "netmodels/LteNetwork.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {

namespace {

using nlohmann::json;

/// The builders read a resolved object under its scenario path.
const char* const kPath = "network";

}  // namespace

NetworkRegistry::NetworkRegistry() {
  NetworkFamilyInfo ethernet;
  ethernet.family = NetworkFamily::kEthernet;
  ethernet.name = network_family_name(ethernet.family);
  ethernet.summary =
      "A switched star: every host has its own full-duplex link to one store-and-forward "
      "switch, with a drop-tail queue per port (the lab cluster on 1 or 10 GbE)";
  ethernet.params = ethernet_params();
  ethernet.group_params = ethernet_group_params();
  ethernet.minimal = {{"family", ethernet.name}};
  ethernet.resolve = [](const json& object, const std::string& path) {
    return EthernetConfig::from_json(object, path).to_json();
  };
  ethernet.build = [](const json& resolved, std::size_t hosts) -> std::unique_ptr<Network> {
    return std::make_unique<EthernetNetwork>(EthernetConfig::from_json(resolved, kPath), hosts);
  };
  families_.push_back(ethernet);

  NetworkFamilyInfo wifi;
  wifi.family = NetworkFamily::kWifi;
  wifi.name = network_family_name(wifi.family);
  wifi.summary =
      "One 802.11n, ac or ax BSS: worker stations around an access point share the radio "
      "channel; the last host is another station, the AP itself or a wired host behind it";
  wifi.params = wifi_params();
  wifi.group_params = wifi_group_params();
  wifi.minimal = {{"family", wifi.name}};
  wifi.resolve = [](const json& object, const std::string& path) {
    return WifiConfig::from_json(object, path).to_json();
  };
  wifi.build = [](const json& resolved, std::size_t hosts) -> std::unique_ptr<Network> {
    return std::make_unique<WifiNetwork>(WifiConfig::from_json(resolved, kPath), hosts);
  };
  families_.push_back(wifi);

  NetworkFamilyInfo lte;
  lte.family = NetworkFamily::kLte;
  lte.name = network_family_name(lte.family);
  lte.summary =
      "LTE radio access and EPC core: worker UEs around one or more eNodeBs; the last host is "
      "a remote server behind the PGW, an edge host next to it, or another UE. UE to UE "
      "traffic crosses the PGW, as in a real EPC";
  lte.params = lte_params();
  lte.group_params = lte_group_params();
  lte.minimal = {{"family", lte.name}};
  lte.resolve = [](const json& object, const std::string& path) {
    return LteConfig::from_json(object, path).to_json();
  };
  lte.build = [](const json& resolved, std::size_t hosts) -> std::unique_ptr<Network> {
    return std::make_unique<LteNetwork>(LteConfig::from_json(resolved, kPath), hosts);
  };
  families_.push_back(lte);

  NetworkFamilyInfo hybrid;
  hybrid.family = NetworkFamily::kHybrid;
  hybrid.name = network_family_name(hybrid.family);
  hybrid.summary =
      "Groups of workers on different families (Wi-Fi cells, one LTE cell, switched "
      "Ethernet); each group's gateway has its own backhaul to a core router, and the server "
      "host, when the topology has one, hangs off that router";
  hybrid.params = hybrid_params();
  hybrid.minimal = {
      {"family", hybrid.name},
      {"groups", json::array({{{"family", ethernet.name}, {"workers", 1}}})}};
  hybrid.resolve = [](const json& object, const std::string& path) {
    return HybridConfig::from_json(object, path).to_json();
  };
  hybrid.build = [](const json& resolved, std::size_t hosts) -> std::unique_ptr<Network> {
    return std::make_unique<HybridNetwork>(HybridConfig::from_json(resolved, kPath), hosts);
  };
  families_.push_back(hybrid);
}

const NetworkRegistry& NetworkRegistry::builtin() {
  static const NetworkRegistry registry;
  return registry;
}

const NetworkFamilyInfo& NetworkRegistry::at(NetworkFamily family) const {
  for (const auto& f : families_) {
    if (f.family == family) return f;
  }
  throw std::logic_error("network family not registered");
}

const NetworkFamilyInfo* NetworkRegistry::find(const std::string& name) const {
  for (const auto& f : families_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> NetworkRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& f : families_) out.push_back(f.name);
  return out;
}

const std::vector<NetworkFamily>& all_network_families() {
  static const std::vector<NetworkFamily> kFamilies = {
      NetworkFamily::kEthernet, NetworkFamily::kWifi, NetworkFamily::kLte,
      NetworkFamily::kHybrid};
  return kFamilies;
}

// Not through the registry: the declarations name families while the registry is being built.
std::string network_family_name(NetworkFamily family) {
  switch (family) {
    case NetworkFamily::kEthernet: return "ethernet";
    case NetworkFamily::kWifi: return "wifi";
    case NetworkFamily::kLte: return "lte";
    case NetworkFamily::kHybrid: return "hybrid";
  }
  throw std::logic_error("unknown network family");
}

NetworkFamily parse_network_family(const std::string& name) {
  for (NetworkFamily f : all_network_families()) {
    if (network_family_name(f) == name) return f;
  }
  throw std::invalid_argument("unknown network family " + name);
}

namespace {

std::string code_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "`" : ", `") + n + "`";
  return out;
}

/// "Keys by `kind`: `distance`: `kind`, `distance_m`; ...", from the selector's choices.
std::string keys_by(const ParamSpec& selector,
                    std::vector<std::string> (*keys)(const std::string&)) {
  std::string out = "Keys by `" + selector.name + "`:";
  for (std::size_t i = 0; i < selector.choices.size(); ++i) {
    out += (i ? "; `" : " `") + selector.choices[i] + "`: " + code_list(keys(selector.choices[i]));
  }
  return out + ".\n";
}

/// "`wifi`, `lte`": the families whose own keys include `key`.
std::string families_with(const std::string& key) {
  std::vector<std::string> names;
  for (const auto& f : NetworkRegistry::builtin().list()) {
    for (const auto& p : f.params) {
      if (p.name == key) names.push_back(f.name);
    }
  }
  return code_list(names);
}

/// "`wifi`, `lte`, `ethernet`": the families that can be a hybrid group, in the order the
/// group's `family` lists them.
std::string group_families() {
  return code_list(param_named(hybrid_group_params(), "family").choices);
}

/// How a family's keys as a hybrid group differ from its own: when they are its keys less a
/// few (declared alike), say which; otherwise the group's own table.
std::string group_markdown(const NetworkFamilyInfo& f) {
  std::vector<std::string> dropped;
  std::size_t kept = 0;
  for (const auto& p : f.params) {
    bool in_group = false;
    for (const auto& g : f.group_params) in_group = in_group || g.to_json() == p.to_json();
    if (in_group) {
      ++kept;
    } else {
      dropped.push_back(p.name);
    }
  }
  const std::string intro = "\n### `" + f.name + "` as a `hybrid` group\n\n";
  if (kept == f.group_params.size()) {
    return intro + "The keys above without " + code_list(dropped) +
           ", plus `family` and `workers` (`groups` entries, under `hybrid`).\n";
  }
  return intro + "Besides `family` and `workers` (`groups` entries, under `hybrid`):\n\n" +
         param_table_markdown(f.group_params);
}

json keys_by_json(const ParamSpec& selector,
                  std::vector<std::string> (*keys)(const std::string&)) {
  json out = json::object();
  for (const auto& c : selector.choices) out[c] = keys(c);
  return {{"selector", selector.name}, {"keys", out}};
}

}  // namespace

std::string network_reference_markdown() {
  const NetworkRegistry& r = NetworkRegistry::builtin();
  std::string out = "## Keys of every `network`\n\n" + param_table_markdown(network_params());
  out += "\n## Families\n\n| family | what | `hybrid` group |\n|---|---|---|\n";
  for (const auto& f : r.list()) {
    out += "| `" + f.name + "` | " + f.summary + " | " + (f.group_params.empty() ? "no" : "yes") +
           " |\n";
  }
  for (const auto& f : r.list()) {
    out += "\n## `" + f.name + "`\n\n" + f.summary + ".\n\n" + param_table_markdown(f.params);
    if (!f.group_params.empty()) out += group_markdown(f);
    if (f.family == NetworkFamily::kHybrid) {
      out += "\n### `groups` entries\n\nEach takes `family` and `workers`, and the keys of its "
             "family as a `hybrid` group (" + group_families() + ", above).\n\n" +
             param_table_markdown(hybrid_group_params());
    }
  }
  out += "\n## `placement`\n\nWhere worker stations or UEs stand around their access point or "
         "eNodeB (" + families_with("placement") + ").\n\n" +
         param_table_markdown(placement_params()) + "\n" +
         keys_by(param_named(placement_params(), "kind"), placement_keys);
  out += "\n## `impairments`\n\nLink impairments (" + families_with("impairments") +
         ", and every `hybrid` group). `mobility` and a background flow's `distance_m` are for "
         "the wireless families only.\n\n" +
         param_table_markdown(impairments_params(true));
  out += "\n### `loss`\n\n" + param_table_markdown(loss_params()) + "\n" +
         keys_by(param_named(loss_params(), "model"), loss_keys);
  out += "\n### `outages` entries\n\n" + param_table_markdown(outage_params());
  out += "\n### `background` entries\n\nA UDP on/off flow between host `target` and an extra "
         "node of the same family: a station or UE, or a host on the switch.\n\n" +
         param_table_markdown(background_params(true));
  out += "\n### `mobility`\n\n" + param_table_markdown(mobility_params()) + "\n" +
         keys_by(param_named(mobility_params(), "model"), mobility_keys);
  return out;
}

json network_reference_json() {
  json families = json::array();
  for (const auto& f : NetworkRegistry::builtin().list()) {
    json entry = {{"family", f.name}, {"summary", f.summary}, {"params", params_json(f.params)}};
    if (!f.group_params.empty()) entry["group_params"] = params_json(f.group_params);
    families.push_back(entry);
  }
  json placement = {{"params", params_json(placement_params())},
                    {"keys_by", keys_by_json(param_named(placement_params(), "kind"),
                                             placement_keys)}};
  json loss = {{"params", params_json(loss_params())},
               {"keys_by", keys_by_json(param_named(loss_params(), "model"), loss_keys)}};
  json mobility = {
      {"params", params_json(mobility_params())},
      {"keys_by", keys_by_json(param_named(mobility_params(), "model"), mobility_keys)}};
  return {{"common", params_json(network_params())},
          {"families", families},
          {"group_common", params_json(hybrid_group_params())},
          {"objects",
           {{"placement", placement},
            {"impairments", {{"params", params_json(impairments_params(true))},
                             {"wired_params", params_json(impairments_params(false))}}},
            {"loss", loss},
            {"outages", {{"params", params_json(outage_params())}}},
            {"background", {{"params", params_json(background_params(true))},
                            {"wired_params", params_json(background_params(false))}}},
            {"mobility", mobility}}}};
}

}  // namespace gradwire
