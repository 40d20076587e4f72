// Train once, replay every network: a step trace recorded on one network, replayed on another,
// gives the metrics and summary the full co-simulation on that network gives (wall times
// aside): every simulated time, loss and accuracy bit for bit. The grid covers Ethernet at 1
// and 10 Gbit/s, 802.11ax, LTE and a Wi-Fi + Ethernet hybrid; ring and parameter server; with
// and without gradient buckets; dense, top-k with error feedback, DGC and PowerSGD; codec work
// free and in simulated time. Runs that cannot be replayed exactly are refused by key; traces of
// another training, corrupt or truncated traces are clear errors.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common/ConfigError.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/engine/StepTrace.h"
#include "sim/engine/StepTraceFile.h"

namespace gradwire {
namespace {

const nlohmann::json kEthernet1g = {{"rate", "1Gbps"}};
const nlohmann::json kEthernet10g = {{"rate", "10Gbps"}, {"delay", "5us"}};
const nlohmann::json kWifiAx = {{"family", "wifi"},     {"standard", "ax"},
                                {"band", "5GHz"},       {"width_mhz", 80},
                                {"rate_control", "ideal"}, {"placement", {{"kind", "disc"}, {"radius_m", 15}}}};
const nlohmann::json kLte = {{"family", "lte"},
                             {"placement", {{"kind", "distances"}, {"distances_m", {80, 150, 250, 400}}}}};
const nlohmann::json kHybrid = {
    {"family", "hybrid"},
    {"server_rate", "10Gbps"},
    {"groups",
     {{{"family", "wifi"}, {"workers", 2}, {"standard", "ax"}},
      {{"family", "ethernet"}, {"workers", 2}, {"rate", "1Gbps"}}}}};

/// 4 workers of an MLP with a 17k-element gradient on synthetic data: small enough for CI,
/// large enough that every network takes its own time.
nlohmann::json scenario(const std::string& topology, const nlohmann::json& codec, bool buckets,
                        bool codec_time) {
  nlohmann::json doc = {
      {"gradwire", 1},
      {"name", "replay"},
      {"seed", 5},
      {"model", {{"kind", "mlp"}, {"hidden", {256}}}},
      {"dataset", {{"kind", "synthetic"}, {"separation", 0.6}, {"features", 64},
                   {"train_samples", 2000}, {"test_samples", 200}}},
      {"training", {{"workers", 4}, {"steps", 6}, {"batch", 16}, {"eval_every", 3},
                    {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
      {"compute", {{"mode", "fixed"}, {"seconds", 0.003}, {"threads", 1}}},
      {"codec", codec},
      {"topology", {{"kind", topology}}},
      {"network", kEthernet1g}};
  if (buckets) doc["training"]["buckets"] = {{"size_mb", 0.02}, {"first_mb", 0.01}};
  if (codec_time) {
    doc["compute"]["codec_time"] = "profile";
    doc["compute"]["codec_device"] = "jetson-nano";
  }
  return doc;
}

nlohmann::json with_network(nlohmann::json doc, const nlohmann::json& network) {
  doc["network"] = network;
  return doc;
}

/// metrics.jsonl and summary.json as a replay must repeat them: without wall-clock fields and
/// the replay's own note.
nlohmann::json comparable(const RunResult& r) {
  nlohmann::json out = {{"summary", r.summary}, {"metrics", nlohmann::json::array()}};
  for (const char* key : {"wall_time_s", "ns3_wall_time_s", "replayed_from"}) out["summary"].erase(key);
  std::istringstream in(r.metrics_jsonl);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("wall_time_s");
    out["metrics"].push_back(j);
  }
  return out;
}

RunResult run(const nlohmann::json& doc, TraceOptions trace = {}) {
  return Engine(load_scenario(doc), std::move(trace)).run("", nullptr);
}

RunResult recorded_run(const nlohmann::json& doc) {
  TraceOptions options;
  options.record = true;
  RunResult r = run(doc, options);
  EXPECT_TRUE(r.trace);
  return r;
}

std::shared_ptr<const StepTrace> record(const nlohmann::json& doc) { return recorded_run(doc).trace; }

/// Records `doc` on 1 Gbit/s Ethernet, then replays it on each of `networks` and compares with
/// the full co-simulation there.
void expect_replays_exactly(const nlohmann::json& doc, const std::vector<nlohmann::json>& networks) {
  const RunResult recorded = recorded_run(doc);
  TraceOptions replay;
  replay.replay = recorded.trace;
  replay.replay_source = "in-memory trace";
  ASSERT_TRUE(replay.replay);
  for (const nlohmann::json& network : networks) {
    const nlohmann::json on = with_network(doc, network);
    const RunResult full = run(on);
    const RunResult replayed = run(on, replay);
    EXPECT_EQ(replayed.summary.value("replayed_from", ""), "in-memory trace");
    EXPECT_TRUE(replayed.final_parameters.empty());
    const nlohmann::json a = comparable(full);
    const nlohmann::json b = comparable(replayed);
    EXPECT_EQ(a["metrics"].size(), b["metrics"].size()) << network.dump();
    for (std::size_t i = 0; i < a["metrics"].size() && i < b["metrics"].size(); ++i) {
      ASSERT_EQ(a["metrics"][i].dump(), b["metrics"][i].dump()) << "metrics line " << i << " on " << network.dump();
    }
    EXPECT_EQ(a["summary"].dump(), b["summary"].dump()) << network.dump();
    // The replayed network's own time, not the recorded one's.
    EXPECT_NE(replayed.summary["sim_time_s"], recorded.summary["sim_time_s"]) << network.dump();
  }
}

const nlohmann::json kDense = {{"kind", "none"}};
const nlohmann::json kTopKErrorFeedback = {{"kind", "topk"}, {"ratio", 0.02}, {"error_feedback", true}};
const nlohmann::json kDgc = {{"kind", "dgc"}};
const nlohmann::json kPowerSgd = {{"kind", "powersgd"}, {"rank", 2}};

TEST(Replay, RingDenseOnTenGigabitWifiAndLte) {
  expect_replays_exactly(scenario("ring", kDense, false, false), {kEthernet10g, kWifiAx, kLte});
}
TEST(Replay, RingTopKWithErrorFeedbackAndBucketsWithCodecTime) {
  expect_replays_exactly(scenario("ring", kTopKErrorFeedback, true, true), {kEthernet10g, kHybrid});
}
TEST(Replay, RingDgcWithCodecTime) {
  expect_replays_exactly(scenario("ring", kDgc, false, true), {kWifiAx, kHybrid});
}
TEST(Replay, RingPowerSgd) {
  expect_replays_exactly(scenario("ring", kPowerSgd, false, false), {kEthernet10g, kLte});
}
TEST(Replay, ParameterServerDenseWithBuckets) {
  expect_replays_exactly(scenario("ps", kDense, true, false), {kWifiAx, kHybrid});
}
TEST(Replay, ParameterServerTopKWithErrorFeedbackAndBucketsWithCodecTime) {
  expect_replays_exactly(scenario("ps", kTopKErrorFeedback, true, true),
                         {kEthernet10g, kLte});
}
TEST(Replay, ParameterServerDgc) {
  expect_replays_exactly(scenario("ps", kDgc, false, false), {kEthernet10g, kWifiAx});
}
TEST(Replay, ParameterServerPowerSgdWithCodecTime) {
  expect_replays_exactly(scenario("ps", kPowerSgd, false, true), {kHybrid, kLte});
}

TEST(Replay, RingAdaCompWithBucketsKeepsItsPerTensorSends) {
  const nlohmann::json doc = scenario("ring", {{"kind", "adacomp"}}, true, false);
  // The co-simulated run reports what AdaComp sent of each tensor, bucket by bucket: the MLP's
  // two weight matrices and two biases, each bucket's tensors in the model's order.
  const RunResult full = run(doc);
  const nlohmann::json& layers = full.summary.at("layer_compression");
  ASSERT_EQ(layers.at("tensors").size(), 4u);
  EXPECT_EQ(layers["tensors"][0]["name"], "fc1.weight");
  EXPECT_EQ(layers["tensors"][0]["type"], "fc");
  EXPECT_EQ(layers["tensors"][1]["type"], "vector");
  EXPECT_EQ(layers["tensors"][0]["numel"], 64 * 256);
  EXPECT_EQ(layers["by_type"]["fc"]["numel"],
            layers["tensors"][0]["numel"].get<int>() + layers["tensors"][2]["numel"].get<int>());
  EXPECT_EQ(layers["by_type"]["fc"]["tensors"], 2);
  for (const auto& t : layers["tensors"]) {
    EXPECT_GT(t["density"].get<double>(), 0.0) << t.dump();
    EXPECT_LT(t["density"].get<double>(), 1.0) << t.dump();
  }
  // Summed over tensors, the bytes are the payload less each bucket's fixed fields.
  double bytes = 0;
  for (const auto& t : layers["tensors"]) bytes += t["bytes_per_step"].get<double>();
  const double payload_per_step = full.summary["payload_bytes"].get<double>() /
                                  (4.0 * full.summary["steps"].get<double>());
  EXPECT_LT(bytes, payload_per_step);
  EXPECT_GT(bytes, 0.5 * payload_per_step);
  std::istringstream lines(full.metrics_jsonl);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["type"] == "step") EXPECT_TRUE(j.contains("density_by_layer_type")) << line;
  }
  // A replay carries the recorded sends, so it writes them as the co-simulation does.
  expect_replays_exactly(doc, {kWifiAx});
}

TEST(Replay, ATraceWrittenToARunFolderReplaysAsTheOneInMemory) {
  const nlohmann::json doc = scenario("ring", kTopKErrorFeedback, true, true);
  const std::string out = ::testing::TempDir() + "replay-folder-" + std::to_string(::getpid());
  TraceOptions options;
  options.record = true;
  const RunResult recorded = Engine(load_scenario(doc), options).run(out, nullptr);
  ASSERT_TRUE(std::filesystem::exists(recorded.directory + "/" + kStepTraceFile));
  const StepTrace read = read_step_trace(recorded.directory);
  EXPECT_EQ(encode_step_trace(read), encode_step_trace(*recorded.trace));
  TraceOptions replay;
  replay.replay = std::make_shared<StepTrace>(read);
  const nlohmann::json on = with_network(doc, kEthernet10g);
  EXPECT_EQ(comparable(run(on)).dump(), comparable(run(on, replay)).dump());
  std::filesystem::remove_all(out);
}

// --- what cannot be replayed is refused, naming the key ---

struct Refused {
  std::string name;
  std::function<void(nlohmann::json&)> change;
  std::string key;
};

class ReplayRefusal : public ::testing::TestWithParam<Refused> {};

TEST_P(ReplayRefusal, NamesTheKeyThatPreventsIt) {
  nlohmann::json doc = scenario("ring", kDense, false, false);
  GetParam().change(doc);
  TraceOptions options;
  options.record = true;
  try {
    run(doc, options);
    FAIL() << "recording was not refused";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), GetParam().key) << e.what();
  }
  // Without a trace the same scenario runs.
  EXPECT_NO_THROW(run(doc));
}

