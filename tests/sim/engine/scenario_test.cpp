// Scenario validation: good files resolve with defaults filled in; every malformed one is
// rejected with the JSON path of the problem.
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "TestNames.h"
#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "nodes/schemes/SchemeRegistry.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

nlohmann::json minimal() {
  return {{"gradwire", 1},
          {"name", "t"},
          {"model", {{"kind", "mlp"}}},
          {"dataset", {{"kind", "synthetic"}}},
          {"training", {{"workers", 2}, {"steps", 10}}}};
}

TEST(Scenario, MinimalResolvesWithDefaults) {
  const Scenario s = load_scenario(minimal());
  EXPECT_EQ(s.training.workers, 2);
  EXPECT_EQ(s.training.steps, 10);
  EXPECT_EQ(s.codec["kind"], "none");
  EXPECT_EQ(s.codec["error_feedback"], false);
  EXPECT_EQ(s.topology.kind, "ring");
  EXPECT_EQ(s.network.family(), "ethernet");
  EXPECT_EQ(s.network.mtu(), 1500u);
  EXPECT_FALSE(s.network.transport().udp());
  EXPECT_EQ(s.resolved["network"]["mtu"], 1500);
  EXPECT_EQ(s.resolved["training"]["optimizer"]["lr"], 0.05);
  // The resolved form is itself a valid scenario that resolves to the same thing.
  EXPECT_EQ(load_scenario(s.resolved).resolved, s.resolved);
}

TEST(Scenario, SlowWorkersAtTheDefaultScaleResolveToThemselves) {
  // Every listed worker at scale 1 resolved to "slow_workers": [], which loaded again as no
  // list: the resolved form (a run folder's scenario.json) did not resolve to itself.
  auto doc = minimal();
  doc["compute"] = {{"mode", "fixed"}, {"slow_workers", {{{"rank", 0}, {"scale", 1.0}}}}};
  const Scenario s = load_scenario(doc);
  EXPECT_EQ(load_scenario(s.resolved).resolved, s.resolved);
  EXPECT_FALSE(s.resolved["compute"].contains("slow_workers"));
  doc["compute"]["slow_workers"] = {{{"rank", 0}, {"scale", 1.0}}, {{"rank", 1}, {"scale", 2.5}}};
  const Scenario slow = load_scenario(doc);
  EXPECT_EQ(load_scenario(slow.resolved).resolved, slow.resolved);
  EXPECT_EQ(slow.resolved["compute"]["slow_workers"],
            nlohmann::json::parse(R"([{"rank": 1, "scale": 2.5}])"));
}

TEST(Scenario, TopologyDefaultsComeFromTheSchemesDeclaration) {
  const SchemeRegistry& schemes = SchemeRegistry::builtin();
  for (const auto& info : schemes.list()) {
    auto doc = minimal();
    doc["topology"] = {{"kind", info.name}};
    doc["codec"] = {{"kind", "none"}};
    const Scenario s = load_scenario(doc);
    EXPECT_EQ(s.topology.kind, info.name);
    EXPECT_EQ(mode_name(s.topology.mode),
              param_named(schemes.common_params(), "mode").default_value.get<std::string>());
    for (const auto& p : info.params) {
      // Parameters the resolved scenario shows for this scheme carry the declared default.
      const auto& resolved = s.resolved.at("topology");
      if (resolved.contains(p.name)) {
        EXPECT_EQ(resolved.at(p.name), p.default_value) << info.name << "." << p.name;
      }
    }
  }
}

TEST(Scenario, CifarNeedsAPathToItsBinaryFiles) {
  auto doc = minimal();
  doc["dataset"] = {{"kind", "cifar10"}};
  doc["model"] = {{"kind", "cnn"}};
  try {
    load_scenario(doc);
    ADD_FAILURE() << "cifar10 without a path accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "dataset.path");
    EXPECT_NE(std::string(e.what()).find("data_batch_1.bin"), std::string::npos) << e.what();
  }
  doc["dataset"]["path"] = "/nonexistent/cifar";
  try {
    load_scenario(doc);
    ADD_FAILURE() << "a missing folder accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "dataset.path");
  }
  doc["dataset"] = {{"kind", "cifar100"}, {"path", "/tmp"}};
  doc["training"]["epochs"] = 1;
  doc["training"].erase("steps");
  doc["training"]["batch"] = 50;
  const Scenario s = load_scenario(doc);
  EXPECT_EQ(s.training.steps, 50000 / 2 / 50);  // one epoch of a worker's half of 50,000
}

