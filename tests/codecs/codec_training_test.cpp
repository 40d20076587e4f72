// End to end, per codec ("each method trains to within a few points of none"): every
// registered single-round codec trains the same small MLP on the same synthetic data, through
// the in-process engine and the simulated network, and must end within kMaxGap of the final
// test accuracy that `none` reaches on the identical scenario (same seed, data, model, steps).
//
// Set-up: Gaussian-mixture data (32 features, 10 classes, separation 0.5: the classes overlap,
// `none` ends near 82%, not at 100% where any codec that learns at all would tie it), an MLP 32 -> 64 -> 10 (2,826 parameters: a 640-element
// output layer, a 2,048-element hidden layer, two bias vectors), 4 workers, batch 16, 150 steps
// (2.4 epochs of the 4,000 training samples), SGD lr 0.05 with momentum 0.9, fixed compute
// time and one intra-op thread, so every run is bit-for-bit repeatable and the whole program
// stays well under a minute.
//
// Parameters differ from the ImageNet/quickstart defaults where the tiny model needs it; each
// case says why next to its parameters.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

using nlohmann::json;

// Accuracy points (as a fraction) a codec may lose against `none`.
constexpr double kMaxGap = 0.05;
constexpr int kSteps = 150;

struct CodecCase {
  std::string label;     // test name suffix
  std::string topology;  // "ring" or "ps"
  json codec;            // the scenario's codec object
  double lr = 0.05;      // training.optimizer.lr
  double momentum = 0.9; // training.optimizer.momentum
};

// Small enough caps that the 2,826 parameters travel in two buckets (the output layer, then
// the hidden layer), each with its own codec state.
const json kTwoBuckets = {{"size_mb", 0.004}, {"first_mb", 0.001}};

json scenario(const std::string& topology, const json& codec, double lr, double momentum,
              const json& buckets = "none") {
  return {{"gradwire", 1},
          {"name", "codec-training"},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {64}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 0.5}, {"train_samples", 4000},
                       {"test_samples", 1000}}},
          {"training", {{"workers", 4}, {"steps", kSteps}, {"batch", 16}, {"eval_every", kSteps},
                        {"optimizer", {{"lr", lr}, {"momentum", momentum}}},
                        {"buckets", buckets}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"codec", codec},
          {"topology", {{"kind", topology}, {"mode", "sync"}}},
          {"network", {{"rate", "1Gbps"}}}};
}

struct Outcome {
  double accuracy = 0;
  double compression = 0;
};

Outcome run(const std::string& topology, const json& codec, double lr, double momentum,
            const json& buckets = "none") {
  const RunResult r =
      Engine(load_scenario(scenario(topology, codec, lr, momentum, buckets))).run("", nullptr);
  return {r.summary.at("final_accuracy").get<double>(),
          r.summary.at("compression_ratio").get<double>()};
}

// `none` per topology, run once and shared by the cases (lr 0.05, momentum 0.9).
double baseline(const std::string& topology) {
  static std::map<std::string, double> cache;
  auto it = cache.find(topology);
  if (it == cache.end()) {
    it = cache.emplace(topology, run(topology, json{{"kind", "none"}}, 0.05, 0.9).accuracy).first;
  }
  return it->second;
}

