// The synchronous parameter server's step, split into its push and pull phases: what a user
// reads to tell uplink from downlink (and, on a shared radio, contention) in a step.
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

nlohmann::json ps_run(const nlohmann::json& codec, const nlohmann::json& network) {
  return {{"gradwire", 1},
          {"name", "phases"},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {64}}}},
          {"dataset", {{"kind", "synthetic"}, {"train_samples", 2000}, {"test_samples", 200}}},
          {"training", {{"workers", 4}, {"steps", 6}, {"batch", 16}, {"buckets", "none"}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.004}, {"threads", 1}}},
          {"codec", codec},
          {"topology", {{"kind", "ps"}}},
          {"network", network}};
}

std::vector<nlohmann::json> step_lines(const RunResult& r) {
  std::vector<nlohmann::json> out;
  std::istringstream in(r.metrics_jsonl);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "step") out.push_back(j);
  }
  return out;
}

RunResult run(const nlohmann::json& doc) {
  Engine engine(load_scenario(doc));
  return engine.run("", nullptr);
}

const nlohmann::json kEthernet = {{"family", "ethernet"}, {"rate", "100Mbps"}, {"delay", "50us"}};

TEST(Phases, ComputePushAndPullBoundTheStep) {
  const RunResult r = run(ps_run({{"kind", "none"}}, kEthernet));
  const auto steps = step_lines(r);
  ASSERT_EQ(steps.size(), 6u);
  double previous_end = -1;
  for (const auto& s : steps) {
    ASSERT_TRUE(s.contains("push_s") && s.contains("pull_s")) << s.dump();
    const double push = s["push_s"], pull = s["pull_s"];
    EXPECT_GT(push, 0);
    EXPECT_GT(pull, 0);
    // Step k begins for each worker when k-1's reply reaches it, so the first to get the reply
    // pushes before the last has it: a step is at least its compute and pull (the last
    // worker's reply came at the previous step's end) and at most compute, push and pull.
    if (previous_end >= 0) {
      const double step = s["sim_time_s"].get<double>() - previous_end;
      const double compute = s["compute_s"];
      EXPECT_LE(step, compute + push + pull + 1e-9) << s.dump();
      EXPECT_GE(step, compute + pull - 1e-9) << s.dump();
    }
    previous_end = s["sim_time_s"];
  }
  const nlohmann::json& summary = r.summary;
  EXPECT_GT(summary["mean_step_push_s"].get<double>(), 0);
  EXPECT_GT(summary["mean_step_pull_s"].get<double>(), 0);
}

TEST(Phases, FewerBytesUpShortenThePushNotThePull) {
  // Top-k shrinks what each worker pushes 100x, but the server's reply (the union of four
  // workers' selections) is sent to each of them: the push shrinks far more than the pull.
  const auto dense = step_lines(run(ps_run({{"kind", "none"}}, kEthernet)));
  const auto sparse = step_lines(
      run(ps_run({{"kind", "topk"}, {"ratio", 0.01}, {"error_feedback", true}}, kEthernet)));
  const double dense_push = dense.back()["push_s"], dense_pull = dense.back()["pull_s"];
  const double sparse_push = sparse.back()["push_s"], sparse_pull = sparse.back()["pull_s"];
  EXPECT_LT(sparse_push, dense_push / 10);
  EXPECT_LT(sparse_pull, dense_pull);
  EXPECT_GT(sparse_pull / dense_pull, sparse_push / dense_push);
}

TEST(Phases, EveryRoundOfAMultiRoundCodecCounts) {
  // PowerSGD exchanges two factor sums per step (P, then Q), each a push and a pull.
  const RunResult r = run(ps_run({{"kind", "powersgd"}}, kEthernet));
  for (const auto& s : step_lines(r)) {
    ASSERT_TRUE(s.contains("push_s")) << s.dump();
    EXPECT_GT(s["push_s"].get<double>(), 0);
    EXPECT_GT(s["pull_s"].get<double>(), 0);
  }
}

TEST(Phases, OnlyTheParameterServerTimesPhases) {
  nlohmann::json doc = ps_run({{"kind", "none"}}, kEthernet);
  doc["topology"] = {{"kind", "ring"}};
  const RunResult r = run(doc);
  for (const auto& s : step_lines(r)) EXPECT_FALSE(s.contains("push_s")) << s.dump();
  EXPECT_FALSE(r.summary.contains("mean_step_push_s"));
}

TEST(Phases, StationsContendWhenTheyPushButNotWhenTheAccessPointReplies) {
  // Four stations upload the same bytes the access point sends back to them: the uplinks
  // contend for one channel (collisions, backoff), the access point's downlink does not.
  const nlohmann::json wifi = {{"family", "wifi"}, {"standard", "ax"}, {"width_mhz", 20},
                               {"server", "ap"}, {"rate_control", "constant"}, {"mcs", 7}};
  const auto steps = step_lines(run(ps_run({{"kind", "none"}}, wifi)));
  // The first step, where every station starts pushing at once: later steps' pushes begin
  // while the access point is still replying to the last stations.
  const double push = steps.front()["push_s"], pull = steps.front()["pull_s"];
  std::cout << "4 stations, first step: push " << push << " s, pull " << pull << " s\n";
  EXPECT_GT(push, 1.2 * pull);
}

}  // namespace
}  // namespace gradwire
