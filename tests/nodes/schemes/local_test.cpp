// Local-update training (topology "local"): FedAvg, DiLoCo and Streaming DiLoCo reduce to the
// schemes they generalise where they must, send H times less, and refuse bad keys by path.
// Whole runs of a small MLP on synthetic data with equal shards.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

#include <gtest/gtest.h>

#include "MetricsLines.h"
#include "RunGradwire.h"
#include "common/ConfigError.h"
#include "nodes/schemes/LocalSgd.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

using testing::lines_of;

/// 4 workers, 1000 samples each, plain SGD (no momentum) for 40 steps.
nlohmann::json run_doc(const nlohmann::json& topology) {
  return {{"gradwire", 1},
          {"name", "local"},
          {"seed", 3},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 0.6}, {"features", 16},
                       {"train_samples", 4000}, {"test_samples", 500}}},
          {"training", {{"workers", 4}, {"steps", 40}, {"batch", 16}, {"eval_every", 40},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.0}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"codec", {{"kind", "none"}}},
          {"topology", topology},
          {"network", {{"rate", "1Gbps"}}}};
}

RunResult run(const nlohmann::json& doc) { return Engine(load_scenario(doc)).run("", nullptr); }

/// max |a - b| over max |b|: the difference relative to the parameters' scale (an element
/// near zero would make an elementwise ratio meaningless).
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

double first_loss(const RunResult& r) { return lines_of(r.metrics_jsonl, "step").front()["loss"]; }
double last_loss(const RunResult& r) { return lines_of(r.metrics_jsonl, "step").back()["loss"]; }

const nlohmann::json kDiLoCo = {{"kind", "local"}, {"local_steps", 5}, {"outer_lr", 0.7},
                                {"outer_momentum", 0.9}, {"outer_nesterov", true}};

TEST(LocalSgd, OneLocalStepIsSynchronousSgd) {
  // Averaging the deltas lr g_i and averaging the gradients g_i round differently: equal to
  // float rounding, not bit for bit.
  for (const std::string aggregation : {"ps", "ring"}) {
    auto doc = run_doc({{"kind", aggregation}});
    doc["training"]["steps"] = 50;
    const RunResult sync = run(doc);
    doc["topology"] = {{"kind", "local"}, {"local_steps", 1}, {"aggregation", aggregation}};
    const RunResult local = run(doc);
    EXPECT_LT(max_relative_difference(local.final_parameters, sync.final_parameters), 1e-5)
        << aggregation;
    EXPECT_LT(last_loss(local), first_loss(local)) << "it trained";
  }
}

TEST(LocalSgd, DiLoCoWithOuterLrOneAndNoMomentumIsFedAvg) {
  auto doc = run_doc({{"kind", "local"}, {"local_steps", 5}});
  doc["training"]["steps"] = 50;
  const RunResult fedavg = run(doc);
  doc["topology"] = kDiLoCo;
  doc["topology"]["outer_lr"] = 1.0;
  doc["topology"]["outer_momentum"] = 0.0;
  const RunResult diloco = run(doc);
  EXPECT_LT(max_relative_difference(diloco.final_parameters, fedavg.final_parameters), 1e-5);
  // FedAvg over a ring adds the deltas in another order: the same model to rounding.
  doc["topology"] = {{"kind", "local"}, {"local_steps", 5}, {"aggregation", "ring"}};
  EXPECT_LT(max_relative_difference(run(doc).final_parameters, fedavg.final_parameters), 1e-5);
  // The outer optimiser's keys do act: DiLoCo's own setting lands elsewhere.
  doc["topology"] = kDiLoCo;
  EXPECT_GT(max_relative_difference(run(doc).final_parameters, fedavg.final_parameters), 1e-3);
}

