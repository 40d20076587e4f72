#include "sim/study/CodecScreening.h"

#include <algorithm>
#include <cmath>

#include "codecs/CodecRegistry.h"
#include "codecs/sparsify/DgcCodec.h"
#include "common/ConfigError.h"

namespace gradwire {

namespace {

nlohmann::json sweep_of(const nlohmann::json& base, const std::string& name, std::int64_t steps,
                        std::int64_t eval_every, const std::vector<ScreeningCandidate>& cands) {
  nlohmann::json codecs = nlohmann::json::array();
  for (const auto& c : cands) codecs.push_back(c.codec);
  return {{"gradwire_sweep", 1},
          {"name", name},
          {"description", "gradwire advise: codec families screened on a prefix of the scenario"},
          {"base", base},
          {"set", {{"training.steps", steps}, {"training.eval_every", eval_every}}},
          {"zip", {{"codec", codecs}}}};
}

// Steps a codec spends in its warm-up, from its typed options (declared defaults filled in):
// DGC's stages, one per warm-up density. A stage of 0 steps means one epoch, which only the
// run knows; it counts as no warm-up.
std::int64_t warmup_steps(const nlohmann::json& codec) {
  const auto dgc = CodecRegistry::builtin().options<DgcOptions>(codec, "codec");
  if (!dgc || !dgc->warmup) return 0;
  return static_cast<std::int64_t>(dgc->warmup_densities.size()) * dgc->warmup_stage_steps;
}

}  // namespace

CodecScreening::CodecScreening(nlohmann::json document, const Scenario& scenario)
    : document_(std::move(document)),
      full_steps_(scenario.training.steps),
      scenario_eval_every_(std::max<std::int64_t>(1, scenario.training.eval_every)),
      codec_time_(scenario.compute.codec_time) {
  if (scenario.training.target_accuracy <= 0 && scenario.training.target_perplexity <= 0) {
    throw ConfigError("training.target_accuracy",
                      "missing; advise ranks codecs by the time to reach a target: set "
                      "training.target_accuracy (or training.target_perplexity)");
  }
  if (!scenario.topology.scheme().sends_gradients) {
    throw ConfigError("topology.kind",
                      "expected a scheme that exchanges gradients (ring or ps) for advise to "
                      "compare codecs; " + scenario.topology.name() + " sends parameters dense");
  }
  // One setting per family, each its paper's default or the setting its paper trains well with
  // at an unchanged learning rate. Sign-based codecs are left out: they need a learning rate of
  // their own (see scenarios/codecs/).
  const std::int64_t warmup_stage = std::max<std::int64_t>(1, full_steps_ / 12);
  candidates_ = {
      {"dense", "dense SGD (fp32)", {{"kind", "none"}}},
      {"half precision", "fp16", {{"kind", "fp16"}}},
      {"sparsification", "top-k 1% + error feedback",
       {{"kind", "topk"}, {"ratio", 0.01}, {"error_feedback", true}}},
      {"sparsification with momentum correction",
       "DGC 0.1%, 4 warm-up stages of " + std::to_string(warmup_stage) + " steps",
       {{"kind", "dgc"}, {"warmup_stage_steps", warmup_stage}}},
      {"quantization", "QSGD 4-bit (7 levels)", {{"kind", "qsgd"}, {"levels", 7}}},
      {"low rank", "PowerSGD rank 2", {{"kind", "powersgd"}, {"rank", 2}}},
  };
  // The user's own codec is screened too, unless it is one of the above.
  const nlohmann::json mine = document_.value("codec", nlohmann::json::object());
  const bool listed = std::any_of(candidates_.begin(), candidates_.end(),
                                  [&](const ScreeningCandidate& c) { return c.codec == mine; });
  if (!listed && mine.is_object() && mine.contains("kind")) {
    candidates_.push_back(
        {"the scenario's codec", "scenario's " + mine.at("kind").get<std::string>(), mine});
  }
  for (auto& c : candidates_) c.settled_after = warmup_steps(c.codec);
}

std::int64_t CodecScreening::pilot_steps() const { return std::min<std::int64_t>(full_steps_, 30); }

nlohmann::json CodecScreening::pilot_sweep() const {
  const std::int64_t steps = pilot_steps();
  return sweep_of(document_, "pilot-" + std::to_string(steps) + "-steps", steps,
                  std::max<std::int64_t>(1, steps / 2), {candidates_.front()});
}

std::int64_t CodecScreening::minimum_steps() const {
  return std::min<std::int64_t>(full_steps_, std::max<std::int64_t>(20, kMinEvaluations));
}

std::int64_t CodecScreening::eval_every(std::int64_t steps) const {
  for (std::int64_t d = scenario_eval_every_; d > 1; --d) {
    if (scenario_eval_every_ % d == 0 && steps / d >= kMinEvaluations) return d;
  }
  return 1;
}

double CodecScreening::planned_s(const RunCost& cost, std::int64_t steps, int parallel) const {
  const std::int64_t waves =
      (static_cast<std::int64_t>(candidates_.size()) + parallel - 1) / std::max(1, parallel);
  const RunCost codec_cost{cost.startup_s, cost.step_s * kCodecStepFactor, cost.eval_s};
  return static_cast<double>(waves) * codec_cost.estimate_s(steps, steps / eval_every(steps));
}

std::int64_t CodecScreening::steps_within(const RunCost& cost, double seconds, int parallel) const {
  const double allowed = seconds * kPlannedShare;
  if (planned_s(cost, minimum_steps(), parallel) > allowed) return 0;
  // planned_s grows with steps (evaluations are at most one per step), so bisect.
  std::int64_t lo = minimum_steps(), hi = full_steps_;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (planned_s(cost, mid, parallel) <= allowed) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

void CodecScreening::fix_compute(double seconds) {
  nlohmann::json& compute = document_["compute"];
  compute["mode"] = "fixed";
  compute["seconds"] = seconds;
  compute.erase("scale");
  if (!compute.contains("codec_time")) compute["codec_time"] = codec_time_;
}

nlohmann::json CodecScreening::sweep(std::int64_t steps) const {
  return sweep_of(document_, "screening-" + std::to_string(steps) + "-steps", steps,
                  eval_every(steps), candidates_);
}

}  // namespace gradwire
