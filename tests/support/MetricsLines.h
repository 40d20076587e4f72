// Test support: the lines of one type ("step", "eval", "event", ...) of a run's metrics.jsonl,
// and the metrics without their wall-clock fields.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradwire::testing {

inline std::vector<nlohmann::json> lines_of(const std::string& jsonl, const std::string& type) {
  std::vector<nlohmann::json> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == type) out.push_back(j);
  }
  return out;
}

/// The metrics without the wall-clock fields, the only ones two runs of one scenario may
/// differ in.
inline std::string without_wall_times(const std::string& jsonl) {
  std::istringstream in(jsonl);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    j.erase("wall_time_s");
    out += j.dump() + "\n";
  }
  return out;
}

}  // namespace gradwire::testing
