// A sweep: one base scenario and axes of values to vary, expanded into named runs.
//
// Sweep file (JSON):
//   {"gradwire_sweep": 1,
//    "name": "dgc-1g-vs-10g",
//    "description": "...",                  // free text: what the study shows, sources
//    "base": "../quickstart.json",          // path relative to the sweep file, or an object
//    "set":  {"training.steps": 300},        // fixed overrides applied to every run (optional)
//    "grid": {"network.rate": ["1Gbps", "10Gbps"], "training.workers": [4, 8]},  // cross product
//    "zip":  {"codec": [{"kind": "none"}, {"kind": "topk"}],                     // aligned lists,
//             "training.batch": [32, 64]},                                       // one axis
//    "exclude": [{"codec.kind": "topk", "training.workers": 3}],  // combinations not to run
//    "seeds": [1, 2],                        // or "repetitions": 3 (seeds 1..3); default [base seed]
//    "question": {"text": "Does DGC over 1 Gbps reach the target before dense over 10 Gbps?",
//                 "candidate": {"codec.kind": "dgc", "network.rate": "1Gbps"},
//                 "baseline": {"codec.kind": "none", "network.rate": "10Gbps"},
//                 "per": ["training.workers"]}}   // optional; answered by `gradwire report`
// Axis values may be any JSON; objects are named by their "kind" and their other values
// (numbers with their key: {"kind": "topk", "ratio": 0.01} -> "topk-ratio0.01",
// {"kind": "ps", "mode": "async"} -> "ps-async"). A whole network object (axis "network") is
// named by its label (sim/study/NetworkLabel.h: its `label` when given, else one made from the
// resolved object) and the fingerprint of the value: "802.11ax-80-MHz-8-stations-within-15-m-
// cf1aa918".
// Each run is named from its axis values ("rate=1Gbps__workers=8__codec=topk-ratio0.01__seed=1"),
// so reruns find finished runs by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradwire {

/// The most runs one sweep file may describe (grid values x zip tuples x seeds).
constexpr std::size_t kMaxSweepRuns = 10000;

struct SweepRun {
  std::string name;                    ///< folder name, derived from the axis values
  nlohmann::json scenario;             ///< the full scenario document for this run
  std::vector<std::string> axis_values;  ///< one string per SweepPlan::axes entry
  std::uint64_t seed = 0;
};

struct SweepPlan {
  std::string name;
  std::vector<std::string> axes;  ///< axis paths in column order (grid, then zip), then "seed"
  std::vector<SweepRun> runs;
  /// The sweep's question (null when it has none): selectors checked to match runs; written to
  /// the sweep folder as question.json for analysis/question.py.
  nlohmann::json question;

  /// Reads and expands a sweep file. ConfigError (JSON path + expected form) on bad input.
  static SweepPlan load(const std::string& path);
  /// Expands an already parsed sweep document; `base_dir` resolves a relative "base" path.
  static SweepPlan expand(const nlohmann::json& sweep, const std::string& base_dir);
};

/// Short, file-system-safe rendering of an axis value: "1Gbps", "8", "topk-ratio0.01".
std::string axis_value_slug(const nlohmann::json& value);

}  // namespace gradwire
