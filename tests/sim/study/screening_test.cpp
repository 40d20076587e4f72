// What `gradwire advise` screens and how it sizes the screening: the codec families, the
// checks on the scenario, the evaluation interval, fitting the budget, the pilot's prices, and
// (end to end, with the real executable) the advice it writes.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "RunGradwire.h"

#include "common/ConfigError.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/study/CodecScreening.h"
#include "sim/study/RunCost.h"
#include "sim/study/SweepPlan.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;

nlohmann::json tiny_scenario() {
  return {{"gradwire", 1},
          {"name", "tiny"},
          {"seed", 1},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"train_samples", 2000}, {"test_samples", 400}}},
          {"training", {{"workers", 2}, {"steps", 240}, {"batch", 16}, {"eval_every", 60},
                        {"target_accuracy", 0.6}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"topology", {{"kind", "ring"}}},
          {"network", {{"family", "ethernet"}, {"rate", "100Mbps"}}}};
}

CodecScreening screening_of(const nlohmann::json& doc) {
  return CodecScreening(doc, load_scenario(doc));
}

std::string config_error_path(const nlohmann::json& doc) {
  try {
    screening_of(doc);
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "(accepted)";
}

TEST(CodecScreening, ScreensOneCodecPerFamilyAndTheScenariosOwn) {
  auto doc = tiny_scenario();
  const CodecScreening screening = screening_of(doc);
  std::vector<std::string> kinds;
  for (const auto& c : screening.candidates()) kinds.push_back(c.codec.at("kind"));
  EXPECT_EQ(kinds, (std::vector<std::string>{"none", "fp16", "topk", "dgc", "qsgd", "powersgd"}));
  EXPECT_EQ(screening.candidates().front().family, "dense");

  // DGC's warm-up is scaled to the run (4 stages in the first third) and the projection is told
  // where it ends.
  const auto& dgc = screening.candidates()[3];
  EXPECT_EQ(dgc.codec.at("warmup_stage_steps"), 240 / 12);
  EXPECT_EQ(dgc.settled_after, 4 * (240 / 12));

  doc["codec"] = {{"kind", "terngrad"}};
  const auto with_own = screening_of(doc);
  ASSERT_EQ(with_own.candidates().size(), 7u);
  EXPECT_EQ(with_own.candidates().back().codec, doc["codec"]);
  // The scenario's own DGC: its warm-up from its own stages and densities.
  doc["codec"] = {{"kind", "dgc"}, {"warmup_stage_steps", 10}, {"warmup_densities", "0.25,0.0625"}};
  EXPECT_EQ(screening_of(doc).candidates().back().settled_after, 20);
  doc["codec"] = {{"kind", "fp16"}};  // already screened: not twice
  EXPECT_EQ(screening_of(doc).candidates().size(), 6u);
}

TEST(CodecScreening, RefusesScenariosItCannotRankWithTheirPath) {
  auto doc = tiny_scenario();
  doc["training"].erase("target_accuracy");
  EXPECT_EQ(config_error_path(doc), "training.target_accuracy");
  doc = tiny_scenario();
  doc["topology"] = {{"kind", "gossip"}};
  EXPECT_EQ(config_error_path(doc), "topology.kind");
}

TEST(CodecScreening, EvaluatesOftenEnoughAtStepsTheScenarioAlsoEvaluates) {
  const auto s = screening_of(tiny_scenario());  // eval_every 60
  for (std::int64_t steps : {20, 45, 100, 119, 120, 180, 240}) {
    const std::int64_t every = s.eval_every(steps);
    EXPECT_EQ(60 % every, 0) << steps;  // the scenario's evaluations are among the screening's
    EXPECT_GE(steps / every, CodecScreening::kMinEvaluations) << steps;
    // No larger divisor of 60 would still give enough evaluations.
    for (std::int64_t d = every + 1; d <= 60; ++d) {
      if (60 % d == 0) {
        EXPECT_LT(steps / d, CodecScreening::kMinEvaluations) << steps << " " << d;
      }
    }
  }
  EXPECT_EQ(s.eval_every(240), 30);
}

TEST(CodecScreening, FitsTheBudgetAndNeverRunsLongerThanTheScenario) {
  const auto s = screening_of(tiny_scenario());
  const RunCost cost{1.0, 0.01, 0.2, 0.002};
  for (double seconds : {30.0, 60.0, 120.0}) {
    for (int parallel : {1, 2}) {
      const std::int64_t steps = s.steps_within(cost, seconds, parallel);
      ASSERT_GT(steps, 0) << seconds;
      EXPECT_LE(steps, s.full_steps());
      if (steps < s.full_steps()) {
        EXPECT_LE(s.planned_s(cost, steps, parallel), seconds * CodecScreening::kPlannedShare);
        EXPECT_GT(s.planned_s(cost, steps + 1, parallel), seconds * CodecScreening::kPlannedShare);
      }
    }
  }
  // Two runs at once take half the waves: at least as many steps fit.
  EXPECT_GE(s.steps_within(cost, 30, 2), s.steps_within(cost, 30, 1));
  // Not even the minimum fits: 0, so the command can say how much budget is needed.
  EXPECT_EQ(s.steps_within(cost, 5, 1), 0);
  EXPECT_EQ(s.steps_within(RunCost{0.1, 1e-4, 0.01, 0.002}, 600, 2), s.full_steps());
}

TEST(CodecScreening, ScreeningRunsArePrefixesOfTheScenarioWithFixedComputeWhenItIsMeasured) {
  auto doc = tiny_scenario();
  doc["compute"] = {{"mode", "measured"}, {"scale", 2.0}, {"threads", 1}};
  CodecScreening s = screening_of(doc);
  s.fix_compute(0.0042);
  const SweepPlan plan = SweepPlan::expand(s.sweep(100), ".");
  ASSERT_EQ(plan.runs.size(), s.candidates().size());
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const auto& run = plan.runs[i].scenario;
    EXPECT_EQ(run["training"]["steps"], 100);
    EXPECT_EQ(run["training"]["eval_every"], s.eval_every(100));
    EXPECT_EQ(run["training"]["target_accuracy"], 0.6);
    EXPECT_EQ(run["seed"], 1);
    EXPECT_EQ(run["codec"], s.candidates()[i].codec);
    EXPECT_EQ(run["compute"]["mode"], "fixed");
    EXPECT_EQ(run["compute"]["seconds"], 0.0042);
    EXPECT_FALSE(run["compute"].contains("scale"));
    // Measured compute times codecs by default; the fixed screening keeps doing so.
    EXPECT_EQ(run["compute"]["codec_time"], "measured");
    EXPECT_NO_THROW(load_scenario(run));
  }
  EXPECT_NE(s.sweep(100)["name"], s.sweep(120)["name"]);  // a new length is a new screening
}

class PilotFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradwire-pilot-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PilotFolder, PricesStepsEvaluationsAndStartUpFromThePilotsWallClock) {
  // 10 steps of 0.05 s after 0.7 s of start-up; an evaluation of 0.4 s after steps 5 and 10;
  // 0.3 s of writing outputs at the end.
  std::ofstream out(dir_ / "metrics.jsonl");
  double wall = 0.7;
  for (int step = 1; step <= 10; ++step) {
    wall += 0.05;
    out << nlohmann::json{{"type", "step"}, {"step", step}, {"wall_time_s", wall},
                          {"compute_s", step == 1 ? 0.5 : 0.003}}.dump() << "\n";
    if (step % 5 == 0) {
      wall += 0.4;
      out << nlohmann::json{{"type", "eval"}, {"step", step}, {"wall_time_s", wall}}.dump() << "\n";
    }
  }
  out.close();
  const RunCost cost = RunCost::from_run(dir_.string(), wall + 0.3);
  EXPECT_NEAR(cost.step_s, 0.05, 1e-9);
  EXPECT_NEAR(cost.eval_s, 0.4, 1e-9);
  EXPECT_NEAR(cost.startup_s, 1.0, 1e-9);
  EXPECT_NEAR(cost.step_compute_s, 0.003, 1e-12);  // the median: the slow first step is not it
  EXPECT_NEAR(cost.estimate_s(10, 2), wall + 0.3, 1e-9);
  EXPECT_THROW(RunCost::from_run((dir_ / "missing").string(), 1), std::runtime_error);
  // A record whose step or wall time is not a number names the file and line (exit 2 from
  // advise), not a JSON library's type error.
  std::ofstream(dir_ / "metrics.jsonl", std::ios::app)
      << R"({"type": "step", "step": 11, "wall_time_s": "late"})" << "\n";
  try {
    RunCost::from_run(dir_.string(), 1);
    ADD_FAILURE() << "a string wall_time_s was priced";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), (dir_ / "metrics.jsonl").string() + ":13") << e.what();
  }
}

