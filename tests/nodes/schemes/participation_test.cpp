// Partial participation in the synchronous parameter server: clients sampled per round with the
// scenario's seed, availability from an on/off model or a trace, and the round's deadline.
// Small synthetic runs (fixed compute, 1 Gbit/s Ethernet), plus the sampling and availability
// classes alone.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "MetricsLines.h"
#include "TemporaryTextFile.h"
#include "common/ConfigError.h"
#include "nodes/schemes/Availability.h"
#include "nodes/schemes/Participation.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ParticipationSection.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

using testing::lines_of;

// 4 workers, 2 ms of compute per step.
nlohmann::json run_doc(std::int64_t steps, std::int64_t eval_every) {
  return {{"gradwire", 1},
          {"name", "participation"},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 0.6}, {"features", 16},
                       {"train_samples", 4000}, {"test_samples", 1000}}},
          {"training", {{"workers", 4}, {"steps", steps}, {"batch", 16}, {"eval_every", eval_every},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"topology", {{"kind", "ps"}}},
          {"network", {{"rate", "1Gbps"}}}};
}

using TraceFile = gradwire::testing::TemporaryTextFile;
using gradwire::testing::without_wall_times;

std::vector<int> ints(const nlohmann::json& list) { return list.get<std::vector<int>>(); }

// --- the classes alone ------------------------------------------------------------------------

TEST(Participation, SamplingTakesKOfTheAvailableAndRepeats) {
  const std::vector<int> available = {0, 2, 3, 5, 6, 9};
  const std::vector<int> a = Participation::sample(7, 3, available, 4);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  for (int r : a) EXPECT_TRUE(std::count(available.begin(), available.end(), r));
  EXPECT_EQ(std::set<int>(a.begin(), a.end()).size(), 4u);
  EXPECT_EQ(Participation::sample(7, 3, available, 4), a);
  // More clients than are available: all of them; k = 0: all of them.
  EXPECT_EQ(Participation::sample(7, 3, available, 6), available);
  EXPECT_EQ(Participation::sample(7, 3, available, 0), available);
  // Every client is drawn about equally often (uniform k-subsets): 2000 rounds, 2 of 6.
  std::vector<int> counts(10, 0);
  for (int round = 0; round < 2000; ++round) {
    for (int r : Participation::sample(11, round, available, 2)) ++counts[r];
  }
  for (int r : available) EXPECT_NEAR(counts[r], 2000 * 2 / 6.0, 80) << "rank " << r;
}

TEST(Participation, OnOffAvailabilityIsSeededAndHasTheGivenMeans) {
  const Availability a = Availability::on_off(3, 20.0, 10.0, 42);
  const Availability b = Availability::on_off(3, 20.0, 10.0, 42);
  const Availability c = Availability::on_off(3, 20.0, 10.0, 43);
  int differ = 0;
  double on = 0;
  const int samples = 20000;
  for (int i = 0; i < samples; ++i) {
    const double t = i * 1.0;  // 20000 s: about 670 on/off cycles per worker
    EXPECT_EQ(a.available(1, t), b.available(1, t));
    differ += a.available(1, t) != c.available(1, t);
    on += a.available(1, t);
  }
  EXPECT_GT(differ, 0);
  // The long-run available share is mean_on / (mean_on + mean_off) = 2/3 (about 670 cycles:
  // a standard error near 0.015).
  EXPECT_NEAR(on / samples, 2.0 / 3.0, 0.06);
  // Queries in another order give the same answers.
  const Availability d = Availability::on_off(3, 20.0, 10.0, 42);
  for (int i = samples - 1; i >= 0; i -= 7) EXPECT_EQ(d.available(1, i * 1.0), a.available(1, i * 1.0));
}

