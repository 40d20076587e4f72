// The datasets' declaration is the one source of their keys: docs/models.md carries exactly
// what it produces, a key of another kind is refused naming the kinds that take it, and what a
// kind says it yields (input, train_size) is what its loader loads.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "GeneratedDocs.h"
#include "common/ConfigError.h"
#include "nodes/training/DatasetRegistry.h"

namespace gradwire {
namespace {

DatasetSpec read(const nlohmann::json& object) { return read_dataset(JsonFields(object, "dataset")); }

TEST(DatasetRegistry, DocsPageEqualsTheDeclaration) {
  const std::string page = std::string(GRADWIRE_SOURCE_DIR) + "/docs/models.md";
  EXPECT_EQ(docs::generated_block(page, "datasets --markdown"), dataset_reference_markdown())
      << "docs/models.md is out of date: regenerate its datasets block with "
         "`./build/gradwire datasets --markdown`";
}

TEST(DatasetRegistry, KindChoicesAreTheDeclaredKinds) {
  const DatasetRegistry& r = DatasetRegistry::builtin();
  EXPECT_EQ(r.names(), (std::vector<std::string>{"fashion-mnist", "cifar10", "cifar100", "text",
                                                 "synthetic"}));
  EXPECT_EQ(param_named(r.common_params(), "kind").choices, r.names());
}

TEST(DatasetRegistry, AKeyOfAnotherKindNamesTheKindsThatTakeIt) {
  try {
    read({{"kind", "synthetic"}, {"unit", "char"}});
    ADD_FAILURE() << "unit accepted on synthetic data";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "dataset.unit");
    EXPECT_NE(std::string(e.what()).find("\"text\""), std::string::npos) << e.what();
  }
  try {
    read({{"kind", "synthetic"}, {"train_limit", 10}});
    ADD_FAILURE() << "train_limit accepted on synthetic data";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "dataset.train_limit");
  }
  EXPECT_THROW(read({{"kind", "synthetic"}, {"colour", true}}), ConfigError);
}

TEST(DatasetRegistry, ResolvedObjectsReadBackToThemselves) {
  for (const nlohmann::json& object :
       {nlohmann::json{{"kind", "synthetic"}, {"shape", {3, 8, 8}}, {"augment", true}},
        nlohmann::json{{"kind", "synthetic"}, {"vocab", 50}, {"bptt", 7}},
        nlohmann::json{{"kind", "text"}, {"unit", "char"}, {"vocab", 40}},
        nlohmann::json{{"kind", "synthetic"},
                       {"partition", {{"kind", "dirichlet"}, {"alpha", 0.3}}}}}) {
    const nlohmann::json resolved = dataset_json(read(object));
    EXPECT_EQ(dataset_json(read(resolved)), resolved) << object.dump();
  }
}

TEST(DatasetRegistry, WhatAKindDeclaresItYieldsIsWhatItLoads) {
  torch::set_num_threads(1);
  for (const nlohmann::json& object :
       {nlohmann::json{{"kind", "synthetic"}, {"features", 12}, {"train_samples", 40}},
        nlohmann::json{{"kind", "synthetic"}, {"shape", {3, 8, 8}}, {"classes", 4},
                       {"train_samples", 30}},
        nlohmann::json{{"kind", "synthetic"}, {"vocab", 50}, {"bptt", 7}, {"train_samples", 20}},
        nlohmann::json{{"kind", "text"}, {"unit", "char"}, {"bptt", 16}, {"train_limit", 25}}}) {
    const DatasetSpec spec = read(object);
    const DatasetInfo& info = DatasetRegistry::builtin().at(spec.kind);
    const ModelInput in = info.input(spec);
    const DatasetSplit split = load_dataset(spec, 1);
    EXPECT_EQ(split.train.sample_shape, in.sample_shape) << object.dump();
    EXPECT_EQ(split.train.tokens, in.tokens) << object.dump();
    if (!in.tokens) {
      EXPECT_EQ(split.train.classes, in.classes) << object.dump();
    } else {
      EXPECT_LE(split.train.classes, in.classes) << object.dump();
    }
    EXPECT_EQ(split.train.size(), info.train_size(spec)) << object.dump();
  }
}

}  // namespace
}  // namespace gradwire