INSTANTIATE_TEST_SUITE_P(
    Replay, ReplayRefusal,
    ::testing::Values(
        Refused{"Gossip", [](nlohmann::json& d) { d["topology"] = {{"kind", "gossip"}}; }, "topology.kind"},
        Refused{"AsyncParameterServer",
                [](nlohmann::json& d) { d["topology"] = {{"kind", "ps"}, {"mode", "async"}}; },
                "topology.kind"},
        Refused{"Udp", [](nlohmann::json& d) { d["network"]["transport"] = {{"kind", "udp"}}; },
                "network.transport.kind"},
        Refused{"MeasuredCompute",
                [](nlohmann::json& d) { d["compute"] = {{"mode", "measured"}, {"threads", 1}}; },
                "compute.mode"},
        Refused{"MeasuredCodecTime",
                [](nlohmann::json& d) { d["compute"]["codec_time"] = "measured"; },
                "compute.codec_time"},
        Refused{"GradiVeQ", [](nlohmann::json& d) { d["codec"] = {{"kind", "gradiveq"}}; }, "codec.kind"},
        Refused{"Faults",
                [](nlohmann::json& d) {
                  d["faults"] = {{{"rank", 1}, {"leave_at", "0.001s"}}};
                },
                "faults"},
        Refused{"Participation",
                [](nlohmann::json& d) {
                  d["topology"] = {{"kind", "ps"}};
                  d["participation"] = {{"clients_per_round", 2}};
                },
                "participation"}),
    [](const auto& info) { return info.param.name; });