TEST(Participation, IntervalsAnswerAvailabilityAndDropsMidRound) {
  const Availability a = Availability::from_intervals({{{0, 1}, {2, 3}}, {}});
  EXPECT_TRUE(a.available(0, 0));
  EXPECT_TRUE(a.available(0, 0.99));
  EXPECT_FALSE(a.available(0, 1));  // an interval's end is not in it
  EXPECT_FALSE(a.available(0, 1.5));
  EXPECT_TRUE(a.available(0, 2.5));
  EXPECT_FALSE(a.available(1, 0));  // no interval: never available
  EXPECT_TRUE(a.available_throughout(0, 0.2, 0.9));
  EXPECT_FALSE(a.available_throughout(0, 0.5, 2.5));  // away in between
  Participation p(ParticipationOptions{0, 0.5, 1}, a);
  EXPECT_EQ(p.participants(0, 0.1), std::vector<int>{0});
  EXPECT_EQ(p.participants(0, 5.0), std::vector<int>{0});  // fixed when the round started
  EXPECT_TRUE(p.counts(0, 0, 0.6));
  EXPECT_FALSE(p.counts(0, 0, 0.61));  // after the deadline (0.1 + 0.5)
  EXPECT_FALSE(p.counts(0, 1, 0.2));   // not sampled
  EXPECT_TRUE(p.participants(1, 1.5).empty());
}

// --- runs ------------------------------------------------------------------------------------

nlohmann::json sampled_doc(std::uint64_t seed) {
  auto doc = run_doc(30, 10);
  doc["seed"] = seed;
  doc["participation"] = {{"clients_per_round", 2},
                          {"deadline", "50ms"},
                          {"availability", {{"model", "on_off"}, {"mean_on", "40ms"},
                                            {"mean_off", "20ms"}}}};
  return doc;
}

TEST(ParticipationRun, ASeededRunRepeatsBitForBit) {
  const RunResult a = Engine(load_scenario(sampled_doc(5))).run("", nullptr);
  const RunResult b = Engine(load_scenario(sampled_doc(5))).run("", nullptr);
  // Same clients each round, same losses, same evaluations (the same parameters), same times.
  EXPECT_EQ(without_wall_times(a.metrics_jsonl), without_wall_times(b.metrics_jsonl));
  EXPECT_EQ(a.summary["final_test_loss"], b.summary["final_test_loss"]);
  EXPECT_EQ(a.summary["sim_time_s"], b.summary["sim_time_s"]);
  const auto steps = lines_of(a.metrics_jsonl, "step");
  ASSERT_EQ(steps.size(), 30u);
  int full = 0;
  for (const auto& s : steps) {
    EXPECT_LE(s["sampled"].size(), 2u);
    // Who took part is among who was sampled; only they sent bytes.
    for (int r : ints(s["participants"])) {
      const auto sampled = ints(s["sampled"]);
      EXPECT_TRUE(std::count(sampled.begin(), sampled.end(), r));
    }
    for (int r = 0; r < 4; ++r) {
      const auto sampled = ints(s["sampled"]);
      if (!std::count(sampled.begin(), sampled.end(), r)) {
        EXPECT_EQ(s["bytes_sent"][r], 0);
      }
    }
    full += s["participants"].size() == 2;
  }
  EXPECT_GT(full, 5);  // the model makes workers available 2/3 of the time
  EXPECT_EQ(a.summary["participation"]["rounds"], 30);
  // Uncompressed, the dense equivalent is what was sent: a compression ratio of 1.
  EXPECT_NEAR(a.summary["compression_ratio"].get<double>(), 1.0, 0.01);  // (dense headers)
  EXPECT_EQ(a.summary["participation"]["clients_per_round"], 2);
}

TEST(ParticipationRun, DifferentSeedsPickDifferentClients) {
  auto one = sampled_doc(5);
  auto two = sampled_doc(6);
  // Everyone available: only the sampling differs.
  one["participation"].erase("availability");
  two["participation"].erase("availability");
  const auto a = lines_of(Engine(load_scenario(one)).run("", nullptr).metrics_jsonl, "step");
  const auto b = lines_of(Engine(load_scenario(two)).run("", nullptr).metrics_jsonl, "step");
  ASSERT_EQ(a.size(), b.size());
  int differ = 0;
  std::set<std::vector<int>> pairs;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["sampled"].size(), 2u);
    EXPECT_EQ(a[i]["participants"], a[i]["sampled"]);  // no deadline missed at 2 ms a step
    differ += a[i]["sampled"] != b[i]["sampled"];
    pairs.insert(ints(a[i]["sampled"]));
  }
  EXPECT_GT(differ, 10);     // of 30 rounds; the same pair has chance 1/6 per round
  EXPECT_GE(pairs.size(), 4u);  // of the 6 pairs
}

