// The models' declaration is the one source of their keys: docs/models.md carries exactly what
// it produces, every declared kind is one make_model builds for the data it declares, and the
// declared defaults are the ones a model gets when a scenario names only its kind.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "GeneratedDocs.h"
#include "nodes/training/Model.h"
#include "nodes/training/ModelRegistry.h"

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
    config.embedding = config.hidden_size = 16;
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

TEST(ModelRegistry, DeclaredDefaultsAreTheModelConfigDefaults) {
  const ModelConfig d;
  const ModelRegistry& r = ModelRegistry::builtin();
  EXPECT_EQ(param_named(r.find("cnn")->params, "conv1").default_value, d.conv1);
  EXPECT_EQ(param_named(r.find("mobilenetv2")->params, "width").default_value, d.width);
  EXPECT_EQ(param_named(r.find("lstm_lm")->params, "hidden_size").default_value, d.hidden_size);
  EXPECT_EQ(param_named(r.find("lstm_lm")->params, "embedding").default_value, d.embedding);
  EXPECT_EQ(param_named(r.find("transformer")->params, "d_model").default_value, d.d_model);
  EXPECT_EQ(param_named(r.find("transformer")->params, "heads").default_value, d.heads);
  EXPECT_EQ(r.find("nope"), nullptr);
}

}  // namespace
}  // namespace gradwire
