// Local-update training (topology "local"): FedAvg, DiLoCo and Streaming DiLoCo reduce to the
// schemes they generalise where they must, send H times less, and refuse bad keys by path.
// Whole runs of a small MLP on synthetic data with equal shards.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <stdexcept>
#include <sstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "MetricsLines.h"
#include "TemporaryTextFile.h"
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


// --- partial participation (FedAvg with k of n clients per round) -----------------------------

std::vector<int> ints(const nlohmann::json& list) { return list.get<std::vector<int>>(); }

using TraceFile = gradwire::testing::TemporaryTextFile;
using gradwire::testing::without_wall_times;

std::uint64_t workers_bytes(const RunResult& r) {
  std::uint64_t total = 0;
  for (const auto& line : lines_of(r.metrics_jsonl, "step")) {
    for (const auto& b : line["bytes_sent"]) total += b.get<std::uint64_t>();
  }
  return total;
}

TEST(LocalParticipation, EveryClientEveryRoundIsLocalBitForBit) {
  for (const int train_samples : {4000, 4003}) {  // equal shards, then unequal (weighted)
    auto plain = run_doc(kDiLoCo);
    plain["dataset"]["train_samples"] = train_samples;
    auto rounds = plain;
    rounds["participation"] = nlohmann::json::object();  // k = all, always available
    const RunResult a = run(plain);
    const RunResult b = run(rounds);
    EXPECT_EQ(a.final_parameters, b.final_parameters) << train_samples;
    EXPECT_EQ(a.summary["bytes_on_wire"], b.summary["bytes_on_wire"]);
    EXPECT_EQ(a.summary["sim_time_s"], b.summary["sim_time_s"]);
    const auto sa = lines_of(a.metrics_jsonl, "step");
    const auto sb = lines_of(b.metrics_jsonl, "step");
    ASSERT_EQ(sa.size(), sb.size());
    for (std::size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i]["loss"], sb[i]["loss"]) << "step " << i + 1;
      EXPECT_EQ(sa[i]["sim_time_s"], sb[i]["sim_time_s"]) << "step " << i + 1;
      EXPECT_EQ(sa[i]["bytes_sent"], sb[i]["bytes_sent"]) << "step " << i + 1;
      EXPECT_EQ(ints(sb[i]["sampled"]), (std::vector<int>{0, 1, 2, 3}));
      EXPECT_EQ(sb[i]["round"], i / 5);  // H = 5
      EXPECT_EQ(sb[i].contains("participants"), (i + 1) % 5 == 0) << "step " << i + 1;
    }
    EXPECT_EQ(b.summary["participation"]["rounds"], 8);
    EXPECT_EQ(b.summary["participation"]["mean_participants"], 4.0);
  }
}

nlohmann::json fedavg_doc(std::uint64_t seed) {
  auto doc = run_doc({{"kind", "local"}, {"local_steps", 4}});
  doc["seed"] = seed;
  doc["participation"] = {{"clients_per_round", 2}};
  return doc;
}

TEST(LocalParticipation, KOfNClientsTrainAndSendEachRound) {
  const RunResult a = run(fedavg_doc(5));
  const RunResult again = run(fedavg_doc(5));
  EXPECT_EQ(without_wall_times(a.metrics_jsonl), without_wall_times(again.metrics_jsonl));
  EXPECT_EQ(a.final_parameters, again.final_parameters);

  const auto steps = lines_of(a.metrics_jsonl, "step");
  ASSERT_EQ(steps.size(), 40u);
  std::set<std::vector<int>> pairs;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    const std::size_t round = i / 4;
    EXPECT_EQ(s["round"], round);
    const auto sampled = ints(s["sampled"]);
    ASSERT_EQ(sampled.size(), 2u);
    // A round's clients are fixed for its four steps.
    EXPECT_EQ(s["sampled"], steps[round * 4]["sampled"]);
    pairs.insert(sampled);
    const bool last = (i + 1) % 4 == 0;
    ASSERT_EQ(s.contains("participants"), last) << "step " << i + 1;
    if (last) EXPECT_EQ(ints(s["participants"]), sampled);  // no deadline, all arrive
    for (int r = 0; r < 4; ++r) {
      const bool in = std::count(sampled.begin(), sampled.end(), r) > 0;
      // Only the sampled clients send, and only at the round's last step.
      if (!in || !last) EXPECT_EQ(s["bytes_sent"][r], 0) << "step " << i + 1 << " rank " << r;
      if (in && last) EXPECT_GT(s["bytes_sent"][r].get<std::uint64_t>(), 0u);
    }
    EXPECT_FALSE(s["loss"].is_null());  // the mean over the two that trained
  }
  EXPECT_GE(pairs.size(), 3u);  // of the 6 pairs, over 10 rounds
  EXPECT_EQ(a.summary["participation"]["rounds"], 10);
  EXPECT_EQ(a.summary["participation"]["mean_sampled"], 2.0);
  EXPECT_EQ(a.summary["participation"]["mean_participants"], 2.0);

  // The clients' uplink is k / n of every client's; the server still answers all n.
  auto full_doc = fedavg_doc(5);
  full_doc.erase("participation");
  const RunResult full = run(full_doc);
  const double ratio =
      static_cast<double>(workers_bytes(a)) / static_cast<double>(workers_bytes(full));
  EXPECT_NEAR(ratio, 0.5, 0.005);
  EXPECT_NE(a.final_parameters, full.final_parameters);
  // FedAvg over half the clients still trains, about as far as over all of them here.
  const double test_loss = a.summary["final_test_loss"].get<double>();
  EXPECT_LT(test_loss, 0.9 * first_loss(a));
  EXPECT_NEAR(test_loss, full.summary["final_test_loss"].get<double>(), 0.05 * test_loss);

  const RunResult other = run(fedavg_doc(6));
  EXPECT_NE(lines_of(other.metrics_jsonl, "step")[3]["sampled"].dump() +
                lines_of(other.metrics_jsonl, "step")[7]["sampled"].dump() +
                lines_of(other.metrics_jsonl, "step")[11]["sampled"].dump(),
            steps[3]["sampled"].dump() + steps[7]["sampled"].dump() + steps[11]["sampled"].dump());
}

