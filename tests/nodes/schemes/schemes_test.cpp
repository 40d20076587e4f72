// Training schemes: push-sum gossip, asynchronous parameter server, Leader SGD, heterogeneous
// compute. Algorithm-level checks first, then whole runs on synthetic data.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include <gtest/gtest.h>
#include <ns3/node.h>
#include <ns3/simulator.h>
#include <torch/torch.h>

#include "common/ConfigError.h"
#include "MetricsLines.h"
#include "nodes/schemes/ExponentialGraph.h"
#include "netmodels/Network.h"
#include "nodes/schemes/LeaderSgd.h"
#include "nodes/schemes/PushSumGossip.h"
#include "nodes/schemes/PushSumState.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/ComputeTime.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/engine/SimulatedWorld.h"
#include "sim/engine/TrainingSetup.h"

namespace gradwire {
namespace {

TEST(ExponentialGraph, EveryEdgeIsSeenFromBothEnds) {
  for (int n : {2, 3, 5, 8, 16}) {
    for (int peers : {1, 2}) {
      const ExponentialGraph g(n, peers);
      for (std::int64_t t = 0; t < 10; ++t) {
        for (int i = 0; i < n; ++i) {
          for (int j : g.out_peers(i, t)) {
            EXPECT_NE(i, j);
            const auto in = g.in_peers(j, t);
            EXPECT_NE(std::find(in.begin(), in.end(), i), in.end()) << n << " " << t;
          }
          EXPECT_EQ(g.in_peers(i, t).size(), g.out_peers(i, t).size());
        }
      }
    }
  }
}

TEST(PushSum, WeightsSumToNAndNodesReachTheQuadraticOptimum) {
  // f_i(z) = 1/2 ||z - b_i||^2: the optimum of the average is mean(b).
  const int n = 8, d = 5;
  torch::manual_seed(4);
  const at::Tensor b = torch::randn({n, d}) * 3;
  const at::Tensor optimum = b.mean(0);
  std::vector<PushSumState> nodes;
  for (int i = 0; i < n; ++i) nodes.emplace_back(torch::zeros({d}));
  const ExponentialGraph graph(n, 1);
  // A decaying step size (sum infinite, steps -> 0) removes the heterogeneity bias.
  for (std::int64_t t = 0; t < 3000; ++t) {
    const double lr = 2.0 / (20.0 + static_cast<double>(t));
    std::vector<std::pair<int, std::pair<at::Tensor, double>>> mail;
    for (int i = 0; i < n; ++i) {
      nodes[i].local_step(nodes[i].z() - b[i], lr, 0.0, 0.0, false);
      const auto peers = graph.out_peers(i, t);
      nodes[i].keep_share(1.0 / static_cast<double>(peers.size() + 1));
      for (int j : peers) mail.push_back({j, {nodes[i].x().clone(), nodes[i].w()}});
    }
    for (auto& [j, share] : mail) nodes[j].absorb(share.first, share.second);
    double total = 0;
    for (const auto& node : nodes) total += node.w();
    ASSERT_NEAR(total, n, 1e-9) << "push-sum weights must sum to n (step " << t << ")";
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_LT((nodes[i].z() - optimum).abs().max().item<double>(), 2e-2) << "node " << i;
  }
}

TEST(LeaderSgd, PullIsTheStatedConvexCombination) {
  const at::Tensor x = torch::tensor({1.0f, -2.0f, 4.0f});
  const at::Tensor leader = torch::tensor({3.0f, 2.0f, 0.0f});
  EXPECT_TRUE(torch::allclose(leader_pull(x, leader, 0.25), torch::tensor({1.5f, -1.0f, 3.0f})));
  EXPECT_TRUE(torch::equal(leader_pull(x, leader, 0.0), x));
  EXPECT_TRUE(torch::equal(leader_pull(x, leader, 1.0), leader));
}

TEST(LeaderSgd, BothPullsActInOneUpdate) {
  const auto x = torch::tensor({2.0f, -2.0f, 4.0f});
  const auto group = torch::tensor({0.0f, 2.0f, 4.0f});
  const auto global = torch::tensor({4.0f, 0.0f, 0.0f});
  // x - 0.25 (x - group) - 0.5 (x - global)
  EXPECT_TRUE(torch::allclose(leader_pulls(x, group, 0.25, global, 0.5),
                              torch::tensor({2.5f, 0.0f, 2.0f})));
  // A pull that does not fall on the step leaves its leader out, even undefined.
  EXPECT_TRUE(torch::allclose(leader_pulls(x, group, 0.25, at::Tensor(), 0.0),
                              leader_pull(x, group, 0.25)));
  EXPECT_TRUE(torch::allclose(leader_pulls(x, at::Tensor(), 0.0, global, 0.5),
                              leader_pull(x, global, 0.5)));
}

TEST(ComputeTime, FlopsPerSampleOverridesTheModelsCount) {
  ComputeSpec spec;
  spec.mode = "profile";
  spec.profile = "rtx-4090";
  const auto model_count = make_compute_time_model(spec, 1000000, 32, 0, 1);
  spec.flops_per_sample = 2000000;
  const auto overridden = make_compute_time_model(spec, 1000000, 32, 0, 1);
  const double overhead = 1e-3;
  EXPECT_NEAR(model_count(0, 0) - overhead, 3.0 * 1e6 * 32 / 3.5e13, 1e-15);
  EXPECT_NEAR(overridden(0, 0) - overhead, 2.0 * (model_count(0, 0) - overhead), 1e-15);
}

TEST(ComputeTime, DocsTableListsEveryProfileWithItsNumbers) {
  std::ifstream in(std::string(GRADWIRE_SOURCE_DIR) + "/docs/scenarios.md");
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& p : device_profiles()) {
    const std::string row = "| `" + p.name + "` | ";
    const auto at = text.str().find(row);
    ASSERT_NE(at, std::string::npos) << p.name << " is missing from docs/scenarios.md";
    const double documented = std::stod(text.str().substr(at + row.size()));
    EXPECT_DOUBLE_EQ(documented, p.sustained_flops) << p.name;
    const auto source = text.str().find(p.source, at);
    ASSERT_NE(source, std::string::npos) << p.name;
    const std::string rest = text.str().substr(source + p.source.size() + 3);
    const double bandwidth = std::stod(rest);
    EXPECT_DOUBLE_EQ(bandwidth, p.memory_bandwidth) << p.name;
    // Then the power: busy watts, idle watts and where they come from, on the same row.
    const auto busy_at = rest.find(" | ");
    ASSERT_NE(busy_at, std::string::npos) << p.name;
    EXPECT_DOUBLE_EQ(std::stod(rest.substr(busy_at + 3)), p.busy_watts) << p.name;
    const auto idle_at = rest.find(" | ", busy_at + 3);
    ASSERT_NE(idle_at, std::string::npos) << p.name;
    EXPECT_DOUBLE_EQ(std::stod(rest.substr(idle_at + 3)), p.idle_watts) << p.name;
    const auto power_at = rest.find(" | ", idle_at + 3);
    EXPECT_EQ(rest.substr(power_at + 3, p.power_source.size() + 2), p.power_source + " |") << p.name;
    EXPECT_GT(p.busy_watts, p.idle_watts) << p.name;
  }
}

TEST(ComputeTime, StragglersAndSlowWorkersAreSeededAndScaled) {
  ComputeSpec spec;
  spec.mode = "fixed";
  spec.seconds = 0.01;
  spec.worker_scale = {1.0, 3.0};
  spec.straggler_probability = 0.25;
  spec.straggler_slowdown = 4.0;
  const auto w0 = make_compute_time_model(spec, 1, 1, 0, 7);
  const auto again = make_compute_time_model(spec, 1, 1, 0, 7);
  const auto w1 = make_compute_time_model(spec, 1, 1, 1, 7);
  int slow = 0;
  for (std::int64_t step = 0; step < 4000; ++step) {
    const double t = w0(0, step);
    EXPECT_TRUE(t == 0.01 || t == 0.04) << t;
    slow += t == 0.04;
    EXPECT_EQ(t, again(0, step));  // repeatable
    const double u = w1(0, step);
    EXPECT_TRUE(std::fabs(u - 0.03) < 1e-12 || std::fabs(u - 0.12) < 1e-12) << u;
  }
  EXPECT_NEAR(slow / 4000.0, 0.25, 0.03);
}

nlohmann::json run_doc(const std::string& kind) {
  return {{"gradwire", 1},
          {"name", "scheme-" + kind},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 0.6}, {"features", 16},
                       {"train_samples", 4000}, {"test_samples", 1000}}},
          {"training", {{"workers", 4}, {"steps", 120}, {"batch", 16}, {"eval_every", 40},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"topology", {{"kind", kind}}},
          {"network", {{"rate", "1Gbps"}}}};
}

