// The models' declaration is the one source of their keys: docs/models.md carries exactly what
// it produces, every declared kind is one make_model builds for the data it declares, and the
// declared defaults are the ones a model gets when a scenario names only its kind.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "GeneratedDocs.h"
#include "common/ConfigError.h"
#include "nodes/training/LeNet.h"
#include "nodes/training/Model.h"
#include "nodes/training/ModelRegistry.h"
#include "nodes/training/zoo/LstmLanguageModel.h"
#include "nodes/training/zoo/MobileNetV2.h"
#include "nodes/training/zoo/TransformerModel.h"

namespace gradwire {
namespace {

TEST(ModelRegistry, DocsPageEqualsTheDeclaration) {
  const std::string page = std::string(GRADWIRE_SOURCE_DIR) + "/docs/models.md";
  EXPECT_EQ(docs::generated_block(page, "models --markdown"), model_reference_markdown())
      << "docs/models.md is out of date: regenerate its block with "
         "`./build/gradwire models --markdown`";
}

TEST(ModelRegistry, EveryDeclaredKindIsBuiltForTheDataItDeclares) {
  torch::set_num_threads(1);
  const ModelInput images{{3, 32, 32}, 10, false};
  const ModelInput tokens{{12}, 50, true};
  const ModelInput features{{20}, 10, false};
  for (const ModelInfo& info : ModelRegistry::builtin().list()) {
    if (info.data == ModelData::kFromFile) continue;  // needs a file: torchscript_test
    ModelConfig config;
    config.kind = info.name;
    // Small sizes where the defaults are large; the architecture is what is checked here.
    if (info.name == "lstm_lm") {
      auto& lstm = config.edit_settings<LstmLanguageModelSettings>();
      lstm.embedding = lstm.hidden_size = 16;
    }
    const ModelInput& input = info.data == ModelData::kTokens ? tokens
                              : info.data == ModelData::kAny  ? features
                                                              : images;
    std::shared_ptr<Model> model;
    ASSERT_NO_THROW(model = make_model(config, input)) << info.name;
    EXPECT_GT(model->forward_flops_per_sample(), 0) << info.name;
    EXPECT_FALSE(model->layer_costs().empty()) << info.name;
    if (info.data == ModelData::kImages) {
      EXPECT_THROW(make_model(config, features), std::invalid_argument) << info.name;
      EXPECT_THROW(make_model(config, tokens), std::invalid_argument) << info.name;
    }
    if (info.data == ModelData::kTokens) {
      EXPECT_THROW(make_model(config, images), std::invalid_argument) << info.name;
    }
    if (info.data == ModelData::kTokensOrImages) {
      EXPECT_NO_THROW(make_model(config, tokens)) << info.name;
    }
  }
  ModelConfig unknown;
  unknown.kind = "alexnet";
  try {
    make_model(unknown, images);
    ADD_FAILURE() << "alexnet was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resnet20"), std::string::npos) << e.what();
  }
}

TEST(ModelRegistry, DeclaredDefaultsAreTheSettingsDefaults) {
  // A config made in code (no settings: each kind's struct defaults) resolves to what the
  // declaration reads from a `model` object that names only the kind.
  for (const ModelInfo& info : ModelRegistry::builtin().list()) {
    if (info.data == ModelData::kFromFile) continue;  // its path has no default
    const nlohmann::json object = {{"kind", info.name}};
    const ModelConfig read = read_model(JsonFields(object, "model"));
    ModelConfig in_code;
    in_code.kind = info.name;
    const nlohmann::json written = model_json(in_code);
    EXPECT_EQ(written, model_json(read)) << info.name;
    for (const auto& p : info.params) EXPECT_TRUE(written.contains(p.name)) << p.name;
  }
  const ModelRegistry& r = ModelRegistry::builtin();
  EXPECT_EQ(param_named(r.find("cnn")->params, "conv1").default_value, LeNetSettings{}.conv1);
  EXPECT_EQ(param_named(r.find("mobilenetv2")->params, "width").default_value,
            MobileNetV2Settings{}.width);
  EXPECT_EQ(param_named(r.find("transformer")->params, "heads").default_value,
            TransformerSettings{}.heads);
  EXPECT_EQ(r.find("nope"), nullptr);
}

TEST(ModelRegistry, AKindReadsItsKeysIntoItsOwnSettings) {
  const nlohmann::json object = {{"kind", "lstm_lm"}, {"embedding", 32}, {"hidden_size", 32},
                                 {"tied", true}};
  const ModelConfig m = read_model(JsonFields(object, "model"));
  const auto& lstm = m.settings_as<LstmLanguageModelSettings>();
  EXPECT_EQ(lstm.embedding, 32);
  EXPECT_TRUE(lstm.tied);
  EXPECT_EQ(model_json(m).at("hidden_size"), 32);
  // Another kind's key is refused naming the kinds that take it.
  try {
    read_model(JsonFields({{"kind", "mlp"}, {"heads", 2}}, "model"));
    ADD_FAILURE() << "mlp took heads";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "model.heads");
    EXPECT_NE(std::string(e.what()).find("transformer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gradwire