class Advise : public PilotFolder {};

TEST_F(Advise, RanksEveryCodecWithinItsBudgetAndWritesTheAdvice) {
  std::ofstream(dir_ / "tiny.json") << tiny_scenario().dump(2);
  const auto start = std::chrono::steady_clock::now();
  const auto r = gradwire::testing::run_gradwire("advise " + (dir_ / "tiny.json").string() +
                                                 " --budget 1 -j 2 --out " + dir_.string());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_LT(took, 60.0) << r.output;
  EXPECT_NE(r.output.find("ETA"), std::string::npos) << r.output;  // progress while screening
  const fs::path folder = dir_ / "advise-tiny";
  std::ifstream in(folder / "advice.json");
  const auto advice = nlohmann::json::parse(in);
  ASSERT_EQ(advice["ranking"].size(), 6u);
  // Ranked by time to target: every entry with a time comes before those without, in order.
  double last = 0;
  bool untimed = false;
  for (const auto& e : advice["ranking"]) {
    if (e["time_to_target_s"].is_null()) {
      untimed = true;
      continue;
    }
    EXPECT_FALSE(untimed) << advice.dump(2);
    EXPECT_GE(e["time_to_target_s"].get<double>(), last);
    last = e["time_to_target_s"];
  }
  // The answer names the winner, which is the first of the ranking.
  const std::string answer = advice["answer"];
  EXPECT_NE(answer.find(advice["ranking"][0]["label"].get<std::string>()), std::string::npos) << answer;
  EXPECT_NE(r.output.find(answer), std::string::npos);
  EXPECT_TRUE(fs::exists(folder / "advice.md"));
  EXPECT_NE(r.output.find("advise took"), std::string::npos);

  // The same command again reuses the finished pilot and screening runs.
  const auto again = gradwire::testing::run_gradwire("advise " + (dir_ / "tiny.json").string() +
                                                     " --budget 1 -j 2 -q --out " + dir_.string());
  ASSERT_EQ(again.code, 0) << again.output;
}

TEST_F(Advise, BadInputIsExitTwoWithThePathAndLeavesNoFolder) {
  auto doc = tiny_scenario();
  doc["training"].erase("target_accuracy");
  std::ofstream(dir_ / "no-target.json") << doc.dump(2);
  auto r = gradwire::testing::run_gradwire("advise " + (dir_ / "no-target.json").string() +
                                           " --out " + dir_.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("training.target_accuracy"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "advise-tiny"));

  // A budget too small for the minimum screening says how much is needed.
  std::ofstream(dir_ / "tiny.json") << tiny_scenario().dump(2);
  r = gradwire::testing::run_gradwire("advise " + (dir_ / "tiny.json").string() +
                                      " --budget 0.1 -q --out " + dir_.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--budget: expected at least"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gradwire
