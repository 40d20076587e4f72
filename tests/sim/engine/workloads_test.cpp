// The shipped workload scenarios (scenarios/workloads/): each validates with its data in place
// and runs a few steps on synthetic data of its dataset's shape; resnet20 learns from
// CIFAR-format files, and the language model's perplexity falls on Debian's English text.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include "OneTorchThread.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;

const std::string kWorkloads = std::string(GRADWIRE_SOURCE_DIR) + "/scenarios/workloads/";

/// A folder for this test program, removed at exit.
const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("gradwire-workloads-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] { fs::remove_all(fs::temp_directory_path() /
                                    ("gradwire-workloads-" + std::to_string(::getpid()))); });
    return d;
  }();
  return dir;
}

/// CIFAR-10 in its binary format (a label byte, then 1024 red, green and blue bytes): each class
/// has its own colour and a bright square at its own place, under uniform noise, so a network
/// can learn it but not from one pixel.
fs::path learnable_cifar10(int train_per_file, int test) {
  const fs::path dir = scratch() / "cifar10";
  if (fs::exists(dir / "test_batch.bin")) return dir;
  fs::create_directories(dir);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> noise(-60, 60);
  auto write = [&](const std::string& name, int records) {
    std::ofstream out(dir / name, std::ios::binary);
    for (int r = 0; r < records; ++r) {
      const int label = static_cast<int>(rng() % 10);
      out.put(static_cast<char>(label));
      const int top = 4 + 2 * (label % 5);
      const int left = label < 5 ? 4 : 18;
      for (int c = 0; c < 3; ++c) {
        const int base = 60 + 15 * ((label + 3 * c) % 7);
        for (int y = 0; y < 32; ++y) {
          for (int x = 0; x < 32; ++x) {
            const bool square = y >= top && y < top + 8 && x >= left && x < left + 8;
            const int v = std::clamp(base + (square ? 90 : 0) + noise(rng), 0, 255);
            out.put(static_cast<char>(v));
          }
        }
      }
    }
  };
  for (int b = 1; b <= 5; ++b) write("data_batch_" + std::to_string(b) + ".bin", train_per_file);
  write("test_batch.bin", test);
  return dir;
}

fs::path exported_resnet18() {
  const fs::path out = scratch() / "resnet18-cifar10.pt";
  if (fs::exists(out)) return out;
  const std::string cmd = "/usr/bin/python3 " + std::string(GRADWIRE_SOURCE_DIR) +
                          "/scripts/export-model --torchvision resnet18 --input-shape 3,32,32 "
                          "--classes 10 --out " + out.string() + " > /dev/null";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd << ": scripts/export-model needs python3-torch and "
                     "python3-torchvision, which scripts/install-deps installs";
  return out;
}

nlohmann::json workload(const std::string& file) {
  return read_scenario_file(kWorkloads + file);
}

/// The scenario with its data put in place: CIFAR files written here, the model exported.
nlohmann::json with_data(nlohmann::json doc) {
  if (doc["dataset"]["kind"] == "cifar10") {
    doc["dataset"]["path"] = learnable_cifar10(20, 20).string();
  }
  if (doc["model"]["kind"] == "torchscript") doc["model"]["path"] = exported_resnet18().string();
  return doc;
}

/// A few steps on synthetic data of the dataset's shape: images stay images, text becomes
/// token sequences.
nlohmann::json shortened(nlohmann::json doc, std::int64_t steps) {
  doc = with_data(doc);
  const bool text = doc["dataset"]["kind"] == "text";
  nlohmann::json data = {{"kind", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}};
  if (text) {
    data.update({{"vocab", 200}, {"bptt", doc["dataset"].value("bptt", 35)}});
  } else {
    data.update({{"shape", {3, 32, 32}}, {"classes", 10}, {"augment", true}});
  }
  doc["dataset"] = data;
  auto& t = doc["training"];
  t.erase("epochs");
  t["steps"] = steps;
  t["eval_every"] = steps;
  t["eval_samples"] = 32;
  t["optimizer"].erase("milestones");
  doc["compute"]["threads"] = 1;  // LibTorch's spinning threads would fight ns-3 and ctest -j
  return doc;
}

struct Trace {
  std::vector<double> losses;
  std::vector<nlohmann::json> evaluations;
};

Trace run(const nlohmann::json& doc) {
  const Scenario sc = load_scenario(doc);
  Engine engine(sc);
  const RunResult r = engine.run("", nullptr);
  Trace trace;
  std::istringstream in(r.metrics_jsonl);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("type") == "step") trace.losses.push_back(j.at("loss").get<double>());
    if (j.at("type") == "eval") trace.evaluations.push_back(j);
  }
  return trace;
}

class Workload : public ::testing::TestWithParam<std::string> {};

