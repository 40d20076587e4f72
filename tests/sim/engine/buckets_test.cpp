// Gradient buckets overlap backward with communication: the step timeline against the
// analytic figures of a ring all-reduce on the same Ethernet star, computed here from the
// bucket rule and the model's layer costs.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <numeric>
#include <sstream>

#include <gtest/gtest.h>

#include "OneTorchThread.h"
#include "codecs/CodecWork.h"
#include "codecs/lowrank/GradiVeQCodec.h"
#include "nodes/training/BackwardTimeline.h"
#include "nodes/training/GradientBuckets.h"
#include "nodes/training/Mlp.h"
#include "nodes/training/Model.h"
#include "sim/engine/ComputeTime.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

constexpr int kWorkers = 4;
constexpr double kDelay = 5e-6;  // per link
constexpr std::int64_t kFeatures = 784;
const std::vector<std::int64_t> kHidden = {1024, 512};

nlohmann::json scenario(const std::string& rate, double compute_s, const nlohmann::json& buckets) {
  return {{"gradwire", 1},
          {"name", "buckets"},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", kHidden}}},
          {"dataset", {{"kind", "synthetic"}, {"features", kFeatures}, {"train_samples", 512},
                       {"test_samples", 64}}},
          {"training", {{"workers", kWorkers}, {"steps", 8}, {"batch", 8}, {"eval_every", 8},
                        {"buckets", buckets}}},
          {"compute", {{"mode", "fixed"}, {"seconds", compute_s}, {"threads", 1}}},
          {"codec", {{"kind", "none"}}},
          {"topology", {{"kind", "ring"}}},
          {"network", {{"rate", rate}, {"delay", "5us"}, {"mtu", 1500}}}};
}

struct Timeline {
  double compute_s = 0;
  double step_s = 0;     // mean over the steps after TCP's windows have opened
  double exposed_s = 0;  // mean time beyond compute (the slowest worker's)
  double median_exposed_s = 0;  // the same, median: robust to a step a loaded machine slowed
};

Timeline run(const nlohmann::json& doc) {
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  std::istringstream in(r.metrics_jsonl);
  Timeline t;
  int counted = 0;
  std::vector<double> exposed;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["type"] != "step" || j["step"].get<int>() <= 3) continue;
    t.compute_s = j["compute_s"];
    t.step_s += j["compute_s"].get<double>() + j["comm_s_max"].get<double>();
    t.exposed_s += j["comm_s_max"].get<double>();
    exposed.push_back(j["comm_s_max"].get<double>());
    ++counted;
  }
  t.step_s /= counted;
  t.exposed_s /= counted;
  std::sort(exposed.begin(), exposed.end());
  t.median_exposed_s = exposed[exposed.size() / 2];
  return t;
}

// The model the scenario trains, for its parameter sizes and layer costs.
std::shared_ptr<Model> the_model() {
  ModelConfig c;
  c.kind = "mlp";
  c.edit_settings<MlpSettings>().hidden = kHidden;
  return make_model(c, {kFeatures}, 10);
}

std::vector<std::int64_t> numels(const Model& m) {
  std::vector<std::int64_t> out;
  for (const auto& p : m.parameters()) out.push_back(p.numel());
  return out;
}

// Ring all-reduce of `bytes` on the star: 2(n-1) hops, each moving bytes/n through two links
// (host -> switch -> host) of MTU-sized TCP segments (MTU - 52 bytes of payload, MTU + 38 on
// the wire with Ethernet's framing), plus two link delays and one store-and-forward per hop
// (a frame is forwarded once its last bit, MTU + 26 bytes in, has arrived).
double ring_allreduce_s(double bytes, double rate_bps) {
  const double payload = 1500 - 52, wire = 1500 + 38, arrival = 1500 + 26;
  const double per_hop_bytes = bytes / kWorkers * wire / payload;
  const double hop = per_hop_bytes * 8 / rate_bps + 2 * kDelay + arrival * 8 / rate_bps;
  return 2 * (kWorkers - 1) * hop;
}

