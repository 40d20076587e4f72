#include "sim/engine/ReplaySafety.h"

#include <algorithm>
#include <functional>
#include <set>

#include "sim/engine/StepTrace.h"

namespace gradwire {

std::optional<ConfigError> replay_refusal(const Scenario& sc) {
  const SchemeInfo& scheme = sc.topology.scheme();
  if (!scheme.collective_in(sc.topology.mode)) {
    return ConfigError("topology.kind",
                       "\"" + sc.topology.name() + "\"" + (sc.topology.async() ? " (async)" : "") +
                           " cannot be replayed: its workers do not wait for each other in a "
                           "synchronous collective, so when messages arrive decides what they "
                           "train on");
  }
  if (sc.network.transport().kind != "tcp") {
    return ConfigError("network.transport.kind",
                       "\"" + sc.network.transport().kind +
                           "\" cannot be replayed: what the network loses changes the gradients");
  }
  if (sc.compute.mode == "measured") {
    return ConfigError("compute.mode",
                       "\"measured\" cannot be replayed: each run measures its own compute time; "
                       "use \"fixed\" or \"profile\"");
  }
  if (sc.compute.codec_time == "measured") {
    return ConfigError("compute.codec_time",
                       "\"measured\" cannot be replayed: each run measures its own codec time; "
                       "use \"free\" or \"profile\"");
  }
  for (const auto& entry : sc.compute.profile_entries) {
    if (entry.group >= 0) {
      return ConfigError("compute.profile",
                         "devices given per hybrid group cannot be replayed: which worker runs "
                         "on which device depends on the network");
    }
  }
  // GradiVeQ's payloads decode to slice-aligned lengths that their headers do not state, so
  // what a trace keeps of a payload (size and header) does not say how long it decodes.
  const std::function<bool(const nlohmann::json&)> names_gradiveq = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      if (j.value("kind", "") == "gradiveq") return true;
      for (const auto& item : j.items()) {
        if (names_gradiveq(item.value())) return true;
      }
    }
    if (j.is_array()) {
      for (const auto& item : j) {
        if (names_gradiveq(item)) return true;
      }
    }
    return false;
  };
  if (names_gradiveq(sc.codec)) {
    return ConfigError("codec.kind",
                       "gradiveq cannot be replayed: its payloads decode to lengths their headers "
                       "do not state, which a step trace does not keep");
  }
  if (!sc.faults.empty()) {
    return ConfigError("faults",
                       "runs with faults cannot be replayed: who is left to train depends on "
                       "when messages arrive");
  }
  if (sc.participation.enabled) {
    return ConfigError("participation",
                       "partial participation cannot be replayed: rounds sample clients by "
                       "availability and deadlines in simulated time");
  }
  return std::nullopt;
}

nlohmann::json training_identity(const nlohmann::json& resolved) {
  nlohmann::json id = resolved;
  id.erase("name");
  id.erase("output");
  if (id.contains("network")) {
    nlohmann::json network = nlohmann::json::object();
    if (resolved["network"].contains("transport")) network["transport"] = resolved["network"]["transport"];
    id["network"] = network;
  }
  return id;
}

std::string first_difference(const nlohmann::json& a, const nlohmann::json& b,
                             const std::string& path) {
  const std::string here = path.empty() ? "(the whole scenario)" : path;
  // Numbers compare by value: a scenario read back from a file holds 1 as unsigned, the same
  // scenario built in memory as signed.
  if (a.is_number() && b.is_number()) return a == b ? "" : here;
  if (a.type() != b.type()) return here;
  if (a.is_object()) {
    std::set<std::string> keys;
    for (const auto& item : a.items()) keys.insert(item.key());
    for (const auto& item : b.items()) keys.insert(item.key());
    for (const std::string& k : keys) {
      const std::string sub = path.empty() ? k : path + "." + k;
      if (!a.contains(k) || !b.contains(k)) return sub;
      const std::string d = first_difference(a[k], b[k], sub);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (a.is_array()) {
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      const std::string d = first_difference(a[i], b[i], path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
    return a.size() == b.size() ? "" : here;
  }
  return a == b ? "" : here;
}

void check_trace_matches(const Scenario& scenario, const nlohmann::json& trace_scenario,
                         const std::string& trace_path) {
  const std::string differs =
      first_difference(training_identity(trace_scenario), training_identity(scenario.resolved));
  if (!differs.empty()) {
    throw ConfigError("--replay", trace_path + " records another training: the scenarios differ at " +
                                      differs + " (only the network other than its transport, "
                                      "the name and the output folder may differ)");
  }
}

void check_codec_time_replayable(const Scenario& scenario, const StepTrace& trace,
                                 const std::string& trace_path) {
  if (scenario.compute.codec_time == "free") return;
  for (const auto& bucket : trace.codecs) {
    for (const CodecCallLog& log : bucket) {
      if (!log.ambiguous_work) continue;
      const std::string codec = scenario.codec.at("kind").get<std::string>();
      throw ConfigError("compute.codec_time",
                        trace_path + " records codec " + codec + " decoding payloads of one size "
                            "with different work, which a replay cannot tell apart; with codec "
                            "time \"" + scenario.compute.codec_time + "\" run it without "
                            "--replay (or with codec_time \"free\")");
    }
  }
}

}  // namespace gradwire