TEST(LocalParticipation, EveryoneAwayRoundsWaitForTheDeadlineAndLeaveTheModel) {
  // Nobody is available before 10 s: each of the 3 rounds (H = 4) is empty.
  const TraceFile trace("rank,start_s,end_s\n0,10,inf\n1,10,inf\n2,10,inf\n3,10,inf\n");
  auto doc = run_doc({{"kind", "local"}, {"local_steps", 4}, {"outer_momentum", 0.9}});
  doc["training"]["steps"] = 12;
  doc["training"]["eval_every"] = 4;
  doc["participation"] = {{"deadline", "100ms"}, {"availability", {{"trace", trace.path()}}}};
  const RunResult r = run(doc);
  const auto steps = lines_of(r.metrics_jsonl, "step");
  ASSERT_EQ(steps.size(), 12u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_TRUE(steps[i]["sampled"].empty());
    EXPECT_TRUE(steps[i]["loss"].is_null());
    for (int w = 0; w < 4; ++w) EXPECT_EQ(steps[i]["bytes_sent"][w], 0);
    if ((i + 1) % 4 != 0) continue;
    EXPECT_TRUE(steps[i]["participants"].empty());
    // Round k ends at its deadline, (k + 1) x 100 ms, plus the empty reply's trip.
    const double t = steps[i]["sim_time_s"].get<double>();
    const double k = static_cast<double>(i / 4);
    EXPECT_GE(t, 0.1 * (k + 1) - 1e-9);
    EXPECT_LT(t, 0.1 * (k + 1) + 1e-3);
  }
  // The model did not change (nor did the outer momentum move it).
  const auto evals = lines_of(r.metrics_jsonl, "eval");
  ASSERT_EQ(evals.size(), 3u);
  EXPECT_EQ(evals[0]["test_loss"], evals[2]["test_loss"]);
  EXPECT_EQ(r.summary["participation"]["empty_rounds"], 3);
  EXPECT_EQ(r.summary["participation"]["rounds"], 3);
}

TEST(LocalParticipation, AClientThatGoesAwayMidRoundIsDroppedWithItsLocalSteps) {
  // Rank 1 is sampled in round 0 (available at its start) and goes away at 5 ms, before its
  // 4 local steps (8 ms) end; it comes back at 1 s. The reference: rank 1 away from the start.
  const TraceFile drop("0,0,inf\n1,0,0.005\n1,1,inf\n2,0,inf\n3,0,inf\n");
  const TraceFile away("0,0,inf\n1,1,inf\n2,0,inf\n3,0,inf\n");
  const auto with = [](const std::string& trace) {
    auto doc = run_doc({{"kind", "local"}, {"local_steps", 4}});
    doc["training"]["steps"] = 4;
    doc["training"]["eval_every"] = 4;
    doc["participation"] = {{"deadline", "50ms"}, {"availability", {{"trace", trace}}}};
    return run(doc);
  };
  const RunResult dropped = with(drop.path());
  const RunResult without = with(away.path());
  const auto last = lines_of(dropped.metrics_jsonl, "step").at(3);
  EXPECT_EQ(ints(last["sampled"]), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ints(last["participants"]), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(last["bytes_sent"][1], 0);
  EXPECT_GE(last["sim_time_s"].get<double>(), 0.05);  // the round waited for the deadline
  EXPECT_EQ(dropped.summary["participation"]["dropped_updates"], 1);
  // Everyone, rank 1 included, ends on the model the other three made.
  EXPECT_LT(max_relative_difference(dropped.final_parameters, without.final_parameters), 1e-6);
  const auto eval = lines_of(dropped.metrics_jsonl, "eval").at(0);
  EXPECT_LT(eval["consensus_distance"].get<double>(), 1e-12);
}

TEST(LocalParticipation, RefusedWhereRoundsCannotBeSampled) {
  const auto path_of = [](const nlohmann::json& topology) {
    auto doc = run_doc(topology);
    doc["participation"] = {{"clients_per_round", 2}};
    try {
      load_scenario(doc);
    } catch (const ConfigError& e) {
      return e.path();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(path_of({{"kind", "local"}, {"local_steps", 4}}), "(accepted)");
  EXPECT_EQ(path_of({{"kind", "local"}, {"aggregation", "ring"}}), "participation");
  EXPECT_EQ(path_of({{"kind", "local"}, {"local_steps", 4}, {"fragments", 2}}),
            "topology.fragments");
  EXPECT_EQ(path_of({{"kind", "local"}, {"overlap", true}}), "topology.overlap");
  EXPECT_EQ(path_of({{"kind", "ring"}}), "participation");

  auto doc = run_doc({{"kind", "local"}, {"aggregation", "ring"}});
  doc["participation"] = {{"clients_per_round", 2}};
  const std::string file = ::testing::TempDir() + "local_ring_participation.json";
  std::ofstream(file) << doc.dump();
  const auto r = testing::run_gradwire("validate " + file);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("participation"), std::string::npos) << r.output;
  std::remove(file.c_str());
}

}  // namespace
}  // namespace gradwire
