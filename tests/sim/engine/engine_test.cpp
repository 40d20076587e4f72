// End to end on synthetic data: real training over the simulated network learns, fixed-compute
// runs repeat bit for bit, and outputs appear complete or not at all.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "TestNames.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

nlohmann::json synthetic_run(const std::string& topology, const std::string& codec) {
  return {{"gradwire", 1},
          {"name", "e2e-" + topology + "-" + codec},
          {"seed", 3},
          {"model", {{"kind", "mlp"}, {"hidden", {64}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 1.0}, {"train_samples", 4000},
                       {"test_samples", 1000}}},
          {"training", {{"workers", 4}, {"steps", 60}, {"batch", 16}, {"eval_every", 20},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"codec", {{"kind", codec}, {"ratio", 0.05}, {"error_feedback", true}}},
          {"topology", {{"kind", topology}}},
          {"network", {{"rate", "1Gbps"}}}};
}

std::vector<nlohmann::json> lines(const std::string& jsonl) {
  std::vector<nlohmann::json> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Drops the wall-clock fields, which legitimately differ between runs.
std::string deterministic_part(const std::string& jsonl) {
  std::string out;
  for (auto j : lines(jsonl)) {
    j.erase("wall_time_s");
    out += j.dump() + "\n";
  }
  return out;
}

class EndToEnd : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(EndToEnd, LearnsOnSyntheticData) {
  const auto [topology, codec] = GetParam();
  auto doc = synthetic_run(topology, codec);
  if (codec == "none") doc["codec"] = {{"kind", "none"}};
  Engine engine(load_scenario(doc));
  const RunResult r = engine.run("", nullptr);
  const auto all = lines(r.metrics_jsonl);
  double first_loss = -1, last_loss = -1;
  int steps = 0, evals = 0;
  double last_time = 0;
  for (const auto& j : all) {
    if (j["type"] == "step") {
      if (first_loss < 0) first_loss = j["loss"];
      last_loss = j["loss"];
      EXPECT_GE(j["sim_time_s"].get<double>(), last_time);  // simulated time never goes back
      last_time = j["sim_time_s"];
      EXPECT_EQ(j["bytes_sent"].size(), 4u);
      EXPECT_GT(j["comm_s"].get<double>(), 0.0);  // the network took some time
      ++steps;
    } else {
      ++evals;
    }
  }
  EXPECT_EQ(steps, 60);
  EXPECT_EQ(evals, 3);
  EXPECT_LT(last_loss, 0.5 * first_loss) << "loss did not fall: " << first_loss << " -> " << last_loss;
  EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.5);
  EXPECT_GT(r.summary["bytes_on_wire"].get<double>(), 0.0);
  if (codec == "topk") {
    EXPECT_GT(r.summary["compression_ratio"].get<double>(), 5.0);
  }
  // Every step takes at least the fixed compute time.
  EXPECT_GE(r.summary["sim_time_s"].get<double>(), 60 * 0.002);
}

INSTANTIATE_TEST_SUITE_P(Schemes, EndToEnd,
                         ::testing::Combine(::testing::Values("ring", "ps"),
                                            ::testing::Values("none", "topk")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

TEST(Engine, FixedComputeRunsRepeatBitForBit) {
  const auto doc = synthetic_run("ring", "topk");
  const RunResult a = Engine(load_scenario(doc)).run("", nullptr);
  const RunResult b = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_EQ(deterministic_part(a.metrics_jsonl), deterministic_part(b.metrics_jsonl));
  EXPECT_EQ(a.summary["sim_time_s"], b.summary["sim_time_s"]);
  EXPECT_EQ(a.summary["bytes_on_wire"], b.summary["bytes_on_wire"]);
}

TEST(Engine, WritesCompleteOutputs) {
  namespace fs = std::filesystem;
  const fs::path out = fs::temp_directory_path() / ("gradwire-engine-" + std::to_string(::getpid()));
  fs::remove_all(out);
  auto doc = synthetic_run("ring", "topk");
  doc["training"]["steps"] = 10;
  doc["training"]["target_accuracy"] = 0.2;
  const RunResult r = Engine(load_scenario(doc)).run(out.string(), nullptr);
  const fs::path dir = out / doc["name"].get<std::string>();
  EXPECT_EQ(fs::path(r.directory), dir);
  for (const char* f : {"scenario.json", "metrics.jsonl", "summary.json"}) {
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  }
  // Nothing else: no temporary files or staging folders left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(out)) { (void)e; ++entries; }
  EXPECT_EQ(entries, 1);
  std::ifstream in(dir / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  for (const char* key : {"final_accuracy", "sim_time_s", "time_to_target_s", "bytes_on_wire",
                          "dense_bytes", "compression_ratio", "wall_time_s", "ns3_wall_time_s"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  EXPECT_FALSE(summary["time_to_target_s"].is_null());
  EXPECT_FALSE(summary.contains("network_events"));  // an Ethernet star counts nothing
  std::ifstream sin(dir / "scenario.json");
  EXPECT_EQ(nlohmann::json::parse(sin)["training"]["steps"], 10);
  fs::remove_all(out);
}

// What the network counted reaches summary.json: a UE that drives from one eNodeB to the next
// while it trains hands over, and the run's `network_events` says so.
TEST(Engine, SummaryCarriesTheNetworksEventCounts) {
  auto doc = synthetic_run("ps", "none");
  doc["codec"] = {{"kind", "none"}};
  doc["training"]["workers"] = 2;
  doc["training"]["steps"] = 10;
  doc["training"]["eval_every"] = 10;
  doc["compute"]["seconds"] = 0.15;
  doc["network"] = {{"family", "lte"},
                    {"enbs", 2},
                    {"enb_spacing_m", 200},
                    {"server", "edge"},
                    {"handover", "a3-rsrp"},
                    {"placement", {{"kind", "distance"}, {"distance_m", 105}}},
                    {"impairments", {{"mobility", {{"model", "straight"}, {"speed_mps", 40},
                                                   {"bounds_m", 250}}}}}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  ASSERT_TRUE(r.summary.contains("network_events")) << r.summary.dump();
  const auto& events = r.summary["network_events"];
  EXPECT_GE(r.summary["sim_time_s"].get<double>(), 1.5);
  EXPECT_GE(events["handovers"].get<int>(), 1) << events.dump();
  EXPECT_EQ(events["handover_failures"], 0) << events.dump();
}

// The radios' joules reach summary.json's `energy`: every Wi-Fi worker's and the AP server's,
// and their sum; on Ethernet no worker has a radio.
TEST(Engine, SummaryCarriesTheRadiosJoules) {
  auto doc = synthetic_run("ps", "none");
  doc["codec"] = {{"kind", "none"}};
  doc["training"]["workers"] = 2;
  doc["training"]["steps"] = 5;
  doc["training"]["eval_every"] = 5;
  doc["network"] = {{"family", "wifi"}, {"server", "ap"}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  ASSERT_TRUE(r.summary.contains("energy")) << r.summary.dump();
  const auto& energy = r.summary["energy"];
  ASSERT_EQ(energy["workers"].size(), 2u) << energy.dump();
  double total = 0;
  for (const auto& w : energy["workers"]) {
    // At least the idle draw of ns-3's default radio (0.82 W) over the run.
    EXPECT_GT(w["radio_j"].get<double>(), 0.8 * r.summary["sim_time_s"].get<double>()) << w.dump();
    total += w["radio_j"].get<double>();
  }
  total += energy["server"]["radio_j"].get<double>();
  EXPECT_DOUBLE_EQ(energy["radio_total_j"].get<double>(), total);

  doc["network"] = {{"family", "ethernet"}};
  const RunResult wired = Engine(load_scenario(doc)).run("", nullptr);
  if (wired.summary.contains("energy")) {
    for (const auto& w : wired.summary["energy"]["workers"]) {
      EXPECT_FALSE(w.contains("radio_j") && w["radio_j"].is_number()) << w.dump();
    }
  }
}

}  // namespace
}  // namespace gradwire
