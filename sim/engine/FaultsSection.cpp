#include "sim/engine/FaultsSection.h"

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"

namespace gradwire {

// `faults`: [{"rank": r, "leave_at": "0.5s", "rejoin_at": "1.2s"}] (rejoin_at optional). One
// entry per rank; at least one worker must stay.
std::vector<FaultSpec> read_faults(const nlohmann::json& document, int workers) {
  std::vector<FaultSpec> out;
  if (!document.contains("faults")) return out;
  const auto& list = document.at("faults");
  if (!list.is_array()) {
    throw ConfigError("faults", "expected an array like [{\"rank\": 1, \"leave_at\": \"0.5s\", "
                                "\"rejoin_at\": \"1.2s\"}], got " + json_brief(list));
  }
  std::vector<bool> seen(static_cast<std::size_t>(workers), false);
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonFields f(list[i], "faults[" + std::to_string(i) + "]");
    f.allow({"rank", "leave_at", "rejoin_at"});
    if (!f.has("rank")) throw ConfigError(f.path_of("rank"), "missing; expected a worker rank");
    if (!f.has("leave_at")) {
      throw ConfigError(f.path_of("leave_at"), "missing; expected a simulated time like \"0.5s\"");
    }
    FaultSpec spec;
    spec.rank = static_cast<int>(f.integer("rank", 0, 0, 1023));
    if (spec.rank >= workers) {
      throw ConfigError(f.path_of("rank"), "expected a rank below training.workers (" +
                                               std::to_string(workers) + "), got " +
                                               std::to_string(spec.rank));
    }
    if (seen[static_cast<std::size_t>(spec.rank)]) {
      throw ConfigError(f.path_of("rank"), "rank " + std::to_string(spec.rank) +
                                               " already has a fault entry (one per rank)");
    }
    seen[static_cast<std::size_t>(spec.rank)] = true;
    spec.leave_at_s = read_duration(f, "leave_at", 0);
    if (f.has("rejoin_at")) {
      spec.rejoin_at_s = read_duration(f, "rejoin_at", 0);
      if (spec.rejoin_at_s <= spec.leave_at_s) {
        throw ConfigError(f.path_of("rejoin_at"), "expected a time after leave_at");
      }
    }
    out.push_back(spec);
  }
  if (static_cast<int>(out.size()) >= workers) {
    throw ConfigError("faults", "every worker leaves: at least one must stay");
  }
  return out;
}


nlohmann::json faults_json(const std::vector<FaultSpec>& list) {
  nlohmann::json faults = nlohmann::json::array();
  for (const FaultSpec& f : list) {
    nlohmann::json e = {{"rank", f.rank}, {"leave_at", format_duration(f.leave_at_s)}};
    if (f.rejoin_at_s >= 0) e["rejoin_at"] = format_duration(f.rejoin_at_s);
    faults.push_back(e);
  }
  return faults;
}

}  // namespace gradwire
