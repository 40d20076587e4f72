// LGC's autoencoder training is codec work in simulated time: a whole run through the engine
// and the simulated network (lgc_ring over a ring, lgc_ps through a parameter server), codec
// time declared on a device profile, with and without training iterations. The steps whose
// first round broadcasts freshly trained weights (the first phase-2 step and each fine-tune)
// show the training in `codec_s` and last longer by at least rank 0's training time, since
// every worker waits for the weights; the other steps are untouched.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

using nlohmann::json;

constexpr int kWorkers = 4;
constexpr int kSteps = 11;

json scenario(const std::string& kind, int train_iters) {
  const bool ps = kind == "lgc_ps";
  return {{"gradwire", 1},
          {"name", "lgc-training-time"},
          {"seed", 3},
          {"model", {{"kind", "mlp"}, {"hidden", {64}}}},
          {"dataset", {{"kind", "synthetic"}, {"train_samples", 1024}, {"test_samples", 128}}},
          {"training", {{"workers", kWorkers}, {"steps", kSteps}, {"batch", 16},
                        {"eval_every", kSteps}, {"buckets", "none"}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1},
                       {"codec_time", "profile"}, {"codec_device", "jetson-nano"}}},
          {"codec", {{"kind", kind}, {"ratio", 0.1}, {"phase1_steps", 3},
                     {"ae_train_iters", train_iters}, {"ae_finetune_every", 4},
                     {"ae_finetune_iters", train_iters}}},
          {"topology", {{"kind", ps ? "ps" : "ring"}, {"mode", "sync"}}},
          {"network", {{"rate", "1Gbps"}, {"delay", "5us"}, {"mtu", 1500}}}};
}

struct Steps {
  std::vector<double> codec_s;     // mean over the workers, per step
  std::vector<double> duration_s;  // simulated time the step took
};

Steps run(const std::string& kind, int train_iters) {
  const RunResult r = Engine(load_scenario(scenario(kind, train_iters))).run("", nullptr);
  std::istringstream in(r.metrics_jsonl);
  Steps s;
  double previous = 0;
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j["type"] != "step") continue;
    s.codec_s.push_back(j.at("codec_s").get<double>());
    s.duration_s.push_back(j.at("sim_time_s").get<double>() - previous);
    previous = j.at("sim_time_s").get<double>();
  }
  return s;
}

TEST(LgcTrainingTime, TrainingStepsCostTheirTrainingInCodecTimeAndSimulatedTime) {
  for (const std::string kind : {"lgc_ring", "lgc_ps"}) {
    SCOPED_TRACE(kind);
    const Steps none = run(kind, 0);
    const Steps some = run(kind, 100);
    const Steps more = run(kind, 300);
    ASSERT_EQ(none.codec_s.size(), static_cast<std::size_t>(kSteps));
    ASSERT_EQ(some.codec_s.size(), none.codec_s.size());
    ASSERT_EQ(more.codec_s.size(), none.codec_s.size());
    // Steps are 0-based here: phase 2 starts at step 3, fine-tunes at 7 (and 11, past the end).
    for (std::size_t step = 0; step < none.codec_s.size(); ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const double extra = some.codec_s[step] - none.codec_s[step];
      const double extra_more = more.codec_s[step] - none.codec_s[step];
      if (step == 3 || step == 7) {
        EXPECT_GT(extra, 0.0);
        EXPECT_GT(extra_more, 2.9 * extra);  // three times the iterations
        // Rank 0 alone trains (codec_s is the workers' mean); the others wait for its
        // broadcast, so the step lasts at least that much longer.
        const double training_s = kWorkers * extra;
        EXPECT_GT(some.duration_s[step] - none.duration_s[step], 0.99 * training_s);
        EXPECT_GT(more.duration_s[step] - none.duration_s[step], 0.99 * kWorkers * extra_more);
      } else {
        // The same work (to the rounding of the clocks' sums, which start from other values).
        EXPECT_NEAR(some.codec_s[step], none.codec_s[step], 1e-9 * none.codec_s[step]);
        EXPECT_NEAR(more.codec_s[step], none.codec_s[step], 1e-9 * none.codec_s[step]);
      }
    }
  }
}

}  // namespace
}  // namespace gradwire