TEST(ParticipationRun, EveryoneAwayRoundsWaitForTheDeadlineAndLeaveTheModel) {
  // Nobody is available before 10 s: every one of the 10 rounds is empty.
  const TraceFile trace("rank,start_s,end_s\n0,10,inf\n1,10,inf\n2,10,inf\n3,10,inf\n");
  auto doc = run_doc(10, 5);
  doc["participation"] = {{"deadline", "100ms"}, {"availability", {{"trace", trace.path()}}}};
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  const auto steps = lines_of(r.metrics_jsonl, "step");
  ASSERT_EQ(steps.size(), 10u);  // the rounds count
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_TRUE(steps[i]["sampled"].empty());
    EXPECT_TRUE(steps[i]["participants"].empty());
    EXPECT_TRUE(steps[i]["loss"].is_null());
    for (int w = 0; w < 4; ++w) EXPECT_EQ(steps[i]["payload_bytes"][w], 0);
    // Round i ends at its deadline, (i + 1) x 100 ms, plus the empty reply's trip.
    const double t = steps[i]["sim_time_s"].get<double>();
    EXPECT_GE(t, 0.1 * static_cast<double>(i + 1) - 1e-9);
    EXPECT_LT(t, 0.1 * static_cast<double>(i + 1) + 1e-3);
  }
  // The model did not change: the evaluations after round 5 and round 10 are the same.
  const auto evals = lines_of(r.metrics_jsonl, "eval");
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals[0]["test_loss"], evals[1]["test_loss"]);
  EXPECT_EQ(evals[0]["accuracy"], evals[1]["accuracy"]);
  EXPECT_EQ(r.summary["participation"]["empty_rounds"], 10);
}