using testing::lines_of;

TEST(Schemes, EachTrainsWithinAFewPointsOfSyncRing) {
  const RunResult ring = Engine(load_scenario(run_doc("ring"))).run("", nullptr);
  const double reference = ring.summary["final_accuracy"].get<double>();
  EXPECT_GT(reference, 0.5);
  for (const std::string kind : {"ps", "gossip", "leader", "async"}) {
    auto doc = run_doc(kind == "async" ? "ps" : kind);
    if (kind == "async") doc["topology"]["mode"] = "async";
    if (kind == "leader") doc["topology"].update({{"l_comm", 4}, {"g_comm", 12}});
    const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
    EXPECT_NEAR(r.summary["final_accuracy"].get<double>(), reference, 0.05) << kind;
    const auto evals = lines_of(r.metrics_jsonl, "eval");
    ASSERT_FALSE(evals.empty());
    if (kind == "gossip" || kind == "leader") {
      // Decentralised: the workers' models differ a little, and the spread is reported.
      EXPECT_GT(evals.back()["consensus_distance"].get<double>(), 0.0) << kind;
      EXPECT_LT(evals.back()["consensus_distance"].get<double>(), 1.0) << kind;
    }
  }
}

TEST(Schemes, GradientSchemesTrainWithBucketsAsWithout) {
  // 16 -> 32 -> 10: caps of 400 and 800 bytes cut the 874 parameters into two buckets.
  const nlohmann::json buckets = {{"size_mb", 800.0 / (1 << 20)}, {"first_mb", 400.0 / (1 << 20)}};
  const RunResult ring = Engine(load_scenario(run_doc("ring"))).run("", nullptr);
  const double reference = ring.summary["final_accuracy"].get<double>();
  for (const std::string kind : {"ring", "ps", "async"}) {
    auto doc = run_doc(kind == "async" ? "ps" : kind);
    if (kind == "async") doc["topology"]["mode"] = "async";
    doc["training"]["buckets"] = buckets;
    const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
    EXPECT_NEAR(r.summary["final_accuracy"].get<double>(), reference, 0.05) << kind;
    // Two buckets, two payloads: more frame headers on the wire than one bucket sends.
    doc["training"]["buckets"] = "none";
    const RunResult whole = Engine(load_scenario(doc)).run("", nullptr);
    EXPECT_GT(r.summary["bytes_on_wire"].get<double>(), whole.summary["bytes_on_wire"].get<double>())
        << kind;
  }
  // Schemes that send parameters take no buckets, with a clear error.
  auto gossip = run_doc("gossip");
  gossip["training"]["buckets"] = buckets;
  EXPECT_THROW(load_scenario(gossip), ConfigError);
}

