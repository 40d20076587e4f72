// Reads and validates scenario JSON. Unknown keys, wrong types and out-of-range values are
// ConfigErrors naming the JSON path and the expected form; the CLI maps them to exit code 2.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/Scenario.h"

namespace gradwire {

/// Current scenario format version (the "gradwire" key).
constexpr int kScenarioVersion = 1;

/// The largest scenario or sweep file read (real ones are a few kilobytes).
constexpr std::size_t kMaxScenarioBytes = std::size_t{16} << 20;

/// Parses a file; ConfigError at "(file)" for unreadable files, directories, files over
/// kMaxScenarioBytes, nesting deeper than kMaxJsonDepth, or JSON syntax errors.
nlohmann::json read_scenario_file(const std::string& path);

/// Applies `--set a.b.c=value` overrides: value is parsed as JSON when it is valid JSON,
/// otherwise taken as a string. Intermediate objects are created. ConfigError on bad syntax.
void apply_overrides(nlohmann::json& scenario, const std::vector<std::string>& assignments);

/// Validates and resolves. Does not touch the file system except to check that a
/// Fashion-MNIST directory exists (a missing dataset is a scenario error).
Scenario load_scenario(const nlohmann::json& document);

}  // namespace gradwire
