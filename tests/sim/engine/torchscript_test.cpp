// A user's own PyTorch model as a TorchScript file: for the same weights and batch, the loss and
// every gradient element gradwire computes equal PyTorch's (python3-torch, relative 1e-5);
// unusable files are scenario errors naming model.path; and such a model trains in a run.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "RawTensorFile.h"
#include "common/ConfigError.h"
#include "nodes/training/Model.h"
#include "nodes/training/ModelFileError.h"
#include "nodes/training/TorchScriptModel.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;

const std::string kHere = std::string(GRADWIRE_SOURCE_DIR) + "/tests/sim/engine";

int run_python(const std::string& args) {
  return std::system(("/usr/bin/python3 " + args + " > /dev/null").c_str());
}

/// The reference files, written once per test program by PyTorch itself.
const fs::path& reference_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("gradwire-torchscript-" + std::to_string(::getpid()));
    fs::create_directories(d);
    const int rc = run_python(kHere + "/torchscript_reference.py " + d.string());
    if (rc != 0) {
      ADD_FAILURE() << "torchscript_reference.py failed (exit " << rc
                    << "): it needs Debian's python3-torch and python3-torchvision, which "
                       "scripts/install-deps installs";
    }
    return d;
  }();
  return dir;
}

using gradwire::testing::read_raw;

class PyTorchCrossCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(PyTorchCrossCheck, LossAndEveryGradientEqualPyTorchs) {
  const std::string name = GetParam();
  const fs::path dir = reference_dir();
  std::ifstream meta_in(dir / (name + ".json"));
  ASSERT_TRUE(meta_in) << "no reference for " << name;
  const nlohmann::json meta = nlohmann::json::parse(meta_in);
  std::vector<std::int64_t> shape = meta.at("shape").get<std::vector<std::int64_t>>();
  const std::int64_t batch = meta.at("batch").get<std::int64_t>();

  torch::set_num_threads(1);
  ModelConfig config;
  config.kind = "torchscript";
  config.edit_settings<TorchScriptSettings>().path = (dir / (name + ".pt")).string();
  auto model = make_model(config, shape, meta.at("classes").get<std::int64_t>());

  std::vector<float> inputs = read_raw<float>(dir / (name + ".inputs.f32"));
  std::vector<std::int64_t> labels = read_raw<std::int64_t>(dir / (name + ".labels.i64"));
  std::vector<std::int64_t> batch_shape = {batch};
  batch_shape.insert(batch_shape.end(), shape.begin(), shape.end());
  const torch::Tensor x = torch::from_blob(inputs.data(), batch_shape, torch::kFloat32).clone();
  const torch::Tensor y = torch::from_blob(labels.data(), {batch}, torch::kInt64).clone();

  model->train();
  torch::manual_seed(11);  // as the reference does before its forward (dropout masks)
  const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
  loss.backward();
  const double expected_loss = meta.at("loss").get<double>();
  EXPECT_NEAR(loss.item<double>(), expected_loss, 1e-5 * std::abs(expected_loss));

  std::vector<torch::Tensor> grads;
  for (const auto& p : model->parameters()) grads.push_back(p.grad().reshape({-1}));
  const torch::Tensor ours = torch::cat(grads);
  const std::vector<float> theirs = read_raw<float>(dir / (name + ".grads.f32"));
  ASSERT_EQ(ours.numel(), static_cast<std::int64_t>(theirs.size()));
  ASSERT_EQ(static_cast<std::size_t>(model->parameters().size()), meta.at("names").size());
  const float* g = ours.data_ptr<float>();
  const float scale = ours.abs().max().item<float>();
  std::int64_t off = 0;
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    // Relative 1e-5 of the element, with a floor of 1e-5 of the largest gradient for elements
    // that are rounding noise around zero.
    const float tol = 1e-5f * std::max(std::abs(theirs[i]), 1e-2f * scale);
    if (std::abs(g[i] - theirs[i]) > tol) ++off;
  }
  EXPECT_EQ(off, 0) << "of " << theirs.size() << " gradient elements of " << name;
}

INSTANTIATE_TEST_SUITE_P(Models, PyTorchCrossCheck,
                         ::testing::Values("small_cnn", "mobilenet_v2", "features_mlp"),
                         [](const auto& info) { return info.param; });