TEST(Schemes, MultiRoundCodecsRunTheirRoundsPerBucket) {
  // Each bucket has its own PowerSGD factors, GradiVeQ basis or LGC autoencoder, and runs its
  // rounds through its own collective; training ends where it ends without buckets.
  const nlohmann::json buckets = {{"size_mb", 800.0 / (1 << 20)}, {"first_mb", 400.0 / (1 << 20)}};
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"ring", {{"kind", "powersgd"}, {"rank", 2}}},
      {"ps", {{"kind", "powersgd"}, {"rank", 2}}},
      {"ring", {{"kind", "gradiveq"}, {"slice", 16}, {"components", 4}, {"warmup_steps", 20},
                {"refit_every", 50}, {"refit_steps", 5}}},
      // LGC fine-tunes its autoencoder twice (steps 70 and 100) after training it at step 40,
      // each time on 30 vectors (of 10 values in the small buckets): a few iterations, as more
      // would fit those few vectors rather than the gradients.
      {"ring", {{"kind", "lgc_ring"}, {"ratio", 0.05}, {"phase1_steps", 40}, {"ae_train_iters", 50},
                {"ae_finetune_every", 30}, {"ae_finetune_iters", 10}}},
      {"ps", {{"kind", "lgc_ps"}, {"ratio", 0.05}, {"phase1_steps", 40}, {"ae_train_iters", 50},
              {"ae_finetune_every", 30}, {"ae_finetune_iters", 10}}}};
  for (const auto& [topology, codec] : cases) {
    auto doc = run_doc(topology);
    doc["codec"] = codec;
    doc["training"]["buckets"] = "none";
    const double whole =
        Engine(load_scenario(doc)).run("", nullptr).summary["final_accuracy"].get<double>();
    doc["training"]["buckets"] = buckets;
    const double bucketed =
        Engine(load_scenario(doc)).run("", nullptr).summary["final_accuracy"].get<double>();
    EXPECT_NEAR(bucketed, whole, 0.05) << codec.dump() << " on " << topology;
    EXPECT_GT(bucketed, 0.5) << codec.dump() << " on " << topology;
  }
}

