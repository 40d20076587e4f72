// Workers that leave (and rejoin) mid-run: sync PS, ring and gossip must not stall, must record
// the events, and the survivors must keep training. Small synthetic runs (fixed compute).
#include <sstream>

#include <gtest/gtest.h>

#include "TestNames.h"
#include "common/ConfigError.h"
#include "MetricsLines.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

// 4 workers, 2 ms of compute per step, 60 steps (~ 0.2 s simulated without faults).
nlohmann::json run_doc(const std::string& kind) {
  return {{"gradwire", 1},
          {"name", "faults-" + kind},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 0.6}, {"features", 16},
                       {"train_samples", 4000}, {"test_samples", 1000}}},
          {"training", {{"workers", 4}, {"steps", 60}, {"batch", 16}, {"eval_every", 20},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"topology", {{"kind", kind}, {"timeout", "10ms"}}},
          {"network", {{"rate", "1Gbps"}}}};
}

using testing::lines_of;

std::vector<nlohmann::json> events(const RunResult& r, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const auto& e : lines_of(r.metrics_jsonl, "event")) {
    if (e["event"] == kind) out.push_back(e);
  }
  return out;
}

class Faults : public ::testing::TestWithParam<std::string> {};

TEST_P(Faults, AWorkerThatLeavesDoesNotStallTheOthers) {
  auto doc = run_doc(GetParam());
  doc["faults"] = {{{"rank", 2}, {"leave_at", "50ms"}}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  // Every step was completed by the survivors (no hang), and the event was recorded.
  const auto steps = lines_of(r.metrics_jsonl, "step");
  ASSERT_EQ(steps.size(), 60u);
  EXPECT_EQ(steps.back()["step"], 60);
  ASSERT_EQ(events(r, "leave").size(), 1u);
  EXPECT_EQ(events(r, "leave")[0]["rank"], 2);
  EXPECT_NEAR(events(r, "leave")[0]["sim_time_s"].get<double>(), 0.05, 1e-9);
  ASSERT_GE(events(r, "detected").size(), 1u);
  EXPECT_EQ(events(r, "detected")[0]["rank"], 2);
  // Detection waits for the timeout, no longer than a few.
  const double detected = events(r, "detected")[0]["sim_time_s"].get<double>();
  EXPECT_GE(detected, 0.05);
  EXPECT_LT(detected, 0.05 + 0.05);
  EXPECT_EQ(r.summary["fault_events"]["leave"], 1);
  EXPECT_GE(r.summary["fault_events"]["detected"].get<int>(), 1);
  // After the leave, step lines carry the three survivors only.
  EXPECT_EQ(steps.back()["bytes_sent"][2], 0);
  std::uint64_t survivors = 0;  // (a gossip node whose only peer is the gone one sends nothing)
  for (int rank : {0, 1, 3}) survivors += steps.back()["bytes_sent"][rank].get<std::uint64_t>();
  EXPECT_GT(survivors, 0u);
  // The survivors kept training.
  EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.5);
}

TEST_P(Faults, AWorkerThatRejoinsResumesItsSteps) {
  auto doc = run_doc(GetParam());
  doc["faults"] = {{{"rank", 1}, {"leave_at", "30ms"}, {"rejoin_at", "80ms"}}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  const auto steps = lines_of(r.metrics_jsonl, "step");
  ASSERT_EQ(steps.size(), 60u);
  ASSERT_EQ(events(r, "rejoin").size(), 1u);
  ASSERT_EQ(events(r, "resume").size(), 1u);
  const auto resume = events(r, "resume")[0];
  EXPECT_GE(resume["sim_time_s"].get<double>(), 0.08);
  const std::int64_t from = resume["step"].get<std::int64_t>();
  EXPECT_LT(from, 60);
  // From its resume step on, the worker reports steps again (it sends bytes).
  EXPECT_GT(steps.back()["bytes_sent"][1].get<std::uint64_t>(), 0u);
  EXPECT_EQ(steps.back()["payload_bytes"].size(), 4u);
  EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.5);
  EXPECT_EQ(r.summary["fault_events"]["resume"], 1);
}

INSTANTIATE_TEST_SUITE_P(Schemes, Faults, ::testing::Values("ps", "ring", "gossip"),
                         [](const auto& info) { return info.param; });

TEST(Faults, NoFaultsMeansNoEventsAndTheSameRun) {
  auto doc = run_doc("ring");
  doc["training"]["steps"] = 10;
  const RunResult a = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_TRUE(lines_of(a.metrics_jsonl, "event").empty());
  EXPECT_FALSE(a.summary.contains("fault_events"));
  // A fault after the end changes nothing in what was trained.
  doc["faults"] = {{{"rank", 1}, {"leave_at", "100s"}}};
  const RunResult b = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_EQ(a.summary["final_accuracy"], b.summary["final_accuracy"]);
  EXPECT_EQ(a.summary["sim_time_s"], b.summary["sim_time_s"]);
}

std::string error_path(const nlohmann::json& doc) {
  try {
    load_scenario(doc);
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "(accepted)";
}

TEST(Faults, ValidationNamesTheProblem) {
  auto doc = run_doc("ring");
  doc["faults"] = {{{"rank", 7}, {"leave_at", "1s"}}};
  EXPECT_EQ(error_path(doc), "faults[0].rank");
  doc["faults"] = {{{"rank", 1}}};
  EXPECT_EQ(error_path(doc), "faults[0].leave_at");
  doc["faults"] = {{{"rank", 1}, {"leave_at", "soon"}}};
  EXPECT_EQ(error_path(doc), "faults[0].leave_at");
  doc["faults"] = {{{"rank", 1}, {"leave_at", "1s"}, {"rejoin_at", "0.5s"}}};
  EXPECT_EQ(error_path(doc), "faults[0].rejoin_at");
  doc["faults"] = {{{"rank", 1}, {"leave_at", "1s"}}, {{"rank", 1}, {"leave_at", "2s"}}};
  EXPECT_EQ(error_path(doc), "faults[1].rank");
  doc["faults"] = {{{"rank", 1}, {"leave_at", "1s"}, {"when", 3}}};
  EXPECT_EQ(error_path(doc), "faults[0].when");
  doc["faults"] = {{"rank", 1}};
  EXPECT_EQ(error_path(doc), "faults");
  doc["faults"] = nlohmann::json::array();
  for (int r = 0; r < 4; ++r) doc["faults"].push_back({{"rank", r}, {"leave_at", "1s"}});
  EXPECT_EQ(error_path(doc), "faults");
  doc = run_doc("ring");
  doc["topology"]["timeout"] = "0ms";
  EXPECT_EQ(error_path(doc), "topology.timeout");
  doc = run_doc("leader");
  doc["faults"] = {{{"rank", 1}, {"leave_at", "1s"}}};
  EXPECT_EQ(error_path(doc), "faults");
  // Multi-round codecs are refused when the run is set up (before any output).
  doc = run_doc("ring");
  doc["codec"] = {{"kind", "powersgd"}};
  doc["faults"] = {{{"rank", 1}, {"leave_at", "1s"}}};
  try {
    Engine(load_scenario(doc)).run("", nullptr);
    ADD_FAILURE() << "powersgd with faults accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "codec.kind");
  }
}

}  // namespace
}  // namespace gradwire
