// Parallel compute: workers' passes wait in a batch until a result is needed and then run
// together on a pool (ComputeBatch), and a run gives the same numbers whatever the pool's
// size, for the ring and the parameter server, with and without dropout.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "OneTorchThread.h"
#include "common/ConfigError.h"
#include "nodes/schemes/ComputeBatch.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

/// True once `count` reaches `target`; false when 10 s pass first.
bool wait_for(const std::atomic<int>& count, int target) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (count.load() < target) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(ComputeBatch, PassesWaitUntilAResultIsNeededThenRunTogether) {
  ComputeBatch batch(2, nullptr);
  // Each pass waits for the other: they finish only if they run at the same time.
  std::atomic<int> started{0};
  std::atomic<int> met{0};
  const auto pass = [&] {
    ++started;
    if (wait_for(started, 2)) ++met;
  };
  batch.submit(pass, false);
  batch.submit(pass, false);
  EXPECT_EQ(started.load(), 0);  // submitting runs nothing
  EXPECT_EQ(batch.pending(), 2u);
  batch.run();
  EXPECT_EQ(met.load(), 2) << "the two passes did not run at once";
  EXPECT_EQ(batch.pending(), 0u);
  batch.run();  // nothing left: returns at once
  EXPECT_EQ(started.load(), 2);
}

TEST(ComputeBatch, InOrderJobsRunOnTheCallersThreadInSubmissionOrder) {
  ComputeBatch batch(3, nullptr);
  std::vector<int> seen;  // written by the caller's thread only
  std::atomic<int> elsewhere{0};
  std::atomic<int> others{0};
  const auto caller = std::this_thread::get_id();
  for (int i = 0; i < 6; ++i) {
    batch.submit(
        [&, i] {
          if (std::this_thread::get_id() == caller) {
            seen.push_back(i);
          } else {
            ++elsewhere;
          }
        },
        true);
    batch.submit([&] { ++others; }, false);
  }
  batch.run();
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_EQ(others.load(), 6);
}

TEST(ComputeBatch, AFailingPassIsRethrownAfterTheOthersFinish) {
  ComputeBatch batch(2, nullptr);
  std::atomic<int> done{0};
  batch.submit([&] { ++done; }, false);
  batch.submit([] { throw std::runtime_error("pass failed"); }, false);
  batch.submit([&] { ++done; }, false);
  EXPECT_THROW(batch.run(), std::runtime_error);
  EXPECT_EQ(done.load(), 2);
  EXPECT_EQ(batch.pending(), 0u);
}