TEST_P(Workload, ValidatesWithItsDataAndRunsOnSyntheticDataOfItsShape) {
  const nlohmann::json doc = workload(GetParam());
  const Scenario as_shipped = load_scenario(with_data(doc));
  EXPECT_EQ(as_shipped.model.kind, doc["model"]["kind"]);
  EXPECT_GT(as_shipped.training.steps, 10);

  const Trace trace = run(shortened(doc, 2));
  ASSERT_EQ(trace.losses.size(), 2u);
  for (double loss : trace.losses) EXPECT_TRUE(std::isfinite(loss));
  ASSERT_EQ(trace.evaluations.size(), 1u);
  const nlohmann::json& e = trace.evaluations[0];
  if (doc["dataset"]["kind"] == "text") {
    EXPECT_GT(e.at("perplexity").get<double>(), 1.0);
  } else {
    EXPECT_GE(e.at("accuracy").get<double>(), 0.0);
    EXPECT_TRUE(e.contains("top5_accuracy"));
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Workload,
                         ::testing::Values("resnet20-cifar10-ring-1gbe.json",
                                           "mobilenetv2-cifar10-wifi-ax.json",
                                           "lstm-lm-text-lte.json",
                                           "torchscript-resnet18-cifar10.json"),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(WorkloadLearning, Resnet20LearnsFromCifarFormatFiles) {
  nlohmann::json doc = workload("resnet20-cifar10-ring-1gbe.json");
  doc["dataset"]["path"] = learnable_cifar10(128, 200).string();
  auto& t = doc["training"];
  t.erase("epochs");
  t.update({{"workers", 2}, {"steps", 60}, {"batch", 32}, {"eval_every", 60}});
  t["optimizer"] = {{"kind", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}};
  doc["compute"]["threads"] = 1;
  const Trace trace = run(doc);
  ASSERT_EQ(trace.losses.size(), 60u);
  const double first = trace.losses.front();
  double tail = 0;
  for (std::size_t i = 50; i < 60; ++i) tail += trace.losses[i] / 10.0;
  EXPECT_LT(tail, 0.5 * first) << "training loss " << first << " -> " << tail;
  EXPECT_GT(trace.evaluations.back().at("accuracy").get<double>(), 0.3);
}

TEST(WorkloadLearning, LanguageModelPerplexityFallsOnDebiansText) {
  if (!fs::exists("/usr/share/common-licenses")) {
    GTEST_SKIP() << "/usr/share/common-licenses (Debian's base-files) is absent";
  }
  nlohmann::json doc = workload("lstm-lm-text-lte.json");
  doc["model"].update({{"embedding", 64}, {"hidden_size", 64}, {"dropout", 0.0}});
  doc["dataset"]["vocab"] = 2000;
  auto& t = doc["training"];
  t.erase("epochs");
  t.update({{"workers", 2}, {"steps", 60}, {"batch", 16}, {"eval_every", 20},
            {"eval_samples", 100}});
  doc["codec"] = {{"kind", "topk"}, {"ratio", 0.01}, {"error_feedback", true}};
  doc["compute"]["threads"] = 1;
  doc["network"]["placement"]["distances_m"] = {80, 150};
  const Trace trace = run(doc);
  ASSERT_GE(trace.evaluations.size(), 2u);
  const double first = trace.evaluations.front().at("perplexity").get<double>();
  const double last = trace.evaluations.back().at("perplexity").get<double>();
  EXPECT_LT(last, 0.6 * first) << "perplexity " << first << " -> " << last;
}

// Batch normalisation in every scheme: statistics stay with each worker and evaluations of
// averaged or server-held parameters take the workers' mean statistics (RunningStatistics.h).
class BatchNormInScheme : public ::testing::TestWithParam<nlohmann::json> {};

TEST_P(BatchNormInScheme, Resnet20TrainsAndEvaluates) {
  nlohmann::json doc = shortened(workload("resnet20-cifar10-ring-1gbe.json"), 3);
  doc["training"]["workers"] = 4;
  doc["training"]["optimizer"] = {{"lr", 0.01}, {"momentum", 0.9}};  // async PS diverges at 0.1
  doc["topology"] = GetParam();
  const Trace trace = run(doc);
  ASSERT_EQ(trace.losses.size(), 3u);
  ASSERT_EQ(trace.evaluations.size(), 1u);
  const double loss = trace.evaluations[0].at("test_loss").get<double>();
  EXPECT_TRUE(std::isfinite(loss)) << GetParam().dump();
  // After 3 steps the running statistics (momentum 0.1) still lag the batches' in every
  // scheme, ring included (test loss ~3.5 against ~2.3 in training); what is checked here is
  // that no scheme's evaluation breaks. The averaging itself is checked in zoo_test
  // (RunningStatisticsOfWorkers).
  EXPECT_LT(loss, 8.0) << GetParam().dump();
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, BatchNormInScheme,
    ::testing::Values(nlohmann::json{{"kind", "ring"}}, nlohmann::json{{"kind", "ps"}},
                      nlohmann::json{{"kind", "ps"}, {"mode", "async"}},
                      nlohmann::json{{"kind", "gossip"}}, nlohmann::json{{"kind", "leader"}}),
    [](const auto& info) {
      return info.param.at("kind").template get<std::string>() +
             (info.param.contains("mode") ? "_async" : "");
    });

}  // namespace
}  // namespace gradwire