TEST(TorchScriptModel, StatesItsFlopsAndTrainsWithTheFilesWeights) {
  const fs::path dir = reference_dir();
  ModelConfig config;
  config.kind = "torchscript";
  config.edit_settings<TorchScriptSettings>().path = (dir / "small_cnn.pt").string();
  auto a = make_model(config, {3, 16, 16}, 10);
  auto b = make_model(config, {3, 16, 16}, 10);
  // conv 3->8 (3x3) and 8->8 (3x3) at 16x16, two batch norms, linear 8->10.
  const std::int64_t conv = 2 * 27 * 8 * 256 + 2 * 72 * 8 * 256;
  EXPECT_EQ(a->forward_flops_per_sample(), conv + 2 * 2 * 8 * 256 + 2 * 8 * 10);
  // Every replica starts from the file's weights, whatever the RNG.
  auto pa = a->parameters();
  auto pb = b->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(pa[i].equal(pb[i]));
  // Evaluation mode reaches the scripted batch normalisation: running statistics are used.
  a->eval();
  const torch::Tensor x = torch::randn({4, 3, 16, 16});
  const torch::Tensor e1 = a->forward(x);
  const torch::Tensor e2 = a->forward(x.slice(0, 0, 1));
  EXPECT_TRUE(e1.slice(0, 0, 1).allclose(e2, 1e-5, 1e-6));
}

nlohmann::json scenario_with(const std::string& path) {
  return {{"gradwire", 1},
          {"name", "torchscript"},
          {"model", {{"kind", "torchscript"}, {"path", path}}},
          {"dataset", {{"kind", "synthetic"}, {"features", 32}, {"classes", 10},
                       {"train_samples", 2000}, {"test_samples", 500}}},
          {"training", {{"workers", 2}, {"steps", 40}, {"batch", 32}, {"eval_every", 20},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "profile"}, {"profile", "jetson-nano"}, {"threads", 1}}},
          {"codec", {{"kind", "topk"}, {"ratio", 0.1}, {"error_feedback", true}}},
          {"topology", {{"kind", "ring"}}}};
}