TEST(PushSum, OverlapHidesCommunicationBehindComputeAndStillTrains) {
  // A slow network (communication ~ compute): with one-step overlap the shares of step t-1 are
  // mixed while step t's travel, so the run takes less simulated time and still learns.
  auto doc = run_doc("gossip");
  doc["network"]["rate"] = "20Mbps";
  const RunResult plain = Engine(load_scenario(doc)).run("", nullptr);
  doc["topology"]["overlap"] = true;
  const RunResult overlapped = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_LT(overlapped.summary["sim_time_s"].get<double>(),
            0.8 * plain.summary["sim_time_s"].get<double>());
  EXPECT_NEAR(overlapped.summary["final_accuracy"].get<double>(),
              plain.summary["final_accuracy"].get<double>(), 0.05);
  EXPECT_GT(overlapped.summary["final_accuracy"].get<double>(), 0.5);
  // Only gossip overlaps.
  auto ring = run_doc("ring");
  ring["topology"]["overlap"] = true;
  EXPECT_THROW(load_scenario(ring), ConfigError);
}

/// A gossip run wired as the engine wires it, kept open at the end so the scheme's push-sum
/// weights can be read: each worker's step records, and the weights once every share sent has
/// arrived (the simulation goes on for a second after the last worker finished).
struct GossipRun {
  std::vector<std::vector<StepRecord>> steps;  ///< [rank][step]
  double total_weight = 0;
  double unmixed_weight = 0;
};