TEST(Replay, ATraceOfAnotherTrainingIsRefusedNamingTheFirstDifference) {
  const nlohmann::json doc = scenario("ring", kTopKErrorFeedback, false, false);
  TraceOptions replay;
  replay.replay = record(doc);
  replay.replay_source = "t.gwtrace";
  nlohmann::json other = doc;
  other["codec"]["ratio"] = 0.05;
  try {
    run(other, replay);
    FAIL() << "a trace of another training was replayed";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "--replay");
    EXPECT_NE(std::string(e.what()).find("codec.ratio"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("t.gwtrace"), std::string::npos) << e.what();
  }
  // Name, output folder and network may differ.
  nlohmann::json renamed = with_network(doc, kEthernet10g);
  renamed["name"] = "elsewhere";
  renamed["output"] = {{"dir", "elsewhere"}};
  EXPECT_NO_THROW(run(renamed, replay));
}

TEST(Replay, CodecTimeThatDependsOnMoreThanPayloadSizesIsRefusedBeforeTheRun) {
  // A codec whose decodes of one payload size did different work (DGC's can) leaves a trace
  // whose codec time cannot be replayed: the replay is refused up front, naming the key, so a
  // sweep trains that run in full instead of failing mid-way.
  const nlohmann::json doc = scenario("ring", kDgc, false, true);
  const RunResult recorded = recorded_run(doc);
  auto ambiguous = std::make_shared<StepTrace>(*recorded.trace);
  ASSERT_FALSE(ambiguous->codecs.empty());
  ASSERT_FALSE(ambiguous->codecs.front().empty());
  ambiguous->codecs.front().front().ambiguous_work = true;
  TraceOptions replay;
  replay.replay = ambiguous;
  replay.replay_source = "dgc.gwtrace";
  try {
    run(with_network(doc, kEthernet10g), replay);
    FAIL() << "codec time replayed from a trace that cannot give it";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "compute.codec_time");
    EXPECT_NE(std::string(e.what()).find("dgc.gwtrace"), std::string::npos) << e.what();
  }
  // The trace as recorded (no such decodes) replays.
  replay.replay = recorded.trace;
  EXPECT_NO_THROW(run(with_network(doc, kEthernet10g), replay));
}