// When backward completes the first bucket, as a fraction of compute: the forward third, then
// backward through the layers of the bucket, each in proportion to its forward FLOPs.
double first_release_fraction(const Model& m, const GradientBucket& first) {
  const auto& costs = m.layer_costs();
  double total = 0;
  for (const auto& c : costs) total += static_cast<double>(c.flops);
  // MLP layers hold two parameters each (weight, bias), in order.
  double done = 0;
  for (int layer = first.first_parameter / 2; layer < static_cast<int>(costs.size()); ++layer) {
    done += static_cast<double>(costs[static_cast<std::size_t>(layer)].flops);
  }
  return 1.0 / 3 + 2.0 / 3 * done / total;
}

// Segment offload is a way to simulate faster, not another network: inside whole training
// steps, where DDP's two buckets' all-reduces overlap on two channels and with backward, a
// ring's every step takes what per-frame simulation says, within 0.5 %. A parameter server's
// steps (four workers' pushes meeting at its port) vary by a few percent from step to step
// in either simulation; their mean is held within 5 % (measured: offload 2.2 % and 1.4 %
// shorter at 1 and 10 Gbit/s; netmodels/README.md, "Offload inside training steps").
TEST(BucketTimeline, OffloadedStepsTakeWhatPerFrameStepsTake) {
  for (const std::string topology : {"ring", "ps"}) {
    for (const std::string rate : {"1Gbps", "10Gbps"}) {
      auto doc = scenario(rate, 0.02, {{"size_mb", 25}, {"first_mb", 1}});
      doc["topology"]["kind"] = topology;
      std::vector<double> ends[2];
      for (const bool offload : {false, true}) {
        doc["network"]["offload"] = offload;
        const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
        std::istringstream in(r.metrics_jsonl);
        for (std::string line; std::getline(in, line);) {
          const auto j = nlohmann::json::parse(line);
          if (j["type"] == "step") ends[offload].push_back(j["sim_time_s"].get<double>());
        }
      }
      ASSERT_EQ(ends[0].size(), ends[1].size());
      ASSERT_GT(ends[0].size(), 2u);
      for (std::size_t s = 1; s < ends[0].size(); ++s) {
        const double frame = ends[0][s] - ends[0][s - 1];
        const double offload = ends[1][s] - ends[1][s - 1];
        std::cout << topology << " " << rate << " step " << s + 1 << ": per-frame " << frame
                  << " s, offload " << offload << " s (" << offload / frame << ")\n";
        if (topology == "ring") {
          EXPECT_NEAR(offload, frame, 0.005 * frame) << rate << " step " << s + 1;
        }
      }
      // Steps 2 on (the first opens the connections).
      const double frame_mean = (ends[0].back() - ends[0][0]) / (ends[0].size() - 1);
      const double offload_mean = (ends[1].back() - ends[1][0]) / (ends[1].size() - 1);
      EXPECT_NEAR(offload_mean, frame_mean, (topology == "ring" ? 0.005 : 0.05) * frame_mean)
          << topology << " " << rate;
    }
  }
}

TEST(BucketTimeline, PlanHasSeveralBucketsForThisModel) {
  const auto model = the_model();
  const auto plan = plan_buckets(numels(*model), BucketCaps{});
  ASSERT_EQ(plan.size(), 2u);  // fc2 + fc3 cross the 1 MiB first cap; fc1 is the rest
  EXPECT_EQ(plan[0].first_parameter, 2);
  EXPECT_EQ(gradient_ready_rule(*model), "layer FLOPs");
}

TEST(BucketTimeline, FastNetworkHidesAllButTheLastBucket) {
  const auto model = the_model();
  const auto plan = plan_buckets(numels(*model), BucketCaps{});
  const double compute = 0.05;
  const Timeline t = run(scenario("10Gbps", compute, {{"size_mb", 25}, {"first_mb", 1}}));
  // The first bucket is reduced long before backward ends; the last starts when it ends.
  const double expected = compute + ring_allreduce_s(4.0 * plan.back().numel, 1e10);
  std::cout << "fast network: step " << t.step_s << " s, analytic " << expected << " s\n";
  EXPECT_NEAR(t.step_s, expected, 0.05 * (expected - compute));
}