void expect_path_error(const nlohmann::json& doc, const std::string& path, const std::string& text) {
  try {
    load_scenario(doc);
    ADD_FAILURE() << "accepted " << doc.dump();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(TorchScriptScenario, UnusableFilesAreErrorsNamingModelPath) {
  const fs::path dir = reference_dir();
  expect_path_error(scenario_with((dir / "missing.pt").string()), "model.path", "cannot read");
  {
    std::ofstream junk(dir / "junk.pt");
    junk << "not a zip archive";
  }
  expect_path_error(scenario_with((dir / "junk.pt").string()), "model.path", "not a TorchScript");
  // Made for 3x16x16 images; the synthetic data has 32 features.
  expect_path_error(scenario_with((dir / "small_cnn.pt").string()), "model.path", "[32]");
  auto doc = scenario_with((dir / "features_mlp.pt").string());
  doc["dataset"]["classes"] = 5;
  expect_path_error(doc, "model.path", "5 classes");
  const std::string none = (dir / "none.pt").string();
  ASSERT_EQ(run_python("-c \"import sys; sys.path.insert(0, '" + kHere +
                       "'); import torch, torchscript_models as m; "
                       "torch.jit.save(torch.jit.script(m.NoParameters()), '" + none + "')\""),
            0);
  expect_path_error(scenario_with(none), "model.path", "no parameters");
  auto no_path = scenario_with("");
  no_path["model"].erase("path");
  expect_path_error(no_path, "model.path", "missing");
}

/// Saves `expression` (a module built from torchscript_models.py) scripted, without gradwire's
/// metadata, as a user's own torch.jit.save would, and returns the file.
std::string save_scripted(const std::string& name, const std::string& expression) {
  const std::string file = (reference_dir() / (name + ".pt")).string();
  const int rc = run_python("-c \"import sys; sys.path.insert(0, '" + kHere +
                            "'); import torch, torchscript_models as m; "
                            "torch.jit.save(torch.jit.script(" + expression + "), '" + file +
                            "')\"");
  EXPECT_EQ(rc, 0) << expression;
  return file;
}

/// scenario_with, with fixed compute: a file without metadata states no FLOPs for a profile.
nlohmann::json fixed_compute_scenario_with(const std::string& path) {
  nlohmann::json doc = scenario_with(path);
  doc["compute"] = {{"mode", "fixed"}, {"seconds", 0.001}};
  return doc;
}

/// What a user reads must be the model's error, not LibTorch's C++ backtrace.
void expect_no_backtrace(const nlohmann::json& doc) {
  try {
    load_scenario(doc);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find("frame #"), std::string::npos) << what;
    EXPECT_EQ(what.find("Exception raised from"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(TorchScriptScenario, AModelThatLoadsButCannotTrainIsRefusedNamingModelPath) {
  // Outputs (logits, features): a run cannot take a tuple for logits.
  const auto tuple =
      fixed_compute_scenario_with(save_scripted("tuple_output", "m.TupleOutput()"));
  expect_path_error(tuple, "model.path", "forward fails: it returns Tuple");
  expect_no_backtrace(tuple);
  // No parameter requires a gradient: backward fails.
  const auto frozen = fixed_compute_scenario_with(save_scripted("frozen", "m.FrozenMlp()"));
  expect_path_error(frozen, "model.path",
                    "backward fails: element 0 of tensors does not require grad");
  expect_no_backtrace(frozen);
  // Made for 16 features without saying so; the data has 32.
  const auto narrow_input =
      fixed_compute_scenario_with(save_scripted("features16", "m.features_mlp(16, 10)"));
  expect_path_error(narrow_input, "model.path",
                    "cannot train on samples shaped [32]: its forward fails: mat1 and mat2");
  expect_no_backtrace(narrow_input);
}

TEST(TorchScriptScenario, OutputsOtherThanTheClassesAreRefusedNamingModelPath) {
  // More outputs than classes would train silently; fewer fail mid-run on a label.
  const auto with_outputs = [](int outputs) {
    return fixed_compute_scenario_with(
        save_scripted("outputs" + std::to_string(outputs),
                      "m.features_mlp(32, " + std::to_string(outputs) + ")"));
  };
  expect_path_error(with_outputs(12), "model.path",
                    "expected a model with 10 outputs, one per class");
  expect_path_error(with_outputs(5), "model.path", "has 5");
  EXPECT_NO_THROW(load_scenario(with_outputs(10)));
}

TEST(TorchScriptScenario, TheFilesParametersCountInTheMemoryCheck) {
  // 28 M parameters hold about 0.5 GiB per model: 1024 workers' worth fits no test machine.
  nlohmann::json doc = fixed_compute_scenario_with(
      save_scripted("wide_layer", "torch.nn.Sequential(torch.nn.Linear(32, 655360), "
                                  "torch.nn.Linear(655360, 10))"));
  doc["training"]["workers"] = 1024;
  doc["dataset"]["train_samples"] = 1024;
  expect_path_error(doc, "training.workers", "1024 workers x 28180490 parameters");
}

TEST(TorchScriptScenario, TheTrialStepLeavesTheGlobalGeneratorAsItWas) {
  // A scripted model's dropout draws from the global generator: validating must not move it,
  // or a run's results would depend on whether it was validated first.
  const auto doc = fixed_compute_scenario_with(save_scripted(
      "dropout", "torch.nn.Sequential(torch.nn.Linear(32, 10), torch.nn.Dropout(0.5))"));
  torch::manual_seed(5);
  const torch::Tensor expected = torch::rand({4});
  torch::manual_seed(5);
  load_scenario(doc);
  EXPECT_TRUE(torch::rand({4}).equal(expected));
}

TEST(TorchScriptScenario, TrainsInARunAndItsLossFalls) {
  const fs::path dir = reference_dir();
  const Scenario sc = load_scenario(scenario_with((dir / "features_mlp.pt").string()));
  EXPECT_EQ(sc.resolved.at("model").at("kind"), "torchscript");
  Engine engine(sc);
  const RunResult r = engine.run("", nullptr);
  std::istringstream in(r.metrics_jsonl);
  double first = -1, last = -1, accuracy = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("type") == "step") {
      if (first < 0) first = j.at("loss").get<double>();
      last = j.at("loss").get<double>();
      EXPECT_GT(j.at("compute_s").get<double>(), 0.0);
    }
    if (j.at("type") == "eval") accuracy = j.at("accuracy").get<double>();
  }
  EXPECT_LT(last, 0.7 * first) << "loss " << first << " -> " << last;
  EXPECT_GT(accuracy, 0.3);
}

}  // namespace
}  // namespace gradwire
