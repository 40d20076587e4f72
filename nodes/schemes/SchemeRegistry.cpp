#include "nodes/schemes/SchemeRegistry.h"

#include <stdexcept>

namespace gradwire {

bool SchemeInfo::has_mode(SyncMode mode) const {
  for (SyncMode m : modes) {
    if (m == mode) return true;
  }
  return false;
}

SchemeRegistry::SchemeRegistry() {
  using namespace params;
  common_ = {
      choice("kind", "ring", {"ring", "ps", "gossip", "leader"}, "the training scheme"),
      choice("mode", "sync", {"sync", "async"},
             "sync: each step waits for the aggregate; async: the parameter server (ps only) "
             "applies each push as it lands"),
      duration("timeout", "200ms",
               "with `faults`: how long a party waits for a missing peer before checking "
               "whether it is gone"),
  };

  SchemeInfo ring;
  ring.kind = SchemeKind::kRing;
  ring.name = "ring";
  ring.summary =
      "synchronous ring all-reduce (reduce-scatter then all-gather); summable codecs are "
      "reduced hop by hop without decoding";
  ring.modes = {SyncMode::kSync};
  ring.faults_sync = true;
  ring.processes = true;
  schemes_.push_back(ring);

  SchemeInfo ps;
  ps.kind = SchemeKind::kParameterServer;
  ps.name = "ps";
  ps.summary =
      "parameter server on a host of its own: workers push encoded gradients, the server "
      "aggregates and sends the update back (sync), or applies each push as it lands (async)";
  ps.modes = {SyncMode::kSync, SyncMode::kAsync};
  ps.server_host = true;
  ps.faults_sync = true;
  ps.processes = true;
  ps.params = {integer("max_staleness", -1, -1, 1000000,
                       "async only: bounded staleness; a worker more than this many updates "
                       "ahead of the slowest waits until it catches up (-1: unbounded)")};
  schemes_.push_back(ps);

  SchemeInfo gossip;
  gossip.kind = SchemeKind::kGossip;
  gossip.name = "gossip";
  gossip.summary =
      "Stochastic Gradient Push: push-sum weights on the time-varying directed exponential "
      "graph, mixing weight 1/(peers+1); each push carries the node's parameters and weight";
  gossip.modes = {SyncMode::kSync};
  gossip.sends_gradients = false;
  gossip.faults_sync = true;
  gossip.params = {
      integer("peers", 1, 1, 16, "out-peers per step"),
      boolean("overlap", false,
              "mix the previous step's shares so sending overlaps compute (SGP with tau = 1); "
              "not with faults"),
  };
  schemes_.push_back(gossip);

  SchemeInfo leader;
  leader.kind = SchemeKind::kLeader;
  leader.name = "leader";
  leader.summary =
      "Leader SGD: local steps; every l_comm steps the workers of a group (consecutive ranks) "
      "are pulled towards the group's leader (lowest loss), every g_comm steps towards the "
      "global leader; only the leaders' parameters travel";
  leader.modes = {SyncMode::kSync};
  leader.sends_gradients = false;
  leader.params = {
      integer("l_comm", 16, 1, 100000000, "steps between pulls towards the group leader"),
      integer("g_comm", 64, 1, 100000000, "steps between pulls towards the global leader"),
      number("c1", 0.5, 0, 1, "x = (1 - c1) x + c1 x_leader at a group pull"),
      number("c2", 0.5, 0, 1, "the same with the global leader at a global pull"),
      integer("group_size", 4, 1, 1024, "workers per group (consecutive ranks)"),
  };
  schemes_.push_back(leader);
}

const SchemeRegistry& SchemeRegistry::builtin() {
  static const SchemeRegistry registry;
  return registry;
}

const SchemeInfo& SchemeRegistry::at(SchemeKind kind) const {
  for (const auto& s : schemes_) {
    if (s.kind == kind) return s;
  }
  throw std::logic_error("scheme kind not registered");
}

const SchemeInfo* SchemeRegistry::find(const std::string& name) const {
  for (const auto& s : schemes_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> SchemeRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& s : schemes_) out.push_back(s.name);
  return out;
}

std::string scheme_name(SchemeKind kind) { return SchemeRegistry::builtin().at(kind).name; }

std::string schemes_with_processes() {
  std::vector<std::string> names;
  for (const auto& s : SchemeRegistry::builtin().list()) {
    if (s.processes) names.push_back("\"" + s.name + "\"");
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
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
    out += "| `" + s.name + "` | " + modes_text(s) + " | " + yes_no(s.server_host) + " | " +
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
  nlohmann::json common = nlohmann::json::array();
  for (const auto& p : r.common_params()) common.push_back(p.to_json());
  nlohmann::json schemes = nlohmann::json::array();
  for (const auto& s : r.list()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : s.params) params.push_back(p.to_json());
    nlohmann::json modes = nlohmann::json::array();
    for (SyncMode m : s.modes) modes.push_back(mode_name(m));
    schemes.push_back({{"kind", s.name},
                       {"summary", s.summary},
                       {"modes", modes},
                       {"server_host", s.server_host},
                       {"codecs", s.sends_gradients ? "any" : "none"},
                       {"faults", s.faults_sync},
                       {"processes", s.processes},
                       {"params", params}});
  }
  return {{"common", common}, {"schemes", schemes}};
}

}  // namespace gradwire