std::vector<CodecCase> cases() {
  std::vector<CodecCase> out;
  auto add = [&out](const std::string& label, json codec, double lr = 0.05, double momentum = 0.9,
                    std::vector<std::string> topologies = {"ring"}) {
    for (const auto& t : topologies) out.push_back({label + "_" + t, t, codec, lr, momentum});
  };
  const std::vector<std::string> both{"ring", "ps"};

  // --- sparsifiers ---
  // topk at 1% would send 28 values per step (of 2,826): far fewer than the model needs in
  // 150 steps. 5% (141 values, the engine test's setting) keeps the spirit: ~20x fewer bytes.
  add("topk", {{"kind", "topk"}, {"ratio", 0.05}, {"error_feedback", true}}, 0.05, 0.9, both);
  // randomk as scenarios/codecs/randomk.json: 2% with error feedback, optimizer momentum 0,
  // lr 0.1. With error feedback a coordinate waits ~1/ratio steps and then goes out in a burst;
  // momentum on such delayed updates diverges (here 10% at momentum 0.9 ends ~14 points under
  // none; on the quickstart every momentum-0.9 run diverged). codecs/README.md has the numbers.
  add("randomk", {{"kind", "randomk"}, {"ratio", 0.02}, {"error_feedback", true}}, 0.1, 0.0, both);
  // dgc: the paper's 0.1% of a 640- or 2,048-element matrix is one value per step, which cannot
  // train 2,826 parameters in 150 steps; 5% after a warm-up of 25%, 6.25% (20 steps each)
  // keeps all four techniques at work. Biases travel dense.
  add("dgc",
      {{"kind", "dgc"}, {"density", 0.05}, {"warmup_densities", "0.25,0.0625"},
       {"warmup_stage_steps", 20}},
      0.05, 0.9, both);
  // dgc with local clipping that acts on this small MLP: clip_norm 0.5 (limit 0.25 per tensor
  // at 4 workers) moves the run (0.798 where the default clip_norm 5 ends at 0.824), and it
  // must still learn.
  add("dgc_clipped",
      {{"kind", "dgc"}, {"density", 0.05}, {"warmup_densities", "0.25,0.0625"},
       {"warmup_stage_steps", 20}, {"clip_norm", 0.5}});
  add("dgc_fp16",
      {{"kind", "dgc"}, {"density", 0.05}, {"warmup_densities", "0.25,0.0625"},
       {"warmup_stage_steps", 20}, {"values", "fp16"}});
  // gradient_dropping: dropping 99% keeps ~28 values per step, as topk 1%; drop 95% instead.
  add("gradient_dropping", {{"kind", "gradient_dropping"}, {"drop_ratio", 0.95}}, 0.05, 0.9, both);
  // sdagc: lambda 3 (~0.27% of a Gaussian) sends a handful of values per layer per step on
  // tensors this small; lambda 1.5 (~13% of a Gaussian, fewer on heavy-tailed gradients).
  add("sdagc", {{"kind", "sdagc"}, {"lambda", 1.5}}, 0.05, 0.9, both);
  // adacomp: the paper's bin lengths (50 conv, 500 fc) as they are; it adapts its own rate.
  add("adacomp", {{"kind", "adacomp"}}, 0.05, 0.9, both);

  // --- quantisers, at their scenario defaults ---
  add("qsgd", {{"kind", "qsgd"}}, 0.05, 0.9, both);
  add("terngrad", {{"kind", "terngrad"}}, 0.05, 0.9, both);
  add("onebit", {{"kind", "onebit"}});
  // signSGD / Signum: every coordinate moves by +-lr each step, so lr sets the step size
  // directly; 0.01 (the scenarios' 0.001 is for the 61k-parameter CNN over 600 steps) lets
  // 150 steps cover the distance. Majority vote at the server (ps) and in the ring.
  add("signsgd", {{"kind", "signsgd"}}, 0.01, 0.9, both);
  add("signum", {{"kind", "signum"}}, 0.01, 0.9, both);
  add("efsignsgd", {{"kind", "efsignsgd"}});
  add("natural", {{"kind", "natural"}});
  add("natural_dithering", {{"kind", "natural_dithering"}});
  // topk_natural: 5% for the same reason as topk.
  add("topk_natural", {{"kind", "topk_natural"}, {"ratio", 0.05}});
  add("fp16", {{"kind", "fp16"}}, 0.05, 0.9, both);
  add("bf16", {{"kind", "bf16"}});
  return out;
}

class CodecTraining : public ::testing::TestWithParam<CodecCase> {};

// A case's run without buckets, run once and shared by both tests of the case.
Outcome without_buckets(const CodecCase& c) {
  static std::map<std::string, Outcome> cache;
  auto it = cache.find(c.label);
  if (it == cache.end()) it = cache.emplace(c.label, run(c.topology, c.codec, c.lr, c.momentum)).first;
  return it->second;
}

TEST_P(CodecTraining, EndsWithinAFewPointsOfNone) {
  const CodecCase& c = GetParam();
  const double reference = baseline(c.topology);
  const Outcome o = without_buckets(c);
  // The table printed for the codecs' README: codec, topology, accuracy, gap, compression.
  std::ostringstream row;
  row << "[accuracy] " << c.label << " " << o.accuracy << " (none " << reference << ", gap "
      << (reference - o.accuracy) << ", compression " << o.compression << "x)";
  std::cout << row.str() << std::endl;
  EXPECT_GT(reference, 0.6) << "the baseline itself did not learn";
  EXPECT_GE(o.accuracy, reference - kMaxGap) << row.str();
}

// The same with gradient buckets: each bucket reduced on its own with its own codec state.
TEST_P(CodecTraining, EndsWithinAFewPointsOfNoneWithBuckets) {
  const CodecCase& c = GetParam();
  const double reference = baseline(c.topology);
  const Outcome o = run(c.topology, c.codec, c.lr, c.momentum, kTwoBuckets);
  const Outcome whole = without_buckets(c);
  std::cout << "[accuracy, two buckets] " << c.label << " " << o.accuracy << " (none "
            << reference << ", without buckets " << whole.accuracy << ")" << std::endl;
  // Buckets draw other random numbers (their own seeds), so the noisiest codecs land a little
  // elsewhere: within the gap of none, or of the codec itself where it is below none.
  EXPECT_GE(o.accuracy, std::min(reference, whole.accuracy) - kMaxGap) << c.label;
}

INSTANTIATE_TEST_SUITE_P(Codecs, CodecTraining, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<CodecCase>& info) {
                           return info.param.label;
                         });

}  // namespace
}  // namespace gradwire