// --- the file format ---

TEST(StepTraceFile, RoundTripsEveryField) {
  const auto trace = record(scenario("ps", kPowerSgd, false, true));
  const Bytes bytes = encode_step_trace(*trace);
  const StepTrace back = decode_step_trace(bytes, "t");
  EXPECT_EQ(encode_step_trace(back), bytes);
  EXPECT_EQ(back.steps.size(), 4u);
  EXPECT_EQ(back.steps[0].size(), 6u);
  EXPECT_EQ(back.evaluations.size(), 2u);
  EXPECT_EQ(back.steps[2][4].loss, trace->steps[2][4].loss);
  // DGC's per-tensor sends travel with its encodes.
  const auto dgc = record(scenario("ring", kDgc, false, false));
  const StepTrace dgc_back = decode_step_trace(encode_step_trace(*dgc), "t");
  const CodecCall& encode = dgc_back.codecs[0][0].calls.front();
  ASSERT_EQ(encode.tensor_sends.size(), 4u);
  EXPECT_EQ(encode.tensor_sends[1].sent, dgc->codecs[0][0].calls.front().tensor_sends[1].sent);
  EXPECT_EQ(encode.tensor_sends[1].bytes, dgc->codecs[0][0].calls.front().tensor_sends[1].bytes);
}

TEST(StepTraceFile, TruncatedOrCorruptTracesAreErrorsNamingTheFileAndOffset) {
  const auto trace = record(scenario("ring", kTopKErrorFeedback, true, true));
  const Bytes bytes = encode_step_trace(*trace);
  // Every truncation.
  for (std::size_t cut = 0; cut < bytes.size(); cut += 7) {
    try {
      decode_step_trace(ByteSpan(bytes.data(), cut), "trace.gwtrace");
      FAIL() << "a trace cut at " << cut << " bytes was read";
    } catch (const StepTraceError& e) {
      EXPECT_NE(std::string(e.what()).find("trace.gwtrace"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("offset"), std::string::npos) << e.what();
    }
  }
  // A flipped byte anywhere: the magic, the version, a section's frame or (through its
  // checksum) its body.
  for (std::size_t at = 0; at < bytes.size(); at += 5) {
    Bytes bad = bytes;
    bad[at] ^= 0x5A;
    EXPECT_THROW(decode_step_trace(bad, "trace.gwtrace"), StepTraceError) << "flipped byte " << at;
  }
  EXPECT_THROW(read_step_trace("/nonexistent/trace.gwtrace"), StepTraceError);
}

}  // namespace
}  // namespace gradwire
