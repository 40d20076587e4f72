#include "netmodels/NetworkRegistry.h"

#include "netmodels/NetworkParams.h"
#include "netmodels/TransportConfig.h"

namespace gradwire {

// Each family's declaration, in its own file.
NetworkFamilyInfo ethernet_family();  // netmodels/EthernetFamily.cpp
NetworkFamilyInfo wifi_family();      // netmodels/WifiFamily.cpp
NetworkFamilyInfo lte_family();       // netmodels/LteFamily.cpp
NetworkFamilyInfo hybrid_family();    // netmodels/HybridFamily.cpp

// The builtin families, in the order listings show them.
NetworkRegistry::NetworkRegistry() {
  add(ethernet_family());
  add(wifi_family());
  add(lte_family());
  add(hybrid_family());
}

std::vector<ParamSpec> network_params() {
  return {
      params::choice("family", "ethernet", NetworkRegistry::builtin().names(),
                     "which network carries the hosts' traffic; each family takes the keys of "
                     "its own table below"),
      [] {
        ParamSpec transport = params::object(
            "transport",
            "how gradwire's messages cross the network: `\"tcp\"`, `\"udp\"` or an object "
            "`{\"kind\": \"udp\", ...}` (`transport` below)");
        transport.default_value = "tcp";
        return transport;
      }(),
      params::text("label", "",
                   "the network's name in run folder names, report tables and legends (at most "
                   "80 characters); empty: made from its keys, e.g. \"802.11ax 80 MHz, 8 "
                   "stations within 15 m\". Changes nothing in the simulation"),
  };
}

namespace {

using nlohmann::json;

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

/// "`wifi`, `lte`, `ethernet`": the families an entry of `groups` can name, in the order the
/// entry's `family` lists them.
std::string group_families(const std::vector<ParamSpec>& entry_params) {
  return code_list(param_named(entry_params, "family").choices);
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
    if (!f.entry_params.empty()) {
      out += "\n### `groups` entries\n\nEach takes `family` and `workers`, and the keys of its "
             "family as a `" + f.name + "` group (" + group_families(f.entry_params) +
             ", above).\n\n" + param_table_markdown(f.entry_params);
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
  out += "\n## `transport`\n\nHow gradwire's messages cross the network, in any family: "
         "`\"transport\": \"udp\"` or an object `{\"kind\": \"udp\", ...}`. The udp keys "
         "are written to the resolved scenario only with udp.\n\n" +
         param_table_markdown(TransportConfig::keys().params());
  out += "\n## `radio_energy`\n\nThe radios' power draw (" + families_with("radio_energy") +
         ", and their `hybrid` groups), for the joules each host's radio used: summary.json's "
         "`energy` (netmodels/README.md, \"Radio energy\"). It only measures: no key changes "
         "what the network does.\n\n### In `wifi`\n\nns-3's WifiRadioEnergyModel on every "
         "station's and the AP's radio: voltage x the current of each PHY state x the time in "
         "it. Defaults: ns-3's, from Halperin et al., \"Demystifying 802.11n Power "
         "Consumption\", HotPower 2010 (Intel Wi-Fi Link 5300, one antenna).\n\n" +
         param_table_markdown(wifi_radio_energy_params()) +
         "\n### In `lte`\n\nThe LTE UE power model of Huang et al., \"A Close Examination "
         "of Performance and Power Characteristics of 4G LTE Networks\", MobiSys 2012, applied "
         "to each UE's subframes as ns-3's PHY traces them.\n\n" +
         param_table_markdown(lte_radio_energy_params());
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
            {"mobility", mobility},
            {"transport", {{"params", params_json(TransportConfig::keys().params())}}},
            {"radio_energy", {{"wifi_params", params_json(wifi_radio_energy_params())},
                              {"lte_params", params_json(lte_radio_energy_params())}}}}}};
}

}  // namespace gradwire