TEST(BucketTimeline, SlowNetworkReducesTheWholeGradientAfterTheFirstBucket) {
  const auto model = the_model();
  const auto plan = plan_buckets(numels(*model), BucketCaps{});
  // Long enough that releasing the first bucket at the end of backward would miss by > 5%.
  const double compute = 0.3;
  const Timeline t = run(scenario("100Mbps", compute, {{"size_mb", 25}, {"first_mb", 1}}));
  double all = 0;
  for (const auto& b : plan) all += ring_allreduce_s(4.0 * b.numel, 1e8);
  const double expected = compute * first_release_fraction(*model, plan.front()) + all;
  std::cout << "slow network: step " << t.step_s << " s, analytic " << expected << " s\n";
  EXPECT_NEAR(t.step_s, expected, 0.05 * expected);
  // And overlap pays: without buckets the whole all-reduce waits for backward.
  const Timeline none = run(scenario("100Mbps", compute, "none"));
  const auto sizes = numels(*model);
  const double gradient_bytes = 4.0 * std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  const double whole = compute + ring_allreduce_s(gradient_bytes, 1e8);
  std::cout << "slow network, no buckets: step " << none.step_s << " s, analytic " << whole
            << " s\n";
  // One long transfer per hop lets TCP's window outgrow the switch queue (losses the
  // analytic figure does not have), so this one is only bounded below.
  EXPECT_GE(none.step_s, 0.98 * whole);
  EXPECT_LT(t.step_s, none.step_s);
}

}  // namespace
}  // namespace gradwire

// --- codec time and the unchanged default path ----------------------------------------------

