#include "nodes/schemes/SchemeRegistry.h"

#include <algorithm>
#include <stdexcept>

#include "nodes/schemes/BuiltinSchemes.h"

namespace gradwire {

bool SchemeInfo::has_mode(SyncMode mode) const {
  return std::find(modes.begin(), modes.end(), mode) != modes.end();
}

bool SchemeInfo::with_server(const std::any& settings) const {
  return server_host || (server_host_if && server_host_if(settings));
}

bool SchemeInfo::collective_in(SyncMode mode) const {
  return std::find(collective_modes.begin(), collective_modes.end(), mode) !=
         collective_modes.end();
}

SchemeRegistry::SchemeRegistry() {
  add(ring_scheme());
  add(parameter_server_scheme());
  add(gossip_scheme());
  add(leader_scheme());
  add(local_scheme());
}

std::vector<ParamSpec> SchemeRegistry::common_params() const {
  using namespace params;
  return {
      choice("kind", "ring", names(), "the training scheme"),
      choice("mode", "sync", {"sync", "async"},
             "sync: each step waits for the aggregate; async (ps and leader): nobody waits, "
             "the parameter server applies each push as it lands and Leader SGD's workers pull "
             "towards the leaders' parameters they last received"),
      duration("timeout", "200ms",
               "with `faults`: how long a party waits for a missing peer before checking "
               "whether it is gone"),
  };
}

namespace {

/// The schemes that `has`, quoted and joined: "\"ring\" and \"ps\"".
std::string quoted_schemes(const std::function<bool(const SchemeInfo&)>& has) {
  std::vector<std::string> names;
  for (const auto& s : SchemeRegistry::builtin().list()) {
    if (has(s)) names.push_back("\"" + s.name + "\"");
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
}

}  // namespace

std::string schemes_with_processes() {
  return quoted_schemes([](const SchemeInfo& s) { return s.processes; });
}

std::string schemes_with_mode(SyncMode mode) {
  return quoted_schemes([mode](const SchemeInfo& s) { return s.has_mode(mode); });
}

std::string mode_name(SyncMode mode) { return mode == SyncMode::kAsync ? "async" : "sync"; }

SyncMode parse_mode(const std::string& name) {
  if (name == "sync") return SyncMode::kSync;
  if (name == "async") return SyncMode::kAsync;
  throw std::invalid_argument("unknown mode " + name);
}

namespace {

std::string yes_no(bool v) { return v ? "yes" : "no"; }

std::string modes_text(const SchemeInfo& s) {
  std::string out;
  for (SyncMode m : s.modes) out += (out.empty() ? "" : ", ") + mode_name(m);
  return out;
}

}  // namespace

std::string scheme_reference_markdown() {
  const SchemeRegistry& r = SchemeRegistry::builtin();
  std::string out = "### Keys of every `topology`\n\n" + param_table_markdown(r.common_params());
  out += "\n### Schemes\n\n| kind | modes | server host | codecs | faults | `--processes` |\n"
         "|---|---|---|---|---|---|\n";
  for (const auto& s : r.list()) {
    out += "| `" + s.name + "` | " + modes_text(s) + " | " +
           (s.server_host_when.empty() ? yes_no(s.server_host) : s.server_host_when) + " | " +
           (s.sends_gradients ? "any" : "`none` only") + " | " +
           (s.faults_sync ? "yes (sync)" : "no") + " | " + yes_no(s.processes) + " |\n";
  }
  for (const auto& s : r.list()) {
    out += "\n### `" + s.name + "`\n\n" + s.summary + ".\n";
    if (!s.params.empty()) out += "\n" + param_table_markdown(s.params);
  }
  return out;
}

nlohmann::json scheme_reference_json() {
  const SchemeRegistry& r = SchemeRegistry::builtin();
  nlohmann::json schemes = nlohmann::json::array();
  for (const auto& s : r.list()) {
    nlohmann::json modes = nlohmann::json::array();
    for (SyncMode m : s.modes) modes.push_back(mode_name(m));
    schemes.push_back({{"kind", s.name},
                       {"summary", s.summary},
                       {"modes", modes},
                       {"server_host", s.server_host},
                       {"codecs", s.sends_gradients ? "any" : "none"},
                       {"faults", s.faults_sync},
                       {"processes", s.processes},
                       {"params", params_json(s.params)}});
    if (!s.server_host_when.empty()) schemes.back()["server_host_when"] = s.server_host_when;
  }
  return {{"common", params_json(r.common_params())}, {"schemes", schemes}};
}

}  // namespace gradwire
