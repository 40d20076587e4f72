// Measured compute charges what a pass costs on a core of its own. A run whose core is shared
// with two spinning threads (the machine's load, made certain) charges each pass its thread's
// CPU time, not the inflated wall time, and says in summary.json and once on stderr that the
// two disagreed. With compute.threads > 1 set, the pass is charged its wall time.
#include <sched.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

nlohmann::json measured_run(const std::string& name) {
  return {{"gradwire", 1},
          {"name", name},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {256}}}},
          {"dataset", {{"kind", "synthetic"}, {"features", 256}, {"train_samples", 4096},
                       {"test_samples", 256}}},
          {"training", {{"workers", 2}, {"steps", 30}, {"batch", 128}, {"eval_every", 30},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "measured"}, {"scale", 2.0}, {"device", "cpu"}}},
          {"codec", {{"kind", "none"}}},
          {"topology", {{"kind", "ring"}}},
          {"network", {{"rate", "10Gbps"}}}};
}

/// Simulated compute the run charged, over every worker and step.
double charged_compute_s(const nlohmann::json& summary, int workers) {
  return summary["mean_step_compute_s"].get<double>() * summary["steps"].get<double>() * workers;
}

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// While alive, the calling thread and two threads that spin without pause share one CPU: the
/// calling thread then gets about a third of it, as beside two busy programs on a full machine.
class SharedCore {
 public:
  SharedCore() {
    CPU_ZERO(&before_);
    if (sched_getaffinity(0, sizeof before_, &before_) != 0) return;
    const int cpu = sched_getcpu();
    if (cpu < 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return;  // this thread only
    pinned_ = true;
    for (int i = 0; i < 2; ++i) {
      // Started after the pin, so they inherit it.
      spinners_.emplace_back([this] {
        volatile unsigned sink = 0;
        while (!stop_) sink = sink + 1;
      });
    }
  }
  ~SharedCore() {
    stop_ = true;
    for (auto& t : spinners_) t.join();
    if (pinned_) sched_setaffinity(0, sizeof before_, &before_);
  }
  bool pinned() const { return pinned_; }

 private:
  cpu_set_t before_;
  bool pinned_ = false;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> spinners_;
};

TEST(MeasuredCompute, ChargesThePassesCpuTimeAndWarnsWhenTheCoreWasShared) {
  const Scenario sc = load_scenario(measured_run("measured-shared-core"));
  RunResult r;
  std::string err;
  {
    SharedCore shared;
    if (!shared.pinned()) GTEST_SKIP() << "cannot pin this thread to one CPU (sched_setaffinity)";
    ::testing::internal::CaptureStderr();
    r = Engine(sc).run("", nullptr);
    err = ::testing::internal::GetCapturedStderr();
  }
  const nlohmann::json& s = r.summary;
  ASSERT_TRUE(s.contains("measured_compute")) << s.dump(2);
  const nlohmann::json& m = s["measured_compute"];
  // compute.threads left at its default: one LibTorch thread, whose CPU time is charged.
  EXPECT_EQ(m["clock"], "thread_cpu");
  EXPECT_EQ(m["threads"], 1);
  EXPECT_EQ(m["passes"], 2 * 30);
  const double wall = m["pass_wall_s"].get<double>();
  const double cpu = m["pass_cpu_s"].get<double>();
  // Two spinners on the same core: the passes waited for about two thirds of their wall time.
  EXPECT_GT(wall, 1.5 * cpu) << "wall " << wall << " s, CPU " << cpu << " s";
  // Every step was charged its pass's CPU time x scale, none of the waiting.
  EXPECT_NEAR(charged_compute_s(s, 2), 2.0 * cpu, 1e-9 * cpu);
  ASSERT_TRUE(s.contains("warnings"));
  ASSERT_EQ(s["warnings"].size(), 1u);
  const std::string warning = s["warnings"][0];
  EXPECT_NE(warning.find("compute.mode \"measured\""), std::string::npos) << warning;
  EXPECT_NE(warning.find("charged the CPU time"), std::string::npos) << warning;
  // Printed once on stderr, even though the run printed no progress.
  EXPECT_EQ(occurrences(err, "[measured-shared-core] warning: "), 1) << err;
  EXPECT_EQ(occurrences(err, warning), 1) << err;
}

TEST(MeasuredCompute, SeveralThreadsAreChargedWallTime) {
  auto doc = measured_run("measured-two-threads");
  doc["compute"]["threads"] = 2;
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  torch::set_num_threads(1);  // back to the test program's setting
  const nlohmann::json& m = r.summary["measured_compute"];
  EXPECT_EQ(m["clock"], "wall");
  EXPECT_EQ(m["threads"], 2);
  EXPECT_NEAR(charged_compute_s(r.summary, 2), 2.0 * m["pass_wall_s"].get<double>(),
              1e-9 * m["pass_wall_s"].get<double>());
}

TEST(MeasuredCompute, OtherModesCarryNoMeasurement) {
  auto doc = measured_run("fixed");
  doc["compute"] = {{"mode", "fixed"}, {"seconds", 0.001}, {"threads", 1}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_FALSE(r.summary.contains("measured_compute"));
  EXPECT_FALSE(r.summary.contains("warnings"));
}

}  // namespace
}  // namespace gradwire