GossipRun run_gossip(const nlohmann::json& doc) {
  const Scenario scenario = load_scenario(doc);
  const int n = scenario.training.workers;
  std::vector<int> ranks(static_cast<std::size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  TrainingSetup setup(scenario, ranks);
  const SimulatedWorld world(scenario, setup.hosts());
  std::vector<Endpoint*> endpoints;
  for (int r = 0; r < n; ++r) endpoints.push_back(ns3::PeekPointer(world.messengers()[r]));
  setup.build_scheme(endpoints, nullptr, nullptr);
  GossipRun run;
  run.steps.resize(static_cast<std::size_t>(n));
  int finished = 0;
  std::vector<ns3::Ptr<Worker>> workers;
  for (int r = 0; r < n; ++r) {
    workers.push_back(setup.make_worker(
        r, endpoints[r], [&run](const StepRecord& s) { run.steps[s.rank].push_back(s); },
        [&finished, n](int) {
          if (++finished == n) ns3::Simulator::Stop(ns3::Seconds(1.0));
        }));
    workers.back()->SetStartTime(ns3::Seconds(world.network().ready_time_s()));
    world.network().host(static_cast<std::size_t>(r))->AddApplication(workers.back());
  }
  ns3::Simulator::Run();
  EXPECT_EQ(finished, n);
  const auto& gossip = dynamic_cast<const PushSumGossip&>(setup.scheme());
  run.total_weight = gossip.total_weight();
  run.unmixed_weight = gossip.unmixed_weight();
  return run;
}

TEST(PushSum, DelayedSharesConserveTheWeights) {
  // 4 workers, one 3x slower, so the inboxes fill unevenly. A node keeps 1/(peers + 1) of its
  // weight and pushes the rest; with tau > 0 the last tau steps' shares are still unmixed when
  // training ends, and with them the weights sum to n.
  for (const int tau : {0, 2, 3}) {
    auto doc = run_doc("gossip");
    doc["training"]["steps"] = 40;
    doc["training"]["eval_every"] = 40;
    doc["compute"]["slow_workers"] = {{{"rank", 0}, {"scale", 3.0}}};
    doc["topology"]["peers"] = 2;
    doc["topology"]["tau"] = tau;
    const GossipRun run = run_gossip(doc);
    EXPECT_NEAR(run.total_weight + run.unmixed_weight, 4.0, 1e-5) << "tau " << tau;
    if (tau == 0) {
      EXPECT_EQ(run.unmixed_weight, 0.0);
    } else {
      EXPECT_GT(run.unmixed_weight, 0.5) << "tau " << tau << ": the last shares are unmixed";
    }
  }
}

TEST(PushSum, ANodeRunsAtMostTauStepsAheadOfItsInPeer) {
  // Two workers, each the other's only peer; worker 0 computes 5x slower (10 ms a step against
  // 2 ms). When worker 1 ends step t it has done t + 1 steps; worker 0 has pushed the shares
  // of every step it finished computing by then. Worker 1 waits for the share of step t - tau
  // and for no younger one, so it gets exactly tau steps ahead and never more.
  for (const int tau : {0, 1, 2, 3}) {
    auto doc = run_doc("gossip");
    doc["training"]["workers"] = 2;
    doc["training"]["steps"] = 30;
    doc["training"]["eval_every"] = 30;
    doc["compute"]["slow_workers"] = {{{"rank", 0}, {"scale", 5.0}}};
    doc["topology"]["tau"] = tau;
    const GossipRun run = run_gossip(doc);
    const auto& slow = run.steps[0];
    const auto& fast = run.steps[1];
    ASSERT_EQ(slow.size(), 30u);
    ASSERT_EQ(fast.size(), 30u);
    std::int64_t most_ahead = -1;
    for (const StepRecord& s : fast) {
      const auto pushed = std::count_if(slow.begin(), slow.end(), [&s](const StepRecord& q) {
        return q.start_s + q.compute_s <= s.end_s;
      });
      const std::int64_t ahead = s.step + 1 - pushed;
      EXPECT_LE(ahead, tau) << "tau " << tau << ", step " << s.step;
      most_ahead = std::max(most_ahead, ahead);
    }
    EXPECT_EQ(most_ahead, tau);
  }
}

TEST(PushSum, TauOneIsOverlapBitForBit) {
  // `overlap: true` is the older spelling of tau = 1: the same run, and each resolves as given.
  auto doc = run_doc("gossip");
  doc["network"]["rate"] = "20Mbps";
  doc["compute"]["slow_workers"] = {{{"rank", 1}, {"scale", 3.0}}};
  doc["topology"]["overlap"] = true;
  const Scenario overlap_scenario = load_scenario(doc);
  EXPECT_EQ(overlap_scenario.resolved["topology"].value("overlap", false), true);
  EXPECT_FALSE(overlap_scenario.resolved["topology"].contains("tau"));
  const RunResult overlap = Engine(overlap_scenario).run("", nullptr);
  doc["topology"].erase("overlap");
  doc["topology"]["tau"] = 1;
  const Scenario tau_scenario = load_scenario(doc);
  EXPECT_EQ(tau_scenario.resolved["topology"].value("tau", 0), 1);
  EXPECT_FALSE(tau_scenario.resolved["topology"].contains("overlap"));
  const RunResult tau1 = Engine(tau_scenario).run("", nullptr);
  EXPECT_EQ(testing::without_wall_times(tau1.metrics_jsonl),
            testing::without_wall_times(overlap.metrics_jsonl));
  EXPECT_EQ(tau1.final_parameters, overlap.final_parameters);
  doc["topology"]["tau"] = 2;
  const RunResult tau2 = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_NE(tau2.final_parameters, overlap.final_parameters) << "tau is read";
  doc["topology"]["tau"] = 0;
  EXPECT_FALSE(load_scenario(doc).resolved["topology"].contains("tau")) << "0 is the default";
}

TEST(PushSum, TauIsValidatedByName) {
  const auto refusal = [](const nlohmann::json& topology) -> std::pair<std::string, std::string> {
    auto doc = run_doc("gossip");
    doc["topology"].update(topology);
    try {
      load_scenario(doc);
    } catch (const ConfigError& e) {
      return {e.path(), e.what()};
    }
    return {"", "loaded"};
  };
  for (const nlohmann::json& tau : {nlohmann::json(9), nlohmann::json(-1), nlohmann::json(1.5),
                                    nlohmann::json("2")}) {
    const auto [path, what] = refusal({{"tau", tau}});
    EXPECT_EQ(path, "topology.tau") << tau.dump();
    EXPECT_NE(what.find("[0, 8]"), std::string::npos) << what;
  }
  const auto [path, what] = refusal({{"tau", 2}, {"overlap", true}});
  EXPECT_EQ(path, "topology.overlap");
  EXPECT_NE(what.find("topology.tau alone"), std::string::npos) << what;
  EXPECT_EQ(refusal({{"tau", 8}}).first, "");
  auto ring = run_doc("ring");
  ring["topology"]["tau"] = 1;
  EXPECT_THROW(load_scenario(ring), ConfigError) << "only gossip has a delay bound";
}

TEST(AsyncParameterServer, StalenessFollowsTheComputeSchedule) {
  // Two workers, 4 steps each; worker 1 computes 2.7x slower (27 ms vs 10 ms per step) over a
  // fast LAN, so worker 0 lands updates at ~10, 20, 30, 40 ms and worker 1 at ~27, 54, 81,
  // 108 ms. Worker 1's first gradient (version 0) lands after worker 0's first two updates:
  // staleness 2; its second (pulled version 3 at ~27 ms) after worker 0's updates at ~30 and
  // ~40 ms: staleness 2; then worker 0 is done: 0, 0. Worker 0's third gradient was computed on
  // version 2 and lands after worker 1's first update: staleness 1; the others 0.
  auto doc = run_doc("ps");
  doc["topology"]["mode"] = "async";
  doc["training"]["workers"] = 2;
  doc["training"]["steps"] = 4;
  doc["compute"] = {{"mode", "fixed"}, {"seconds", 0.01}, {"threads", 1},
                    {"slow_workers", {{{"rank", 1}, {"scale", 2.7}}}}};
  doc["network"] = {{"rate", "10Gbps"}, {"delay", "5us"}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  std::vector<std::uint64_t> w0, w1;
  for (const auto& u : lines_of(r.metrics_jsonl, "update")) {
    (u["rank"] == 0 ? w0 : w1).push_back(u["staleness"].get<std::uint64_t>());
  }
  EXPECT_EQ(w0, (std::vector<std::uint64_t>{0, 0, 1, 0}));
  EXPECT_EQ(w1, (std::vector<std::uint64_t>{2, 2, 0, 0}));
  EXPECT_GT(r.summary["mean_staleness"].get<double>(), 0.0);
}

TEST(AsyncParameterServer, IdenticalWorkersOnAnIdealNetworkReduceToSync) {
  // Without momentum, n async updates of lr/n at the same parameters equal one sync update of
  // the mean. Even on an ideal network the n pushes serialise on the server's port, so a
  // worker would pull between them; with the staleness bound 0 nobody pulls before all n
  // updates of a step are in, and async PS must reproduce sync PS.
  auto doc = run_doc("ps");
  doc["training"]["optimizer"]["momentum"] = 0.0;
  doc["training"]["steps"] = 30;
  doc["network"] = {{"rate", "1000Gbps"}, {"delay", "0us"}};
  const RunResult sync = Engine(load_scenario(doc)).run("", nullptr);
  doc["topology"]["mode"] = "async";
  doc["topology"]["max_staleness"] = 0;
  const RunResult async = Engine(load_scenario(doc)).run("", nullptr);
  const auto a = lines_of(sync.metrics_jsonl, "step");
  const auto b = lines_of(async.metrics_jsonl, "step");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i]["loss"].get<double>(), b[i]["loss"].get<double>(), 1e-4) << "step " << i;
  }
  EXPECT_NEAR(sync.summary["final_accuracy"].get<double>(),
              async.summary["final_accuracy"].get<double>(), 1e-3);
}

