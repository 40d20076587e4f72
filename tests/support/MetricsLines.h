// Test support: the lines of one type ("step", "eval", "event", ...) of a run's metrics.jsonl.
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

}  // namespace gradwire::testing