TEST(LocalSgd, StreamingWithOneFragmentIsDiLoCoBitForBit) {
  const RunResult diloco = run(run_doc(kDiLoCo));
  auto topology = kDiLoCo;
  topology["fragments"] = 1;
  topology["overlap"] = false;
  const RunResult streaming = run(run_doc(topology));
  EXPECT_EQ(streaming.final_parameters, diloco.final_parameters);
  EXPECT_EQ(streaming.summary["bytes_on_wire"], diloco.summary["bytes_on_wire"]);
}

TEST(LocalSgd, FragmentsSpreadTheSameTrafficOverTheRound) {
  // H = 4, P = 2: fragment 0 travels after steps 4, 8, ...; fragment 1 after 2, 6, ....
  auto topology = kDiLoCo;
  topology["local_steps"] = 4;
  const RunResult whole = run(run_doc(topology));
  topology["fragments"] = 2;
  const RunResult streaming = run(run_doc(topology));
  std::vector<std::int64_t> sending;
  for (const auto& line : lines_of(streaming.metrics_jsonl, "step")) {
    if (line["bytes_sent"][0].get<std::uint64_t>() > 0) sending.push_back(line["step"]);
  }
  std::vector<std::int64_t> expected;
  for (std::int64_t s = 2; s <= 40; s += 2) expected.push_back(s);
  EXPECT_EQ(sending, expected);
  // Ten rounds of each fragment (fragment 1's first round is the short one), versus ten of
  // the whole model: the same elements, twice the messages.
  const double ratio = streaming.summary["bytes_on_wire"].get<double>() /
                       whole.summary["bytes_on_wire"].get<double>();
  EXPECT_GT(ratio, 1.0);
  EXPECT_LT(ratio, 1.05);
  EXPECT_NE(streaming.final_parameters, whole.final_parameters);
  // Overlapped, the workers do not wait for their fragments and the run still trains.
  topology["overlap"] = true;
  const RunResult overlapped = run(run_doc(topology));
  EXPECT_LT(last_loss(overlapped), 0.8 * first_loss(overlapped));
  EXPECT_LT(overlapped.summary["sim_time_s"].get<double>(),
            streaming.summary["sim_time_s"].get<double>());
}

TEST(LocalSgd, BytesPerStepFallHFold) {
  const RunResult sync = run(run_doc({{"kind", "ps"}}));
  for (int h : {4, 8}) {
    const RunResult local = run(run_doc({{"kind", "local"}, {"local_steps", h}}));
    const double ratio = sync.summary["bytes_on_wire"].get<double>() /
                         local.summary["bytes_on_wire"].get<double>();
    EXPECT_NEAR(ratio, h, 0.02 * h) << "H = " << h;
  }
}

TEST(LocalSgd, FragmentsAreContiguousTensorGroupsOfAboutEqualSize) {
  const std::vector<std::int64_t> numels{100, 10, 100, 10, 50, 50, 1};
  const auto parts = plan_fragments(numels, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].first_parameter, 0);
  std::int64_t offset = 0;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    EXPECT_EQ(parts[p].offset, offset);
    if (p > 0) {
      EXPECT_EQ(parts[p].first_parameter, parts[p - 1].last_parameter + 1);
    }
    offset += parts[p].numel;
  }
  EXPECT_EQ(parts.back().last_parameter, 6);
  EXPECT_EQ(offset, 321);
  EXPECT_EQ(parts[0].last_parameter, 1);  // 110 reaches a third of 321
  EXPECT_EQ(plan_fragments(numels, 7).back().first_parameter, 6);
  EXPECT_THROW(plan_fragments(numels, 8), std::invalid_argument);
}