TEST(AsyncParameterServer, BoundedStalenessHoldsFastWorkersBack) {
  auto doc = run_doc("ps");
  doc["topology"] = {{"kind", "ps"}, {"mode", "async"}, {"max_staleness", 0}};
  doc["training"]["workers"] = 2;
  doc["training"]["steps"] = 10;
  doc["compute"] = {{"mode", "fixed"}, {"seconds", 0.01}, {"threads", 1},
                    {"slow_workers", {{{"rank", 1}, {"scale", 3}}}}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  // Worker 0 may never be more than 0 updates ahead, so it never lands two updates in a row.
  int last = -1, run = 0, max_run = 0;
  for (const auto& u : lines_of(r.metrics_jsonl, "update")) {
    const int rank = u["rank"].get<int>();
    run = rank == last ? run + 1 : 1;
    max_run = std::max(max_run, run);
    last = rank;
  }
  EXPECT_EQ(max_run, 1);
}

TEST(LeaderSgd, OnlyTheLeadersParametersTravel) {
  auto doc = run_doc("leader");
  doc["topology"].update({{"l_comm", 5}, {"g_comm", 1000}, {"group_size", 4}});
  doc["training"]["steps"] = 20;
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  const std::uint64_t params = r.summary["parameters"].get<std::uint64_t>();
  const std::uint64_t frame = 32;                   // message framing
  const std::uint64_t param_msg = frame + 12 + 4 * params;  // dense payload of the leader
  const std::uint64_t loss_msg = frame + 8;
  const std::uint64_t rounds = 20 / 5, n = 4;
  EXPECT_EQ(r.summary["bytes_on_wire"].get<std::uint64_t>(),
            rounds * ((n - 1) * param_msg + n * (n - 1) * loss_msg));
}

TEST(LeaderSgd, TheGlobalLeadersParametersTravelThroughTheGroupLeaders) {
  // Eight workers in two groups of four; group pulls at steps 5 and 15, both pulls at 10 and
  // 20. A group step: each group's leader sends to its three members, losses within groups.
  // A global step: every loss to everyone; the global leader sends to its three group members
  // and once to the other group's leader, who passes it to its three members and sends its own
  // parameters to them for the group pull.
  auto doc = run_doc("leader");
  doc["training"]["workers"] = 8;
  doc["topology"].update({{"l_comm", 5}, {"g_comm", 10}, {"group_size", 4}});
  doc["training"]["steps"] = 20;
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  const std::uint64_t params = r.summary["parameters"].get<std::uint64_t>();
  const std::uint64_t frame = 32;
  const std::uint64_t param_msg = frame + 12 + 4 * params;
  const std::uint64_t loss_msg = frame + 8;
  const std::uint64_t group_step = 2 * 3 * param_msg + 2 * 4 * 3 * loss_msg;
  const std::uint64_t both_step = (3 + 1 + 3 + 3) * param_msg + 8 * 7 * loss_msg;
  EXPECT_EQ(r.summary["bytes_on_wire"].get<std::uint64_t>(), 2 * group_step + 2 * both_step);
  // Every global step pulls the whole cluster together.
  const auto evals = lines_of(r.metrics_jsonl, "eval");
  ASSERT_FALSE(evals.empty());
  EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.5);
}