TEST(ParticipationRun, AClientThatGoesAwayMidRoundIsDroppedAtTheDeadline) {
  // Rank 1 is sampled in round 0 (available at its start) and goes away at 1.5 ms, before its
  // 2 ms of compute end; it comes back at 1 s.
  const TraceFile drop("0,0,inf\n1,0,0.0015\n1,1,inf\n2,0,inf\n3,0,inf\n");
  // The reference: rank 1 is away from the start, so round 0 is the other three.
  const TraceFile away("0,0,inf\n# rank 1 comes only later\n1,1,inf\n2,0,inf\n3,0,inf\n");
  const auto run = [](const std::string& trace) {
    auto doc = run_doc(1, 1);
    doc["participation"] = {{"deadline", "50ms"}, {"availability", {{"trace", trace}}}};
    return Engine(load_scenario(doc)).run("", nullptr);
  };
  const RunResult dropped = run(drop.path());
  const RunResult without = run(away.path());
  auto everyone = run_doc(1, 1);
  everyone["participation"] = nlohmann::json::object();
  const RunResult all = Engine(load_scenario(everyone)).run("", nullptr);

  const auto step = lines_of(dropped.metrics_jsonl, "step").at(0);
  EXPECT_EQ(ints(step["sampled"]), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ints(step["participants"]), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(step["bytes_sent"][1], 0);  // it sent nothing
  // The round waited for it until the deadline.
  EXPECT_GE(step["sim_time_s"].get<double>(), 0.05);
  EXPECT_LT(step["sim_time_s"].get<double>(), 0.051);
  EXPECT_EQ(dropped.summary["participation"]["dropped_updates"], 1);
  // Its update was not applied: the model is the one the other three made, not everyone's.
  const auto without_step = lines_of(without.metrics_jsonl, "step").at(0);
  EXPECT_EQ(ints(without_step["participants"]), (std::vector<int>{0, 2, 3}));
  EXPECT_LT(without_step["sim_time_s"].get<double>(), 0.01);  // nobody to wait for
  const double loss_dropped = dropped.summary["final_test_loss"].get<double>();
  const double loss_without = without.summary["final_test_loss"].get<double>();
  const double loss_all = all.summary["final_test_loss"].get<double>();
  EXPECT_NEAR(loss_dropped, loss_without, 1e-6 * std::abs(loss_without));
  EXPECT_GT(std::abs(loss_dropped - loss_all), 1e-5 * std::abs(loss_all));

  // Away just after pushing (its compute ends at 2 ms), before the push arrives: the bytes
  // travel, the server discards them.
  const TraceFile upload("0,0,inf\n1,0,0.0020001\n1,1,inf\n2,0,inf\n3,0,inf\n");
  const RunResult late = run(upload.path());
  const auto late_step = lines_of(late.metrics_jsonl, "step").at(0);
  EXPECT_GT(late_step["bytes_sent"][1].get<std::uint64_t>(), 0u);
  EXPECT_EQ(ints(late_step["participants"]), (std::vector<int>{0, 2, 3}));
  EXPECT_GE(late_step["sim_time_s"].get<double>(), 0.05);
  EXPECT_NEAR(late.summary["final_test_loss"].get<double>(), loss_without,
              1e-6 * std::abs(loss_without));
}

TEST(ParticipationRun, EveryClientEveryRoundIsTheSynchronousServer) {
  auto plain = run_doc(20, 10);
  plain["training"]["buckets"] = "none";
  auto rounds = run_doc(20, 10);
  rounds["participation"] = nlohmann::json::object();  // k = all, always available
  const RunResult a = Engine(load_scenario(plain)).run("", nullptr);
  const RunResult b = Engine(load_scenario(rounds)).run("", nullptr);
  const auto sa = lines_of(a.metrics_jsonl, "step");
  const auto sb = lines_of(b.metrics_jsonl, "step");
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i]["loss"], sb[i]["loss"]) << "step " << i + 1;
    EXPECT_EQ(sa[i]["sim_time_s"], sb[i]["sim_time_s"]) << "step " << i + 1;
    EXPECT_EQ(ints(sb[i]["participants"]), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_FALSE(sa[i].contains("participants"));
  }
  EXPECT_EQ(a.summary["final_test_loss"], b.summary["final_test_loss"]);
  EXPECT_FALSE(a.summary.contains("participation"));
}

// --- configuration errors ---------------------------------------------------------------------

std::string error_path(const nlohmann::json& doc) {
  try {
    load_scenario(doc);
  } catch (const ConfigError& e) {
    return e.path();
  }
  return "(accepted)";
}