nlohmann::json run_doc(const std::string& topology, bool dropout) {
  nlohmann::json doc = {
      {"gradwire", 1},
      {"name", "pool-" + topology},
      {"seed", 9},
      {"model", {{"kind", "mlp"}, {"hidden", {64}}}},
      {"dataset", {{"kind", "synthetic"}, {"separation", 0.8}, {"features", 16},
                   {"train_samples", 2000}, {"test_samples", 500}}},
      {"training", {{"workers", 4}, {"steps", 24}, {"batch", 16}, {"eval_every", 8},
                    {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
      {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
      {"codec", {{"kind", "topk"}, {"ratio", 0.1}, {"error_feedback", true}}},
      {"topology", {{"kind", topology}}},
      {"network", {{"rate", "1Gbps"}}}};
  if (dropout) {
    // Dropout on the embedding, between the two LSTM layers and before the decoder.
    doc["model"] = {{"kind", "lstm_lm"}, {"embedding", 24}, {"hidden_size", 24},
                    {"layers", 2}, {"dropout", 0.3}};
    doc["dataset"] = {{"kind", "synthetic"}, {"vocab", 40}, {"bptt", 8},
                      {"train_samples", 1000}, {"test_samples", 200}};
  }
  return doc;
}

/// The run's metrics and summary without the fields that measure wall time.
std::string simulated_part(const RunResult& r) {
  std::string out;
  std::istringstream in(r.metrics_jsonl);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("wall_time_s");
    out += j.dump() + "\n";
  }
  nlohmann::json summary = r.summary;
  // Wall time, and how the passes were grouped: the rest is what the run computed.
  for (const char* key : {"wall_time_s", "ns3_wall_time_s", "parallel_compute"}) {
    summary.erase(key);
  }
  return out + summary.dump() + "\n";
}

std::string run_with_pool(nlohmann::json doc, int parallel) {
  doc["compute"]["parallel_workers"] = parallel;
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  if (parallel > 1) {
    // The comparison means something only if passes did share the pool: in a synchronous
    // step every worker's pass is in the batch (4 workers, 24 steps; fewer passes and
    // smaller batches while a worker is away).
    const auto& counts = r.summary.at("parallel_compute");
    std::cout << parallel << " at a time: " << counts.dump() << "\n";
    const bool faults = doc.contains("faults");
    if (!faults) {
      EXPECT_EQ(counts.at("passes").get<int>(), 4 * 24);
    }
    EXPECT_GE(counts.at("passes").get<double>() / counts.at("batches").get<double>(),
              faults ? 2.5 : 3.5)
        << counts.dump();
  }
  return simulated_part(r);
}

struct PoolCase {
  const char* name;
  const char* topology;
  bool dropout;
  bool buckets;
  bool faults = false;
};

// Failure lines name the case, not a byte dump of the struct.
void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

class ParallelCompute : public ::testing::TestWithParam<PoolCase> {};

TEST_P(ParallelCompute, RunsRepeatBitForBitWhateverThePoolsSize) {
  const PoolCase& c = GetParam();
  nlohmann::json doc = run_doc(c.topology, c.dropout);
  // Buckets of a few KiB: the 16 x 64 layer's gradient is released apart from the rest.
  if (c.buckets) doc["training"]["buckets"] = {{"size_mb", 0.004}, {"first_mb", 0.001}};
  if (c.faults) {
    // Rank 2 leaves with its pass possibly still waiting, and rejoins with the group's
    // parameters (which first runs whatever passes wait).
    doc["faults"] = {{{"rank", 2}, {"leave_at", "15ms"}, {"rejoin_at", "30ms"}}};
    doc["topology"]["timeout"] = "5ms";
  }
  const std::string one_after_another = run_with_pool(doc, 1);
  EXPECT_NE(one_after_another.find("\"loss\""), std::string::npos);
  if (c.faults) {
    EXPECT_NE(one_after_another.find("\"event\":\"resume\""), std::string::npos)
        << "rank 2 did not leave and come back";
  }
  EXPECT_EQ(run_with_pool(doc, 2), one_after_another) << "2 at a time";
  EXPECT_EQ(run_with_pool(doc, 4), one_after_another) << "4 at a time";
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, ParallelCompute,
    ::testing::Values(PoolCase{"ring_mlp", "ring", false, false},
                      PoolCase{"ring_mlp_buckets", "ring", false, true},
                      PoolCase{"ps_lstm_dropout", "ps", true, false},
                      PoolCase{"ring_lstm_dropout", "ring", true, false},
                      PoolCase{"ring_mlp_leave_and_rejoin", "ring", false, false, true},
                      PoolCase{"ps_mlp_leave_and_rejoin", "ps", false, false, true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ParallelCompute, MeasuredComputeTakesOneAtATime) {
  nlohmann::json doc = run_doc("ring", false);
  doc["compute"] = {{"mode", "measured"}, {"parallel_workers", 2}};
  try {
    load_scenario(doc);
    FAIL() << "accepted parallel_workers 2 with measured compute";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "compute.parallel_workers");
  }
  doc["compute"]["parallel_workers"] = 1;
  EXPECT_NO_THROW(load_scenario(doc));
}

}  // namespace
}  // namespace gradwire