TEST(LeaderSgd, AGlobalStepPullsEachWorkerTowardsBothLeaders) {
  // c1 + c2 = 1 on a step with both pulls: a worker outside the global leader's group lands on
  // c1 x_group_leader + c2 x_global_leader, so with c1 = 1, c2 = 0 every group collapses to its
  // own leader (the spread between groups stays) and with c1 = 0, c2 = 1 the whole cluster
  // collapses to the global leader (no spread at all).
  auto doc = run_doc("leader");
  doc["training"]["workers"] = 8;
  doc["training"]["steps"] = 10;
  doc["training"]["eval_every"] = 10;
  doc["topology"].update({{"l_comm", 10}, {"g_comm", 10}, {"group_size", 4}, {"c1", 0.0}, {"c2", 1.0}});
  const RunResult all = Engine(load_scenario(doc)).run("", nullptr);
  // x - 1 (x - leader) is the leader's parameters to rounding.
  EXPECT_LT(lines_of(all.metrics_jsonl, "eval").back()["consensus_distance"].get<double>(), 1e-9);
  doc["topology"].update({{"c1", 1.0}, {"c2", 0.0}});
  const RunResult groups = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_GT(lines_of(groups.metrics_jsonl, "eval").back()["consensus_distance"].get<double>(), 1e-6);
}

nlohmann::json async_leader_doc(int workers, int group_size) {
  auto doc = run_doc("leader");
  doc["training"]["workers"] = workers;
  doc["topology"].update({{"mode", "async"}, {"l_comm", 4}, {"g_comm", 12}, {"group_size", group_size}});
  return doc;
}

TEST(AsyncLeaderSgd, TrainsInTwoGroupsWithinAFewPointsOfSyncRing) {
  auto ring = run_doc("ring");
  ring["training"]["workers"] = 8;
  const double reference =
      Engine(load_scenario(ring)).run("", nullptr).summary["final_accuracy"].get<double>();
  const RunResult r = Engine(load_scenario(async_leader_doc(8, 4))).run("", nullptr);
  EXPECT_EQ(r.summary["steps"].get<int>(), 120);
  EXPECT_NEAR(r.summary["final_accuracy"].get<double>(), reference, 0.05);
  EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.5);
  const double spread = lines_of(r.metrics_jsonl, "eval").back()["consensus_distance"].get<double>();
  EXPECT_GT(spread, 0.0);
  EXPECT_LT(spread, 1.0);
  // Leaders' parameters travelled, not only the losses: every report of 30 (each worker's 30
  // pull steps, to the 7 others) is 40 bytes.
  const std::uint64_t losses = 8 * 30 * 7 * (32 + 8);
  const std::uint64_t param_msg = 32 + 12 + 4 * r.summary["parameters"].get<std::uint64_t>();
  EXPECT_GT(r.summary["bytes_on_wire"].get<std::uint64_t>(), losses + 20 * param_msg);
}