TEST(ParticipationConfig, BadKeysNameTheirPath) {
  const auto with = [](const nlohmann::json& participation) {
    auto doc = run_doc(5, 5);
    doc["participation"] = participation;
    return doc;
  };
  const nlohmann::json on_off = {{"model", "on_off"}, {"mean_on", "1s"}, {"mean_off", "1s"}};
  EXPECT_EQ(error_path(with({{"clients_per_round", 5}})), "participation.clients_per_round");
  EXPECT_EQ(error_path(with({{"clients_per_round", 0}})), "participation.clients_per_round");
  EXPECT_EQ(error_path(with({{"clients_per_round", -1}})), "participation.clients_per_round");
  EXPECT_EQ(error_path(with({{"clients_per_round", 4}})), "(accepted)");
  EXPECT_EQ(error_path(with({{"deadline", "-1s"}})), "participation.deadline");
  EXPECT_EQ(error_path(with({{"deadline", "0s"}})), "participation.deadline");
  EXPECT_EQ(error_path(with({{"deadline", 3}})), "participation.deadline");
  EXPECT_EQ(error_path(with({{"availability", on_off}})), "participation.deadline");
  EXPECT_EQ(error_path(with({{"deadline", "1s"}, {"availability", on_off}})), "(accepted)");
  auto bad = on_off;
  bad["mean_on"] = "-2s";
  EXPECT_EQ(error_path(with({{"deadline", "1s"}, {"availability", bad}})),
            "participation.availability.mean_on");
  bad = on_off;
  bad["mean_off"] = "0s";
  EXPECT_EQ(error_path(with({{"deadline", "1s"}, {"availability", bad}})),
            "participation.availability.mean_off");
  bad = on_off;
  bad["mean_on"] = "500us";  // periods shorter than 1 ms are refused
  EXPECT_EQ(error_path(with({{"deadline", "1s"}, {"availability", bad}})),
            "participation.availability.mean_on");
  bad = on_off;
  bad["model"] = "markov";
  EXPECT_EQ(error_path(with({{"deadline", "1s"}, {"availability", bad}})),
            "participation.availability.model");
  bad = on_off;
  bad["trace"] = "x.csv";
  EXPECT_EQ(error_path(with({{"deadline", "1s"}, {"availability", bad}})),
            "participation.availability.model");
  EXPECT_EQ(error_path(with({{"deadline", "1s"}, {"availability", {{"trace", "/nonexistent"}}}})),
            "participation.availability.trace");
  EXPECT_EQ(error_path(with({{"clients", 2}})), "participation.clients");
  EXPECT_EQ(error_path(with(3)), "participation");
  // Other sections.
  auto doc = with(nlohmann::json::object());
  doc["topology"]["kind"] = "ring";
  EXPECT_EQ(error_path(doc), "participation");
  doc = with(nlohmann::json::object());
  doc["topology"]["mode"] = "async";
  EXPECT_EQ(error_path(doc), "participation");
  doc = with(nlohmann::json::object());
  doc["faults"] = {{{"rank", 1}, {"leave_at", "1s"}}};
  EXPECT_EQ(error_path(doc), "participation");
  doc = with(nlohmann::json::object());
  doc["codec"] = {{"kind", "powersgd"}};
  EXPECT_EQ(error_path(doc), "codec.kind");
  doc = with(nlohmann::json::object());
  doc["training"]["buckets"] = {{"size_mb", 1}};
  EXPECT_EQ(error_path(doc), "training.buckets");
}

TEST(ParticipationConfig, ATraceWithABadLineNamesTheFileAndTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0,0,1\n1,0,1\n0,1\n", "3"},                 // two fields
      {"# header\nrank,start_s,end_s\n9,0,1\n", "3"},  // no such worker
      {"0,0,1\n\n0,-1,2\n", "3"},                   // negative start
      {"0,5,5\n", "1"},                             // empty interval
      {"0,0,2\n1,0,1\n0,1,3\n", "3"},               // overlaps rank 0's first
      {"0,0,x\n", "1"},                             // not a number
      {"a,0,1\n", "1"},                             // not a rank
      {"0,0,1\nrank,start_s,end_s\n", "2"},         // a header after data
  };
  for (const auto& [text, line] : cases) {
    const TraceFile trace(text);
    auto doc = run_doc(5, 5);
    doc["participation"] = {{"deadline", "1s"}, {"availability", {{"trace", trace.path()}}}};
    try {
      load_scenario(doc);
      ADD_FAILURE() << "accepted:\n" << text;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "participation.availability.trace");
      EXPECT_NE(std::string(e.what()).find(trace.path() + ":" + line + ":"), std::string::npos)
          << e.what();
    }
  }
  // A good trace with comments, blank lines and inf loads.
  const TraceFile good("# from a device log\nrank,start_s,end_s\n0,0,inf  # always\n\n1,0.5,2\n1,3,inf\n");
  std::istringstream in("0,0,inf\n1,0.5,2\n1,3,inf\n");
  const auto intervals = read_availability_trace(in, "x", 4);
  ASSERT_EQ(intervals[1].size(), 2u);
  EXPECT_EQ(intervals[1][1].start_s, 3);
  EXPECT_TRUE(std::isinf(intervals[1][1].end_s));
  EXPECT_TRUE(intervals[2].empty());
  auto doc = run_doc(5, 5);
  doc["participation"] = {{"deadline", "1s"}, {"availability", {{"trace", good.path()}}}};
  const Scenario s = load_scenario(doc);
  EXPECT_EQ(s.participation.trace_intervals[1].size(), 2u);
  EXPECT_EQ(s.resolved["participation"]["availability"]["trace"], good.path());
  EXPECT_EQ(s.resolved["participation"]["clients_per_round"], 4);
}

}  // namespace
}  // namespace gradwire