TEST(LocalSgd, SampleWeightsMakeTheMeanFedAvgsWeightedMean) {
  EXPECT_EQ(sample_weights({250, 250, 250}), (std::vector<double>{1.0, 1.0, 1.0}));
  const std::vector<std::int64_t> samples{100, 300, 600};
  const auto w = sample_weights(samples);
  const std::vector<double> deltas{1.0, -2.0, 0.5};
  double mean_of_scaled = 0, weighted = 0;
  for (std::size_t k = 0; k < samples.size(); ++k) {
    mean_of_scaled += w[k] * deltas[k] / 3.0;
    weighted += static_cast<double>(samples[k]) * deltas[k] / 1000.0;
  }
  EXPECT_NEAR(mean_of_scaled, weighted, 1e-12);
  // Unequal shards (Dirichlet labels) in a run: FedAvg weights them and the global model
  // learns (its local losses are each shard's own, so they say less).
  auto doc = run_doc({{"kind", "local"}, {"local_steps", 4}});
  doc["dataset"]["partition"] = {{"kind", "dirichlet"}, {"alpha", 0.5}};
  const RunResult r = run(doc);
  EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.2);  // 10 classes: chance is 0.1
}

TEST(LocalSgd, PseudoGradientsGoThroughTheScenariosCodec) {
  // Each fragment has its own codec state (error feedback, PowerSGD's factors) sized to it.
  auto topology = kDiLoCo;
  topology["local_steps"] = 4;
  topology["fragments"] = 2;
  const RunResult dense = run(run_doc(topology));
  const nlohmann::json codecs[] = {{{"kind", "topk"}, {"ratio", 0.1}, {"error_feedback", true}},
                                   {{"kind", "qsgd"}, {"levels", 7}, {"bucket", 512}},
                                   {{"kind", "powersgd"}, {"rank", 2}}};
  for (const auto& codec : codecs) {
    for (const std::string aggregation : {"ps", "ring"}) {
      auto doc = run_doc(topology);
      doc["topology"]["aggregation"] = aggregation;
      doc["codec"] = codec;
      const RunResult r = run(doc);
      EXPECT_LT(r.summary["bytes_on_wire"].get<double>(),
                0.6 * dense.summary["bytes_on_wire"].get<double>())
          << codec.dump() << " " << aggregation;
      EXPECT_LT(last_loss(r), 0.8 * first_loss(r)) << codec.dump() << " " << aggregation;
    }
  }
}

void expect_config_error(const nlohmann::json& topology, const std::string& path) {
  try {
    run(run_doc(topology));
    ADD_FAILURE() << "accepted " << topology.dump();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
  }
}

TEST(LocalSgd, BadKeysNameTheirPath) {
  expect_config_error({{"kind", "local"}, {"local_steps", 0}}, "topology.local_steps");
  expect_config_error({{"kind", "local"}, {"local_steps", 4}, {"fragments", 5}},
                      "topology.fragments");
  // The MLP has 4 parameter tensors (two weights, two biases).
  expect_config_error({{"kind", "local"}, {"local_steps", 8}, {"fragments", 5}},
                      "topology.fragments");
  expect_config_error({{"kind", "local"}, {"outer_lr", 0}}, "topology.outer_lr");
  expect_config_error({{"kind", "local"}, {"outer_lr", -0.5}}, "topology.outer_lr");
  expect_config_error({{"kind", "local"}, {"outer_momentum", 1}}, "topology.outer_momentum");
  expect_config_error({{"kind", "local"}, {"aggregation", "gossip"}}, "topology.aggregation");
  expect_config_error({{"kind", "ring"}, {"local_steps", 4}}, "topology.local_steps");
  auto doc = run_doc({{"kind", "local"}});
  doc["topology"]["mode"] = "async";
  EXPECT_THROW(load_scenario(doc), ConfigError);
  doc = run_doc({{"kind", "local"}});
  doc["training"]["buckets"] = {{"size_mb", 1}};
  EXPECT_THROW(load_scenario(doc), ConfigError);
}

TEST(LocalSgd, TheCliRefusesABadKeyWithExitTwo) {
  const std::string file = ::testing::TempDir() + "local_bad_outer_lr.json";
  std::ofstream(file) << run_doc({{"kind", "local"}, {"outer_lr", 0}}).dump();
  const auto r = testing::run_gradwire("validate " + file);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("topology.outer_lr"), std::string::npos) << r.output;
  std::remove(file.c_str());
}

}  // namespace
}  // namespace gradwire
