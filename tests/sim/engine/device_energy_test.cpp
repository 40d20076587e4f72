// Workers on different devices and the energy their compute takes: a list of device profiles
// gives each worker its own compute time, and the joules in summary.json and metrics.jsonl are
// the run's own busy seconds at the devices' busy watts plus the rest at their idle watts.
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "common/ConfigError.h"
#include "sim/engine/ComputeTime.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

nlohmann::json run_on(const nlohmann::json& profile) {
  return {{"gradwire", 1},
          {"name", "devices"},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 1.0}, {"train_samples", 2000},
                       {"test_samples", 400}}},
          {"training", {{"workers", 4}, {"steps", 20}, {"batch", 16}, {"eval_every", 5},
                        {"target_accuracy", 0.3},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "profile"}, {"profile", profile}, {"threads", 1}}},
          {"topology", {{"kind", "ring"}}},
          {"network", {{"rate", "1Gbps"}}}};
}

std::vector<nlohmann::json> lines_of(const std::string& jsonl, const std::string& type) {
  std::vector<nlohmann::json> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == type) out.push_back(j);
  }
  return out;
}

std::string config_error_path(const nlohmann::json& doc) {
  try {
    load_scenario(doc);
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "(loaded)";
}

// Joules from the timeline alone: every step line's compute_s (all workers share one device
// here, so the mean is each worker's) plus the optimizer step the device streams, at the
// profile's busy watts; the rest of the run at its idle watts.
TEST(DeviceEnergy, ComputeJoulesAreBusyTimeAtBusyWattsPlusIdleTime) {
  auto doc = run_on("raspberry-pi-5");
  doc["compute"]["codec_time"] = "free";
  const Scenario scenario = load_scenario(doc);
  const RunResult r = Engine(scenario).run("", nullptr);
  const DeviceProfile& pi = device_profile("raspberry-pi-5");
  const auto steps = lines_of(r.metrics_jsonl, "step");
  ASSERT_EQ(steps.size(), 20u);
  const double optimizer =
      optimizer_step_seconds(pi, r.summary["parameters"].get<std::int64_t>(), true);
  double busy = 0;
  for (const auto& s : steps) busy += s["compute_s"].get<double>() + optimizer;
  const double end = r.summary["sim_time_s"].get<double>();
  const double expected = busy * pi.busy_watts + (end - busy) * pi.idle_watts;

  const auto& energy = r.summary["energy"];
  ASSERT_EQ(energy["workers"].size(), 4u);
  for (const auto& w : energy["workers"]) {
    EXPECT_EQ(w["profile"], "raspberry-pi-5");
    EXPECT_NEAR(w["busy_s"].get<double>(), busy, 1e-12);
    EXPECT_NEAR(w["idle_s"].get<double>(), end - busy, 1e-12);
    EXPECT_NEAR(w["compute_j"].get<double>(), expected, 1e-9);
    EXPECT_TRUE(w["radio_j"].is_null());
  }
  EXPECT_GT(busy, 0.0);
  EXPECT_LT(busy, end);  // the workers also waited for the ring
  EXPECT_NEAR(energy["compute_j"].get<double>(), 4 * expected, 4e-9);
  EXPECT_NEAR(energy["total_j"].get<double>(), 4 * expected, 4e-9);
  EXPECT_EQ(r.summary["energy_j"], energy["total_j"]);
  EXPECT_EQ(energy["profiles"]["raspberry-pi-5"]["workers"], 4);

  // The step lines carry the energy so far: each worker's busy seconds of the steps written,
  // idle for the rest of the time up to the line.
  double so_far = 0;
  for (const auto& s : steps) {
    so_far += s["compute_s"].get<double>() + optimizer;
    const double t = s["sim_time_s"].get<double>();
    EXPECT_NEAR(s["energy_j"].get<double>(),
                4 * (so_far * pi.busy_watts + (t - so_far) * pi.idle_watts), 1e-9);
    ASSERT_EQ(s["worker_busy_s"].size(), 4u);
  }
  // Energy to target: the eval line's energy where the target was first reached.
  ASSERT_FALSE(r.summary["time_to_target_s"].is_null());
  for (const auto& e : lines_of(r.metrics_jsonl, "eval")) {
    if (e["accuracy"].get<double>() >= 0.3) {
      EXPECT_EQ(r.summary["energy_to_target_j"], e["energy_j"]);
      break;
    }
  }
}

// Two Jetson Orin Nanos and two Raspberry Pi 5s: the Pis' steps compute longer, by the ratio
// their profiles give, and the synchronous ring waits for them.
TEST(DeviceEnergy, MixedDevicesComputeAtTheirOwnSpeed) {
  const nlohmann::json mixed = nlohmann::json::array(
      {{{"profile", "jetson-orin-nano"}, {"count", 2}}, {{"profile", "raspberry-pi-5"}, {"count", 2}}});
  const Scenario scenario = load_scenario(run_on(mixed));
  EXPECT_EQ(scenario.compute.worker_profiles,
            (std::vector<std::string>{"jetson-orin-nano", "jetson-orin-nano", "raspberry-pi-5",
                                      "raspberry-pi-5"}));
  const RunResult r = Engine(scenario).run("", nullptr);
  const RunResult orin = Engine(load_scenario(run_on("jetson-orin-nano"))).run("", nullptr);
  const RunResult pi = Engine(load_scenario(run_on("raspberry-pi-5"))).run("", nullptr);

  for (const auto& s : lines_of(r.metrics_jsonl, "step")) {
    // Same device, same compute and optimizer; the codec's work on what a worker receives
    // differs by its place in the ring (nanoseconds here).
    const auto& busy = s["worker_busy_s"];
    EXPECT_NEAR(busy[0].get<double>(), busy[1].get<double>(), 1e-8);
    EXPECT_NEAR(busy[2].get<double>(), busy[3].get<double>(), 1e-8);
    EXPECT_GT(busy[2].get<double>(), busy[0].get<double>() + 5e-4);
  }
  const auto& profiles = r.summary["energy"]["profiles"];
  const double orin_step = profiles["jetson-orin-nano"]["mean_step_compute_s"].get<double>();
  const double pi_step = profiles["raspberry-pi-5"]["mean_step_compute_s"].get<double>();
  // Each device's compute is what a run on that device alone computes.
  EXPECT_DOUBLE_EQ(orin_step, orin.summary["mean_step_compute_s"].get<double>());
  EXPECT_DOUBLE_EQ(pi_step, pi.summary["mean_step_compute_s"].get<double>());
  EXPECT_GT(pi_step, orin_step);
  // The ring runs at the pace of its slowest workers.
  EXPECT_GT(r.summary["sim_time_s"].get<double>(), orin.summary["sim_time_s"].get<double>());
  EXPECT_NEAR(r.summary["sim_time_s"].get<double>(), pi.summary["sim_time_s"].get<double>(),
              0.05 * pi.summary["sim_time_s"].get<double>());
  // Per-device totals add up to the run's.
  EXPECT_NEAR(profiles["jetson-orin-nano"]["compute_j"].get<double>() +
                  profiles["raspberry-pi-5"]["compute_j"].get<double>(),
              r.summary["energy"]["compute_j"].get<double>(), 1e-9);
}

// One name per worker, all the same, is the single name: the same run bit for bit.
TEST(DeviceEnergy, AListOfOneDeviceIsThatDevice) {
  const RunResult single = Engine(load_scenario(run_on("jetson-orin-nano"))).run("", nullptr);
  const RunResult list = Engine(load_scenario(run_on(nlohmann::json::array(
      {"jetson-orin-nano", "jetson-orin-nano", "jetson-orin-nano", "jetson-orin-nano"}))))
                             .run("", nullptr);
  EXPECT_EQ(single.summary["sim_time_s"], list.summary["sim_time_s"]);
  EXPECT_EQ(single.summary["final_accuracy"], list.summary["final_accuracy"]);
  EXPECT_EQ(single.summary["energy"]["total_j"], list.summary["energy"]["total_j"]);
}

TEST(DeviceEnergy, BadListsNameTheirPath) {
  EXPECT_EQ(config_error_path(run_on(nlohmann::json::array({"jetson-orin-nano", "raspberry-pi-5"}))),
            "compute.profile");
  EXPECT_EQ(config_error_path(run_on(nlohmann::json::array(
                {"jetson-orin-nano", "pi-9", "jetson-orin-nano", "jetson-orin-nano"}))),
            "compute.profile[1]");
  EXPECT_EQ(config_error_path(run_on(nlohmann::json::array({{{"profile", "v100"}}}))),
            "compute.profile[0]");
  EXPECT_EQ(config_error_path(run_on(nlohmann::json::array({{{"profile", "v100"}, {"group", 0}}}))),
            "compute.profile[0].group");
  EXPECT_EQ(config_error_path(run_on(nlohmann::json::array())), "compute.profile");
  auto measured = run_on("v100");
  measured["compute"] = {{"mode", "measured"}, {"profile", "v100"}};
  EXPECT_EQ(config_error_path(measured), "compute.measured_on");
}

// Per hybrid group: each group's workers get its device, in the network's host order whatever
// the list's order; the resolved scenario reads back to the same devices.
TEST(DeviceEnergy, HybridGroupsNameTheirDevice) {
  auto doc = run_on(nlohmann::json::array({{{"profile", "raspberry-pi-5"}, {"group", 1}},
                                           {{"profile", "jetson-orin-nano"}, {"group", 0}}}));
  doc["network"] = {{"family", "hybrid"},
                    {"groups", {{{"family", "wifi"}, {"workers", 3}},
                                {{"family", "ethernet"}, {"workers", 1}}}}};
  const Scenario s = load_scenario(doc);
  EXPECT_EQ(s.compute.worker_profiles,
            (std::vector<std::string>{"jetson-orin-nano", "jetson-orin-nano", "jetson-orin-nano",
                                      "raspberry-pi-5"}));
  EXPECT_EQ(load_scenario(s.resolved).compute.worker_profiles, s.compute.worker_profiles);
  doc["network"]["groups"][1]["workers"] = 2;  // 5 workers in the groups, 4 in training
  EXPECT_EQ(config_error_path(doc), "network.groups");
  doc["network"]["groups"][1]["workers"] = 1;
  doc["compute"]["profile"][0]["group"] = 2;
  EXPECT_EQ(config_error_path(doc), "compute.profile[0].group");
  doc["compute"]["profile"][0]["group"] = 0;  // group 0 named twice
  EXPECT_EQ(config_error_path(doc), "compute.profile[1].group");
}

// Measured compute on named devices: this machine's wall time stands for `measured_on`, and
// each worker's step is slower or faster by the devices' sustained FLOP/s.
TEST(DeviceEnergy, MeasuredComputeScalesPerDevice) {
  ComputeSpec spec;
  spec.mode = "measured";
  spec.scale = 2.0;
  spec.measured_on = "cpu-core";
  spec.worker_profiles = {"raspberry-pi-5", "jetson-orin-nano"};
  const auto pi = make_compute_time_model(spec, 1000, 16, 0, 1);
  const auto orin = make_compute_time_model(spec, 1000, 16, 1, 1);
  EXPECT_DOUBLE_EQ(pi(0.01, 0), 0.01 * 2.0 * 2.0e10 / 3.0e10);
  EXPECT_DOUBLE_EQ(orin(0.01, 0), 0.01 * 2.0 * 2.0e10 / 5.5e11);
  ASSERT_NE(worker_device(spec, 1), nullptr);
  EXPECT_EQ(worker_device(spec, 1)->name, "jetson-orin-nano");
  spec.measured_on.clear();
  EXPECT_EQ(worker_device(spec, 1), nullptr);  // plain measured compute has no device
}

}  // namespace
}  // namespace gradwire
