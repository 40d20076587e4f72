#include "sim/study/RunCost.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ConfigError.h"

namespace gradwire {

double RunCost::estimate_s(std::int64_t steps, std::int64_t evals) const {
  return startup_s + static_cast<double>(steps) * step_s + static_cast<double>(evals) * eval_s;
}

RunCost RunCost::from_run(const std::string& run_dir, double elapsed_s) {
  const std::string path = run_dir + "/metrics.jsonl";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::map<std::int64_t, double> step_wall;  // step -> cumulative wall time at its record
  std::map<std::int64_t, double> eval_wall;  // step -> cumulative wall time after its evaluation
  std::vector<double> compute;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto rec = nlohmann::json::parse(line, nullptr, false);
    if (!rec.is_object() || !rec.contains("step") || !rec.contains("wall_time_s")) continue;
    // A record that has the keys but not their types is a pilot someone edited or a disk
    // damaged: named, rather than priced from a guess.
    if (!rec["step"].is_number_integer() || !rec["wall_time_s"].is_number()) {
      throw ConfigError(path + ":" + std::to_string(number),
                        "expected an integer step and a number wall_time_s in the pilot's "
                        "metrics; remove the pilot's folder to run it again");
    }
    const auto step = rec["step"].get<std::int64_t>();
    const double wall = rec["wall_time_s"].get<double>();
    const bool eval = rec.value("type", "") == "eval";
    (eval ? eval_wall : step_wall)[step] = wall;
    if (!eval && rec.contains("compute_s") && rec["compute_s"].is_number()) {
      compute.push_back(rec["compute_s"].get<double>());
    }
  }
  if (step_wall.size() < 2) throw std::runtime_error(path + ": fewer than two step records");

  // A step that follows an evaluation also pays for it: those intervals price evaluations,
  // the others price steps.
  std::vector<double> plain;
  for (auto it = std::next(step_wall.begin()); it != step_wall.end(); ++it) {
    const auto prev = std::prev(it);
    if (eval_wall.count(prev->first)) continue;
    plain.push_back(it->second - prev->second);
  }
  RunCost cost;
  if (!plain.empty()) {
    std::nth_element(plain.begin(), plain.begin() + plain.size() / 2, plain.end());
    cost.step_s = std::max(0.0, plain[plain.size() / 2]);
  }
  if (!compute.empty()) {
    std::nth_element(compute.begin(), compute.begin() + compute.size() / 2, compute.end());
    cost.step_compute_s = compute[compute.size() / 2];
  }
  double evals = 0;
  for (const auto& [step, wall] : eval_wall) {
    const auto at = step_wall.find(step);
    if (at != step_wall.end()) evals += std::max(0.0, wall - at->second);
  }
  if (!eval_wall.empty()) cost.eval_s = evals / static_cast<double>(eval_wall.size());
  const double counted = cost.estimate_s(static_cast<std::int64_t>(step_wall.size()),
                                         static_cast<std::int64_t>(eval_wall.size()));
  cost.startup_s = std::max(0.0, elapsed_s - counted);
  return cost;
}

}  // namespace gradwire