TEST(AsyncLeaderSgd, WorkersArePulledOntoTheLeadersParametersTheyReceived) {
  // With c = 1 a pull puts a worker on the copy it holds. Once the learning rate is ~0
  // (step 60 on), only pulls move parameters, so the spread between the workers can only fall
  // because copies of the leaders' parameters arrive and are pulled onto; without pulls it
  // stays what the first 60 steps made it.
  const auto spread_after = [](double c1, double c2, int workers, int group_size) {
    auto doc = async_leader_doc(workers, group_size);
    doc["training"]["optimizer"].update({{"milestones", {60}}, {"gamma", 1e-9}, {"momentum", 0.0}});
    doc["topology"].update({{"c1", c1}, {"c2", c2}});
    const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
    return lines_of(r.metrics_jsonl, "eval").back()["consensus_distance"].get<double>();
  };
  const double apart = spread_after(0.0, 0.0, 8, 4);
  EXPECT_GT(apart, 1e-4);
  // Group pulls: each group of four gathers on its leader's parameters.
  EXPECT_LT(spread_after(1.0, 0.0, 4, 4), 1e-3 * apart);
  // Global pulls: the global leader's parameters reach the other group through its entry
  // point, and everyone gathers on them.
  EXPECT_LT(spread_after(0.0, 1.0, 8, 4), 1e-3 * apart);
}

TEST(AsyncLeaderSgd, AStragglerHoldsNoFastWorkerBack) {
  // Two workers in one group, rank 0 three times slower (30 ms against 10 ms a step), 30
  // steps, a pull every 5. The step lines give each step's largest exposed communication
  // (comm_s_max) over both workers, so the fast worker ends its 30 steps no later than
  // 30 x 10 ms plus their sum. Sync: it waits for the straggler at every pull and ends with
  // it (0.9 s). Async: it never waits and is done at 0.3 s.
  const auto run = [](const std::string& mode) {
    auto doc = run_doc("leader");
    doc["training"].update({{"workers", 2}, {"steps", 30}, {"eval_every", 30}});
    doc["compute"] = {{"mode", "fixed"}, {"seconds", 0.01}, {"threads", 1},
                      {"slow_workers", {{{"rank", 0}, {"scale", 3.0}}}}};
    doc["topology"] = {{"kind", "leader"}, {"mode", mode}, {"l_comm", 5}, {"g_comm", 10},
                       {"group_size", 2}};
    return Engine(load_scenario(doc)).run("", nullptr);
  };
  const auto waited = [](const RunResult& r) {
    double total = 0;
    for (const auto& step : lines_of(r.metrics_jsonl, "step")) {
      total += step["comm_s_max"].get<double>();
    }
    return total;
  };
  const RunResult sync = run("sync"), async = run("async");
  const double straggler_end = async.summary["sim_time_s"].get<double>();
  EXPECT_NEAR(straggler_end, 30 * 0.03, 0.01);
  EXPECT_LT(waited(async), 1e-9);  // zero but for rounding
  EXPECT_LT(30 * 0.01 + waited(async), 0.4 * straggler_end);
  // Sync: the fast worker spends the straggler's extra 0.6 s waiting.
  EXPECT_GT(waited(sync), 0.55);
  EXPECT_GT(sync.summary["sim_time_s"].get<double>(), 0.9);
}

TEST(Schemes, ValidationNamesTheProblem) {
  auto doc = run_doc("gossip");
  doc["codec"] = {{"kind", "topk"}};
  try {
    load_scenario(doc);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "codec.kind");
  }
  doc = run_doc("ring");
  doc["topology"]["mode"] = "async";
  try {
    load_scenario(doc);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "topology.mode");
    EXPECT_NE(std::string(e.what()).find("only \"ps\" and \"leader\" have an async mode"),
              std::string::npos)
        << e.what();
  }
  doc = run_doc("ring");
  doc["compute"]["slow_workers"] = {{{"rank", 9}, {"scale", 2}}};
  EXPECT_THROW(load_scenario(doc), ConfigError);
}

}  // namespace
}  // namespace gradwire