namespace gradwire {
namespace {

const std::string kData = std::string(GRADWIRE_SOURCE_DIR) + "/tests/sim/engine/data/";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::vector<nlohmann::json> step_and_eval_lines(const std::string& jsonl) {
  std::vector<nlohmann::json> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    j.erase("wall_time_s");  // wall clock: differs run to run
    out.push_back(j);
  }
  return out;
}

// The files in data/ were written on one machine; LibTorch picks its vector kernels by CPU
// (AVX2, AVX-512), so losses computed elsewhere may differ in the last float bits. The timeline
// (simulated times, bytes, counts) must be identical; the losses and accuracies equal to
// float rounding.
void expect_same_run(const std::vector<nlohmann::json>& actual,
                     const std::vector<nlohmann::json>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  const std::vector<std::string> trained = {"loss", "test_loss", "accuracy", "top5_accuracy"};
  for (std::size_t i = 0; i < actual.size(); ++i) {
    nlohmann::json a = actual[i];
    nlohmann::json e = expected[i];
    for (const auto& key : trained) {
      ASSERT_EQ(a.contains(key), e.contains(key)) << "line " << i << ", " << key;
      if (!a.contains(key)) continue;
      const double x = a[key].get<double>();
      const double y = e[key].get<double>();
      EXPECT_NEAR(x, y, 1e-5 * std::max(1.0, std::abs(y))) << "line " << i << ", " << key;
      a.erase(key);
      e.erase(key);
    }
    EXPECT_EQ(a, e) << "line " << i;
  }
}

// The files in data/ were written by gradwire as it was before gradient buckets and codec
// time existed (the same scenarios, metrics.jsonl without wall_time_s). ps-none's simulated
// times from step 7 on were written again when hosts' NICs stopped dropping their own TCP
// segments (netmodels/README.md): there the server's three 1.6 MB sends had overflowed its
// 1000-packet NIC queue. All its simulated times (comm_s, comm_s_max, sim_time_s) were
// written again when hosts gained TCP Small Queues: the server's three sends, which had left
// its NIC a window at a time, now share it a millisecond at a time and its ACKs to the
// workers no longer wait behind them: steps 3-6 and 10-12 are 1-16 % shorter, while step 7
// waits out a 200 ms retransmission timeout after the workers' pushes lose their last
// segments at the server's switch port (incast; ns-3.37's TCP has no tail-loss probe) and
// steps 8-9 are 4-16 % longer, so the run ends at 1.148 s instead of 0.952 s. Its losses, accuracies and bytes are the original
// ones; ring-topk's file is unchanged.
class BeforeTheTimeline : public ::testing::TestWithParam<std::string> {};

TEST_P(BeforeTheTimeline, FreeCodecTimeWithoutBucketsReproducesItsMetrics) {
  auto doc = read_json(kData + "before-timeline-" + GetParam() + ".json");
  doc["network"]["framing"] = "ppp";  // they were also written before Ethernet framing
  doc["network"]["offload"] = false;  // and by per-frame simulation (offload moves ps-none's
                                      // simulated times by 0.02-0.07 %)
  doc["training"]["buckets"] = "none";
  doc["compute"]["codec_time"] = "free";
  const RunResult r = Engine(load_scenario(doc)).run("", nullptr);
  std::ifstream in(kData + "before-timeline-" + GetParam() + ".metrics.jsonl");
  std::stringstream before;
  before << in.rdbuf();
  // The files were written before parameter-server step lines carried their push and pull.
  std::vector<nlohmann::json> lines = step_and_eval_lines(r.metrics_jsonl);
  for (auto& j : lines) {
    j.erase("push_s");
    j.erase("pull_s");
  }
  expect_same_run(lines, step_and_eval_lines(before.str()));

  // Not vacuous: the default (buckets on, two for this model) does change the timeline.
  doc["training"].erase("buckets");
  const RunResult bucketed = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_NE(step_and_eval_lines(bucketed.metrics_jsonl), step_and_eval_lines(before.str()));
}

INSTANTIATE_TEST_SUITE_P(Runs, BeforeTheTimeline, ::testing::Values("ring-topk", "ps-none"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(CodecTime, ProfileRunsRepeatBitForBitAndCostTime) {
  auto doc = read_json(kData + "before-timeline-ring-topk.json");
  doc["compute"]["codec_time"] = "profile";
  doc["compute"]["codec_device"] = "jetson-nano";
  const RunResult a = Engine(load_scenario(doc)).run("", nullptr);
  const RunResult b = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_EQ(step_and_eval_lines(a.metrics_jsonl), step_and_eval_lines(b.metrics_jsonl));
  double codec = 0;
  for (const auto& j : step_and_eval_lines(a.metrics_jsonl)) {
    if (j["type"] == "step") codec += j.at("codec_s").get<double>();
  }
  EXPECT_GT(codec, 0.0);
  EXPECT_GT(a.summary["mean_step_codec_s"].get<double>(), 0.0);
  // Codec work on a slow device makes the same steps end later than free codec work.
  doc["compute"]["codec_time"] = "free";
  doc["compute"].erase("codec_device");
  const RunResult free = Engine(load_scenario(doc)).run("", nullptr);
  EXPECT_GT(a.summary["sim_time_s"].get<double>(), free.summary["sim_time_s"].get<double>());
  EXPECT_EQ(free.summary["mean_step_codec_s"].get<double>(), 0.0);
}

// The simulated seconds of one compressing GradiVeQ encode of the_model()'s gradient into
// `payload_bytes` on `device`, as the codec declares its work (codecs/CodecWork.h).
double gradiveq_encode_s(std::int64_t payload_bytes, const std::string& device) {
  const auto model = the_model();
  std::vector<LayerSlice> layers;
  std::int64_t numel = 0;
  for (const auto& item : model->named_parameters()) {
    layers.push_back(LayerSlice{item.key(), numel, item.value().sizes().vec()});
    numel += item.value().numel();
  }
  GradiVeQCodec::Options options;  // the scenario's slices and components
  options.warmup_steps = 1;
  options.refit_every = 0;
  GradiVeQCodec codec(options, layers, numel);
  codec.observe_aggregate(at::randn({numel}));  // fits the bases
  EXPECT_TRUE(codec.compressing());
  const DeviceProfile& d = device_profile(device);
  return seconds_on(codec.work(CodecOp::kEncode, numel, static_cast<std::uint64_t>(payload_bytes)),
                    CodecDevice{d.memory_bandwidth, d.sustained_flops});
}

// GradiVeQ's slice pipelining: in ring all-reduce a worker sends its first chunk as soon as
// that chunk is encoded and encodes the next while it travels. At 100 Mbit/s every hop
// outlasts a chunk's share of the encode, so a compressed step ends earlier than one whose
// chunks wait for the whole encode by the (n-1)/n of the encode that the first chunk no
// longer waits for (measured: 1.81-1.88 ms of 1.83). The aggregate, and so the training, is the same: only when bytes leave
// changes.
TEST(PipelinedEncoding, GradiVeQChunksLeaveAsTheyAreEncoded) {
  auto doc = scenario("100Mbps", 0.05, "none");
  doc["training"]["steps"] = 6;
  doc["training"]["eval_every"] = 6;
  doc["codec"] = {{"kind", "gradiveq"}, {"warmup_steps", 2}, {"refit_every", 0}};
  doc["compute"]["codec_time"] = "profile";
  doc["compute"]["codec_device"] = "raspberry-pi-5";
  // Per-frame TCP: with segment offload, super-segments and small queues move a step by a few
  // tenths of a millisecond either way, and the saving is 47-78 % of the hidden encode.
  doc["network"]["offload"] = false;
  const RunResult piped = Engine(load_scenario(doc)).run("", nullptr);
  doc["codec"]["pipeline"] = false;
  const RunResult whole = Engine(load_scenario(doc)).run("", nullptr);

  const auto a = step_and_eval_lines(piped.metrics_jsonl);
  const auto b = step_and_eval_lines(whole.metrics_jsonl);
  ASSERT_EQ(a.size(), b.size());
  std::vector<double> saved;
  double hidden = 0;  // the part of the encode pipelining hides
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i]["type"] != "step") continue;
    const int step = a[i]["step"];
    EXPECT_EQ(a[i]["loss"], b[i]["loss"]) << "step " << step;
    EXPECT_EQ(a[i]["payload_bytes"], b[i]["payload_bytes"]) << "step " << step;
    if (step <= 2) continue;  // warm-up: plain slices, copied
    const std::int64_t payload = a[i]["payload_bytes"][0];
    hidden = gradiveq_encode_s(payload, "raspberry-pi-5") * (kWorkers - 1) / kWorkers;
    saved.push_back(b[i]["comm_s_max"].get<double>() - a[i]["comm_s_max"].get<double>());
  }
  ASSERT_EQ(saved.size(), 4u);
  ASSERT_GT(hidden, 5e-4);
  for (double s : saved) EXPECT_NEAR(s, hidden, 0.05 * hidden);
  EXPECT_EQ(piped.summary["final_accuracy"], whole.summary["final_accuracy"]);
}

}  // namespace
}  // namespace gradwire

