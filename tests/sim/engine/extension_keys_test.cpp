// A network family and a model kind with keys of their own, declared nowhere but here: each is
// listed, validated through its declaration (its keys refused elsewhere, with the JSON path)
// and run. Adding either is one declaration and one registration, nothing else.
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/torch.h>

#include "MetricsLines.h"
#include "common/ConfigError.h"
#include "common/FieldTable.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/NetworkRegistry.h"
#include "nodes/training/ModelRegistry.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

/// One switched link per host at `link` bits per second: Ethernet under another name.
struct LabLinkConfig {
  double link_bps = 100e6;
};

const FieldTable<LabLinkConfig>& lab_link_keys() {
  static const FieldTable<LabLinkConfig> kKeys = FieldTable<LabLinkConfig>().add(
      params::rate("link", "100Mbps", "every host <-> switch link"), &LabLinkConfig::link_bps);
  return kKeys;
}

class LabLinkFamilyConfig final : public FamilyConfig {
 public:
  explicit LabLinkFamilyConfig(LabLinkConfig config) : config_(config) {}
  nlohmann::json to_json() const override {
    nlohmann::json out = {{"family", "lab_link"}};
    lab_link_keys().write(config_, out);
    return out;
  }
  std::uint32_t mtu() const override { return 1500; }
  std::unique_ptr<Network> build(std::size_t hosts) const override {
    EthernetConfig ethernet;
    ethernet.rate_bps = config_.link_bps;
    return std::make_unique<EthernetNetwork>(ethernet, hosts);
  }

 private:
  LabLinkConfig config_;
};

NetworkFamilyInfo lab_link_family() {
  NetworkFamilyInfo f;
  f.name = "lab_link";
  f.summary = "switched links of one rate (declared by a test)";
  f.params = lab_link_keys().params();
  f.minimal = {{"family", f.name}};
  f.resolve = [](const nlohmann::json& object,
                 const std::string& path) -> std::shared_ptr<const FamilyConfig> {
    JsonFields fields(object, path);
    fields.allow(allowed_keys({"family"}, lab_link_keys().params()));
    LabLinkConfig c;
    lab_link_keys().read(fields, c);
    return std::make_shared<LabLinkFamilyConfig>(c);
  };
  return f;
}

/// One hidden layer of `probe_width` units: the model's own key, in a settings struct of its
/// own (nothing added to ModelConfig).
struct ProbeWidth {
  std::int64_t units = 4;
};

class HiddenProbe : public Model {
 public:
  HiddenProbe(std::int64_t features, std::int64_t units, std::int64_t classes) {
    hidden_ = register_module("hidden", std::make_shared<torch::nn::LinearImpl>(features, units));
    out_ = register_module("out", std::make_shared<torch::nn::LinearImpl>(units, classes));
    add_layer_cost("hidden", "linear", 2 * features * units);
    add_layer_cost("out", "linear", 2 * units * classes);
  }
  torch::Tensor forward(torch::Tensor x) override {
    return out_->forward(torch::relu(hidden_->forward(x.flatten(1))));
  }

 private:
  std::shared_ptr<torch::nn::LinearImpl> hidden_;
  std::shared_ptr<torch::nn::LinearImpl> out_;
};

ModelInfo hidden_probe_model() {
  ModelInfo m;
  m.name = "hidden_probe";
  m.summary = "one hidden layer (declared by a test)";
  m.data = ModelData::kAny;
  FieldTable<ProbeWidth> keys;
  keys.add(params::integer("probe_width", 4, 1, 64, "hidden units"), &ProbeWidth::units);
  m.declare(keys);
  m.parameters = [](const ModelConfig& c, const ModelInput& in) {
    const double w = static_cast<double>(c.settings_as<ProbeWidth>().units);
    return (static_cast<double>(in.sample_shape.at(0)) + 1) * w +
           (w + 1) * static_cast<double>(in.classes);
  };
  m.make = [](const ModelConfig& c, const ModelInput& in) -> std::shared_ptr<Model> {
    return std::make_shared<HiddenProbe>(in.sample_shape.at(0), c.settings_as<ProbeWidth>().units,
                                         in.classes);
  };
  return m;
}

class ExtensionKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A network resolved before the family is declared, as a process that validated another
    // scenario first would have: the family must be accepted all the same.
    resolve_network({{"family", "ethernet"}}, "network");
    NetworkRegistry::extend().add(lab_link_family());
    ModelRegistry::extend().add(hidden_probe_model());
  }
  void TearDown() override {
    NetworkRegistry::extend().remove("lab_link");
    ModelRegistry::extend().remove("hidden_probe");
  }

  static nlohmann::json scenario(const nlohmann::json& network) {
    return {{"gradwire", 1},
            {"name", "extension-keys"},
            {"seed", 3},
            {"model", {{"kind", "hidden_probe"}, {"probe_width", 6}}},
            {"dataset",
             {{"kind", "synthetic"},
              {"features", 8},
              {"classes", 2},
              {"train_samples", 256},
              {"test_samples", 64}}},
            {"training", {{"workers", 2}, {"steps", 4}, {"batch", 16}, {"eval_every", 2}}},
            {"compute", {{"mode", "fixed"}, {"seconds", 0.001}, {"threads", 1}}},
            {"topology", {{"kind", "ring"}}},
            {"network", network}};
  }

  static std::string path_of_error(const nlohmann::json& doc) {
    try {
      load_scenario(doc);
    } catch (const ConfigError& e) {
      return e.path();
    }
    return "(loaded)";
  }
};

TEST_F(ExtensionKeysTest, NetworkFamilyIsListed) {
  EXPECT_EQ(param_named(network_params(), "family").choices.back(), "lab_link");
  const std::string markdown = network_reference_markdown();
  EXPECT_NE(markdown.find("## `lab_link`"), std::string::npos);
  EXPECT_NE(markdown.find("| `link` |"), std::string::npos);
  EXPECT_EQ(network_reference_json().at("families").back().at("family"), "lab_link");
}

TEST_F(ExtensionKeysTest, NetworkFamilyIsValidatedThroughItsDeclaration) {
  const Scenario s = load_scenario(scenario({{"family", "lab_link"}, {"link", "50Mbps"}}));
  EXPECT_EQ(s.network.family(), "lab_link");
  EXPECT_EQ(s.resolved["network"]["link"], "50Mbps");
  EXPECT_EQ(load_scenario(s.resolved).resolved, s.resolved);
  EXPECT_EQ(path_of_error(scenario({{"family", "lab_link"}, {"link", "fast"}})), "network.link");
  EXPECT_EQ(path_of_error(scenario({{"family", "lab_link"}, {"rate", "1Gbps"}})), "network.rate");
  EXPECT_EQ(path_of_error(scenario({{"family", "ethernet"}, {"link", "1Gbps"}})), "network.link");
}

TEST_F(ExtensionKeysTest, ModelKeysAreItsOwn) {
  EXPECT_NE(model_reference_markdown().find("| `probe_width` |"), std::string::npos);
  const Scenario s = load_scenario(scenario({{"family", "lab_link"}}));
  EXPECT_EQ(s.model.settings_as<ProbeWidth>().units, 6);
  EXPECT_EQ(s.resolved["model"], nlohmann::json({{"kind", "hidden_probe"}, {"probe_width", 6}}));
  EXPECT_EQ(load_scenario(s.resolved).resolved, s.resolved);

  auto too_wide = scenario({{"family", "lab_link"}});
  too_wide["model"]["probe_width"] = 65;
  EXPECT_EQ(path_of_error(too_wide), "model.probe_width");
  auto other_model = scenario({{"family", "lab_link"}});
  other_model["model"] = {{"kind", "mlp"}, {"probe_width", 6}};
  EXPECT_EQ(path_of_error(other_model), "model.probe_width");
  auto defaulted = scenario({{"family", "lab_link"}});
  defaulted["model"].erase("probe_width");
  EXPECT_EQ(load_scenario(defaulted).model.settings_as<ProbeWidth>().units, 4);
}

// The run builds the family's network and the model from their settings: the same bytes and
// times as Ethernet at that rate, with the model's declared width.
TEST_F(ExtensionKeysTest, RunsOnTheFamilyAndTheModel) {
  const RunResult own =
      Engine(load_scenario(scenario({{"family", "lab_link"}, {"link", "50Mbps"}}))).run("", nullptr);
  const RunResult ethernet =
      Engine(load_scenario(scenario({{"family", "ethernet"}, {"rate", "50Mbps"}}))).run("", nullptr);
  EXPECT_EQ(own.summary["steps"], 4);
  EXPECT_EQ(own.summary["parameters"], (8 + 1) * 6 + (6 + 1) * 2);  // probe_width 6
  EXPECT_GT(own.summary["bytes_on_wire"].get<double>(), 0.0);
  EXPECT_EQ(gradwire::testing::without_wall_times(own.metrics_jsonl),
            gradwire::testing::without_wall_times(ethernet.metrics_jsonl));
}

}  // namespace
}  // namespace gradwire
