// The screening `gradwire advise` runs on a user's scenario: one codec per family, with
// settings that suit the scenario, each trained for a prefix of the scenario's steps, sized so
// that the whole screening fits a wall-time budget.
//
// A screening run is the full run cut short: same seed, data, network and schedules (learning
// rate warm-up and milestones count absolute steps), so its first steps are the full run's
// first steps. Only the evaluation interval is finer, to give the projection of the time to
// target enough points; it divides the scenario's own interval, so the scenario's evaluations
// are among them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/Scenario.h"
#include "sim/study/RunCost.h"

namespace gradwire {

struct ScreeningCandidate {
  std::string family;    ///< "dense", "half precision", "sparsification", ...
  std::string label;     ///< the setting in words: "top-k 1% + error feedback"
  nlohmann::json codec;  ///< the scenario's `codec` object for it
  /// Steps after which the codec runs at its steady setting (the end of a warm-up): the
  /// projection fits only evaluations after it.
  std::int64_t settled_after = 0;
};

class CodecScreening {
 public:
  /// Evaluations a screening run needs at least, for the projection to have a curve to fit.
  static constexpr std::int64_t kMinEvaluations = 6;
  /// Share of the wall budget planned for the runs; the rest absorbs codecs slower than dense
  /// and the report.
  static constexpr double kPlannedShare = 0.7;
  /// Wall price of a step with the slowest screened codec, relative to the dense pilot.
  static constexpr double kCodecStepFactor = 1.5;

  /// `document`: the user's scenario (overrides applied), `scenario`: it loaded. Throws
  /// ConfigError (with the JSON path) when it cannot be screened: no accuracy or perplexity
  /// target, or a scheme that sends parameters instead of gradients.
  CodecScreening(nlohmann::json document, const Scenario& scenario);

  const std::vector<ScreeningCandidate>& candidates() const { return candidates_; }
  std::int64_t full_steps() const { return full_steps_; }

  /// Steps of the pilot run (dense, alone) that prices steps and evaluations.
  std::int64_t pilot_steps() const;
  /// The pilot as a sweep document (one run).
  nlohmann::json pilot_sweep() const;

  /// Fewest steps a screening run may have.
  std::int64_t minimum_steps() const;
  /// Most steps per run for which every candidate fits in `seconds` of wall time with
  /// `parallel` runs at once; 0 when not even minimum_steps() fit. Never above full_steps().
  std::int64_t steps_within(const RunCost& cost, double seconds, int parallel) const;
  /// Evaluation interval of a screening of `steps` steps: the largest divisor of the scenario's
  /// eval_every that gives at least kMinEvaluations evaluations.
  std::int64_t eval_every(std::int64_t steps) const;
  /// Wall seconds the screening of `steps` steps is planned to take.
  double planned_s(const RunCost& cost, std::int64_t steps, int parallel) const;
  /// Replaces measured compute by `seconds` of fixed compute per step (the pilot's median),
  /// keeping codec time as the scenario resolved it: screening runs share the machine, and
  /// their real compute would be timed under each other's load.
  void fix_compute(double seconds);
  /// The screening as a sweep document: every candidate, `steps` steps.
  nlohmann::json sweep(std::int64_t steps) const;

 private:
  nlohmann::json document_;
  std::vector<ScreeningCandidate> candidates_;
  std::int64_t full_steps_ = 0;
  std::int64_t scenario_eval_every_ = 0;
  std::string codec_time_;  ///< compute.codec_time as the scenario resolved it
};

}  // namespace gradwire