namespace gradwire {
namespace {

TEST(BucketTimeline, MeasuredComputeReleasesBucketsAtTheHooksInstants) {
  // Measured compute times each gradient with autograd hooks. A large batch, scaled up, makes
  // backward long against the network: the first bucket is reduced while backward runs, so
  // less of the all-reduce is exposed than when the whole gradient waits for backward to end.
  // The optimizer step's measured time is noise here, and a loaded machine inflates it by the
  // same scale; the batch (which lengthens backward, not the optimizer step) keeps the overlap
  // several times larger than that noise.
  auto doc = scenario("100Mbps", 0, {{"size_mb", 25}, {"first_mb", 1}});
  doc["training"]["batch"] = 1024;
  doc["training"]["steps"] = 12;
  doc["dataset"]["train_samples"] = 4096;
  doc["compute"] = {{"mode", "measured"}, {"scale", 20.0}, {"threads", 1}};
  const Timeline bucketed = run(doc);
  doc["training"]["buckets"] = "none";
  const Timeline whole = run(doc);
  // Medians over the steps: a step that a loaded machine preempted (its measured optimizer
  // time is scaled up too) does not decide the comparison.
  const double exposed_bucketed = bucketed.median_exposed_s;
  const double exposed_whole = whole.median_exposed_s;
  std::cout << "measured: exposed communication " << exposed_bucketed << " s with buckets, "
            << exposed_whole << " s without\n";
  EXPECT_LT(exposed_bucketed, exposed_whole);
}

}  // namespace
}  // namespace gradwire