TEST(Scenario, EpochsBecomeSteps) {
  auto doc = minimal();
  doc["training"] = {{"workers", 4}, {"epochs", 2}, {"batch", 50}};
  doc["dataset"]["train_samples"] = 1000;
  EXPECT_EQ(load_scenario(doc).training.steps, 10);  // 2 * 1000 / (4 * 50)
}

TEST(Scenario, OverridesApplyBeforeValidation) {
  auto doc = minimal();
  apply_overrides(doc, {"training.workers=8", "codec.kind=topk", "codec.ratio=0.1",
                        "network.rate=\"10Gbps\""});
  const Scenario s = load_scenario(doc);
  EXPECT_EQ(s.training.workers, 8);
  EXPECT_EQ(s.codec["kind"], "topk");
  EXPECT_DOUBLE_EQ(s.codec["ratio"].get<double>(), 0.1);
  EXPECT_EQ(s.network.to_json()["rate"], "10Gbps");
  EXPECT_THROW(apply_overrides(doc, {"novalue"}), ConfigError);
}

struct BadCase {
  const char* what;
  nlohmann::json patch;  // merged into minimal()
  const char* path;
};

// Failure lines name the case, not a byte dump of the struct.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.what; }

class BadScenario : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadScenario, IsRejectedWithItsPath) {
  auto doc = minimal();
  doc.merge_patch(GetParam().patch);
  try {
    load_scenario(doc);
    ADD_FAILURE() << GetParam().what << ": accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), GetParam().path) << GetParam().what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos)
        << "message should say what was expected: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadScenario,
    ::testing::Values(
        BadCase{"unknown top-level key", {{"trainin", nlohmann::json::object()}}, "trainin"},
        BadCase{"wrong version", {{"gradwire", 2}}, "gradwire"},
        BadCase{"name with slash", {{"name", "../x"}}, "name"},
        BadCase{"workers as string", {{"training", {{"workers", "four"}}}}, "training.workers"},
        BadCase{"zero workers", {{"training", {{"workers", 0}}}}, "training.workers"},
        BadCase{"fractional batch", {{"training", {{"batch", 3.5}}}}, "training.batch"},
        BadCase{"negative lr", {{"training", {{"optimizer", {{"lr", -1}}}}}}, "training.optimizer.lr"},
        BadCase{"unknown optimizer key",
                {{"training", {{"optimizer", {{"beta", 0.9}}}}}}, "training.optimizer.beta"},
        BadCase{"momentum 1", {{"training", {{"optimizer", {{"momentum", 1.0}}}}}},
                "training.optimizer.momentum"},
        BadCase{"target above 1", {{"training", {{"target_accuracy", 80}}}}, "training.target_accuracy"},
        BadCase{"unknown model", {{"model", {{"kind", "resnet-1000"}}}}, "model.kind"},
        BadCase{"cnn on synthetic features", {{"model", {{"kind", "cnn"}}}}, "model.kind"},
        BadCase{"unknown codec", {{"codec", {{"kind", "zip"}}}}, "codec.kind"},
        BadCase{"topk ratio out of range", {{"codec", {{"kind", "topk"}, {"ratio", 1.5}}}}, "codec.ratio"},
        BadCase{"unknown codec key", {{"codec", {{"kind", "topk"}, {"k", 5}}}}, "codec.k"},
        BadCase{"bad topology", {{"topology", {{"kind", "mesh"}}}}, "topology.kind"},
        BadCase{"bad rate", {{"network", {{"rate", "1 Gigabit"}}}}, "network.rate"},
        BadCase{"bad compute mode", {{"compute", {{"mode", "guess"}}}}, "compute.mode"},
        BadCase{"profile without device", {{"compute", {{"mode", "profile"}}}}, "compute.profile"},
        BadCase{"unknown profile", {{"compute", {{"mode", "profile"}, {"profile", "cray-1"}}}},
                "compute.profile"},
        BadCase{"missing dataset dir",
                {{"dataset", {{"kind", "fashion-mnist"}, {"path", "/nonexistent/fmnist"}}},
                 {"model", {{"kind", "mlp"}}}},
                "dataset.path"},
        BadCase{"bad partition", {{"dataset", {{"partition", {{"kind", "dirichlet"}, {"alpha", 0}}}}}},
                "dataset.partition.alpha"},
        BadCase{"resnet20 on features", {{"model", {{"kind", "resnet20"}}}}, "model.kind"},
        BadCase{"lstm_lm on images",
                {{"model", {{"kind", "lstm_lm"}}},
                 {"dataset", {{"shape", {3, 32, 32}}}}},
                "model.kind"},
        BadCase{"mlp on tokens", {{"dataset", {{"vocab", 100}}}}, "model.kind"},
        BadCase{"key of another model", {{"model", {{"kind", "resnet20"}, {"hidden", {8}}}}},
                "model.hidden"},
        BadCase{"heads not dividing d_model",
                {{"model", {{"kind", "transformer"}, {"d_model", 30}, {"heads", 4}}},
                 {"dataset", {{"vocab", 100}}}},
                "model.heads"},
        BadCase{"patch not dividing the image",
                {{"model", {{"kind", "transformer"}, {"patch", 5}}},
                 {"dataset", {{"shape", {3, 32, 32}}}}},
                "model.patch"},
        BadCase{"tied with unequal sizes",
                {{"model", {{"kind", "lstm_lm"}, {"tied", true}, {"embedding", 100}}},
                 {"dataset", {{"vocab", 100}}}},
                "model.tied"},
        BadCase{"vgg16 on small images",
                {{"model", {{"kind", "vgg16"}}}, {"dataset", {{"shape", {3, 16, 16}}}}},
                "model.kind"},
        BadCase{"augmenting features", {{"dataset", {{"augment", true}}}}, "dataset.augment"},
        BadCase{"dirichlet on tokens",
                {{"model", {{"kind", "lstm_lm"}}},
                 {"dataset", {{"vocab", 100}, {"partition", {{"kind", "dirichlet"}}}}}},
                "dataset.partition.kind"},
        BadCase{"perplexity target for a classifier", {{"training", {{"target_perplexity", 50}}}},
                "training.target_perplexity"},
        BadCase{"text file missing",
                {{"model", {{"kind", "lstm_lm"}}},
                 {"dataset", {{"kind", "text"}, {"path", "/nonexistent/corpus.txt"}}}},
                "dataset.path"},
        BadCase{"text unit", {{"model", {{"kind", "lstm_lm"}}},
                              {"dataset", {{"kind", "text"}, {"unit", "byte"}}}},
                "dataset.unit"},
        BadCase{"word vocabulary without room for a word",
                {{"model", {{"kind", "lstm_lm"}}},
                 {"dataset", {{"kind", "text"}, {"unit", "word"}, {"vocab", 2}}}},
                "dataset.vocab"},
        BadCase{"bptt without vocab", {{"dataset", {{"bptt", 20}}}}, "dataset.bptt"},
        BadCase{"cifar without path", {{"dataset", {{"kind", "cifar10"}}}}, "dataset.path"},
        BadCase{"fewer samples than workers", {{"dataset", {{"train_samples", 1}}}},
                "dataset.train_samples"},
        BadCase{"empty output dir", {{"output", {{"dir", ""}}}}, "output.dir"},
        BadCase{"rate beyond 1 Tbps", {{"network", {{"rate", "1e99bps"}}}}, "network.rate"},
        BadCase{"rate below 1 bps", {{"network", {{"rate", "1e-3bps"}}}}, "network.rate"},
        BadCase{"delay of 1e30 s", {{"network", {{"delay", "1e30s"}}}}, "network.delay"},
        BadCase{"link delay beyond 1 s", {{"network", {{"delay", "2s"}}}}, "network.delay"},
        BadCase{"impaired host beyond the run",
                {{"network", {{"impairments", {{"hosts", {0, 99}}}}}}},
                "network.impairments.hosts[1]"},
        BadCase{"impaired host before the first",
                {{"network", {{"impairments", {{"hosts", {-5}}}}}}},
                "network.impairments.hosts[0]"},
        BadCase{"outage of a host the run lacks",
                {{"network", {{"impairments", {{"outages", {{{"hosts", {42}}, {"down", "1s"},
                                                              {"up", "2s"}}}}}}}}},
                "network.impairments.outages[0].hosts[0]"},
        BadCase{"an MLP larger than memory", {{"model", {{"kind", "mlp"}, {"hidden", {2000000000}}}}},
                "model"},
        BadCase{"too many workers for memory",
                {{"model", {{"kind", "mlp"}, {"hidden", {100000, 1000}}}},
                 {"training", {{"workers", 1024}}}},
                "training.workers"},
        BadCase{"an LSTM larger than memory",
                {{"model", {{"kind", "lstm_lm"}, {"hidden_size", 60000}}}, {"dataset", {{"vocab", 100}}}},
                "model"},
        BadCase{"a thousand hidden layers", {{"model", {{"kind", "mlp"}, {"hidden", std::vector<int>(1000, 4)}}}},
                "model.hidden"},
        BadCase{"impairment delay beyond 1 s",
                {{"network", {{"impairments", {{"delay", "5s"}}}}}}, "network.impairments.delay"}),
    [](const auto& info) { return testing_names::sanitize(info.param.what); });

TEST(Scenario, ZooModelsAndTheirDataResolveAndRoundTrip) {
  const std::vector<std::pair<nlohmann::json, nlohmann::json>> cases = {
      {{{"kind", "resnet20"}}, {{"kind", "synthetic"}, {"shape", {3, 32, 32}}}},
      {{{"kind", "mobilenetv2"}, {"width", 0.5}}, {{"kind", "synthetic"}, {"shape", {3, 32, 32}}}},
      {{{"kind", "transformer"}, {"patch", 8}}, {{"kind", "synthetic"}, {"shape", {3, 32, 32}}}},
      {{{"kind", "lstm_lm"}, {"hidden_size", 64}, {"embedding", 64}, {"tied", true}},
       {{"kind", "synthetic"}, {"vocab", 300}, {"bptt", 20}}},
      {{{"kind", "transformer"}}, {{"kind", "text"}, {"unit", "char"}, {"bptt", 64}}},
  };
  for (const auto& [model, dataset] : cases) {
    auto doc = minimal();
    doc["model"] = model;
    doc["dataset"] = dataset;
    const Scenario s = load_scenario(doc);
    EXPECT_EQ(s.model.kind, model["kind"]);
    EXPECT_EQ(load_scenario(s.resolved).resolved, s.resolved) << s.resolved.dump();
  }
  auto lm = minimal();
  lm["model"] = {{"kind", "lstm_lm"}};
  lm["dataset"] = {{"kind", "text"}};
  lm["training"]["target_perplexity"] = 120;
  const Scenario s = load_scenario(lm);
  EXPECT_EQ(s.dataset.text.path, "/usr/share/common-licenses");
  EXPECT_EQ(s.dataset.text.bptt, 35);
  EXPECT_DOUBLE_EQ(s.training.target_perplexity, 120);
  EXPECT_EQ(s.resolved["model"]["dropout"], 0.5);
  EXPECT_EQ(load_scenario(s.resolved).resolved, s.resolved);  // what worker processes read
  lm["compute"] = {{"mode", "profile"}, {"profile", "raspberry-pi-5"}};
  const Scenario profiled = load_scenario(lm);
  EXPECT_EQ(load_scenario(profiled.resolved).resolved, profiled.resolved);
  lm["training"]["target_accuracy"] = 0.5;
  EXPECT_THROW(load_scenario(lm), ConfigError);
  // CIFAR is augmented unless the scenario says otherwise, and the resolved form says which.
  auto images = minimal();
  images["model"] = {{"kind", "resnet20"}};
  images["dataset"] = {{"kind", "synthetic"}, {"shape", {3, 32, 32}}};
  EXPECT_EQ(load_scenario(images).resolved["dataset"]["augment"], false);
}

TEST(Scenario, DeeplyNestedInputIsAnErrorNotACrash) {
  // A wrongly typed value nested 100,000 deep once crashed validation while its error message
  // was rendered.
  const std::string file = ::testing::TempDir() + "deep-scenario.json";
  {
    std::ofstream out(file);
    out << "{\"gradwire\": 1, \"name\": \"deep\", \"training\": {\"workers\": ";
    for (int i = 0; i < 100000; ++i) out << '[';
    for (int i = 0; i < 100000; ++i) out << ']';
    out << "}}";
  }
  try {
    read_scenario_file(file);
    ADD_FAILURE() << "a 100,000-deep file was read";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "(file)");
    EXPECT_NE(std::string(e.what()).find("64 levels"), std::string::npos) << e.what();
  }
  std::remove(file.c_str());
  // Values built in memory (not from a file) are shown briefly whatever their depth.
  nlohmann::json deep = 1;
  for (int i = 0; i < 100000; ++i) deep = nlohmann::json::array({std::move(deep)});
  auto doc = minimal();
  doc["training"]["workers"] = deep;
  try {
    load_scenario(doc);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "training.workers");
    EXPECT_LT(std::string(e.what()).size(), 300u);
  }
  EXPECT_EQ(json_brief(nlohmann::json{{"a", {1, 2}}, {"b", "x"}}), "{\"a\":[1,2],\"b\":\"x\"}");
  EXPECT_EQ(json_brief(nlohmann::json(std::string(1000, 'z'))).size(), 60u);
  // Long strings are cut between characters, never inside one: a message that is not UTF-8
  // cannot be put into JSON (nlohmann throws), and a wrongly typed value of 70 two-byte
  // characters made loading throw that instead of a ConfigError.
  std::string accents = "x";  // then two-byte characters: a cut at an even offset splits one
  for (int i = 0; i < 70; ++i) accents += "\u00e9";
  for (const nlohmann::json& long_value :
       {nlohmann::json(accents), nlohmann::json::array({accents, accents})}) {
    EXPECT_NO_THROW(nlohmann::json(json_brief(long_value)).dump()) << json_brief(long_value);
    auto bad = minimal();
    bad["training"]["workers"] = long_value;
    EXPECT_THROW(load_scenario(bad), ConfigError);
  }
  EXPECT_THROW(load_scenario(nlohmann::json(accents)), ConfigError);
  // A number beyond a double's range is a syntax error of the file, not an exception of
  // another kind escaping the loader.
  {
    std::ofstream out(file);
    out << "{\"gradwire\": 1, \"name\": \"big\", \"seed\": 1e400}";
  }
  try {
    read_scenario_file(file);
    ADD_FAILURE() << "1e400 was read";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "(file)");
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
  std::remove(file.c_str());
  // Directories and endless devices are not scenarios.
  EXPECT_THROW(read_scenario_file(::testing::TempDir()), ConfigError);
  EXPECT_THROW(read_scenario_file("/dev/zero"), ConfigError);
  std::string text = "training.workers=";
  for (int i = 0; i < 1000; ++i) text += "[";
  for (int i = 0; i < 1000; ++i) text += "]";
  auto overridden = minimal();
  EXPECT_THROW(apply_overrides(overridden, {text}), ConfigError);
}

TEST(Scenario, NotAnObjectAndMissingName) {
  EXPECT_THROW(load_scenario(nlohmann::json::array()), ConfigError);
  auto doc = minimal();
  doc.erase("name");
  try {
    load_scenario(doc);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "name");
  }
}

}  // namespace
}  // namespace gradwire
