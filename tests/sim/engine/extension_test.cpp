// A kind declared nowhere but here (a model, a dataset, a training scheme, a codec) is listed,
// validated and run like a built-in one: the registries are the only place a kind is known.
#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/torch.h>

#include "MetricsLines.h"
#include "codecs/CodecKind.h"
#include "codecs/CodecRegistry.h"
#include "codecs/DenseCodec.h"
#include "common/ConfigError.h"
#include "common/FieldTable.h"
#include "nodes/schemes/RingAllReduce.h"
#include "nodes/schemes/SchemeRegistry.h"
#include "nodes/training/DatasetRegistry.h"
#include "nodes/training/ModelRegistry.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

/// One linear layer: logits = W x + b.
class LinearProbe : public Model {
 public:
  LinearProbe(std::int64_t features, std::int64_t classes) {
    layer_ = register_module("probe", std::make_shared<torch::nn::LinearImpl>(features, classes));
    add_layer_cost("probe", "linear", 2 * features * classes);
  }
  torch::Tensor forward(torch::Tensor x) override { return layer_->forward(x.flatten(1)); }

 private:
  std::shared_ptr<torch::nn::LinearImpl> layer_;
};

struct ProbeSettings {
  std::string tag = "untagged";
};

ModelInfo linear_probe_model() {
  ModelInfo m;
  m.name = "linear_probe";
  m.summary = "one linear layer (declared by a test)";
  m.data = ModelData::kAny;
  m.parameters = [](const ModelConfig&, const ModelInput& in) {
    return static_cast<double>((in.sample_shape.at(0) + 1) * in.classes);
  };
  m.make = [](const ModelConfig&, const ModelInput& in) -> std::shared_ptr<Model> {
    return std::make_shared<LinearProbe>(in.sample_shape.at(0), in.classes);
  };
  return m;
}

/// Two Gaussian blobs in `features` dimensions, labelled by blob; `features` is its one key.
DatasetInfo blobs_dataset() {
  DatasetInfo d;
  d.name = "blobs";
  d.summary = "two Gaussian blobs (declared by a test)";
  FieldTable<DatasetSpec> keys;
  keys.add(params::integer("features", 6, 1, 64, "dimensions"), &DatasetSpec::synthetic,
           &SyntheticConfig::features);
  d.declare(keys);
  d.input = [](const DatasetSpec& s) { return ModelInput{{s.synthetic.features}, 2, false}; };
  d.train_size = [](const DatasetSpec&) { return std::int64_t{512}; };
  d.load = [](const DatasetSpec& s, std::uint64_t seed) {
    torch::manual_seed(static_cast<std::uint64_t>(seed));
    const auto make = [&s](std::int64_t n) {
      Dataset part;
      part.labels = torch::randint(0, 2, {n}, torch::kInt64);
      part.inputs = torch::randn({n, s.synthetic.features}) +
                    (2 * part.labels.to(torch::kFloat32) - 1).unsqueeze(1);
      part.classes = 2;
      part.sample_shape = {s.synthetic.features};
      return part;
    };
    return DatasetSplit{make(512), make(128)};
  };
  return d;
}

/// Ring all-reduce under another name, with a key of its own.
SchemeInfo tagged_ring_scheme() {
  SchemeInfo s;
  s.name = "tagged_ring";
  s.summary = "ring all-reduce with a tag (declared by a test)";
  s.modes = {SyncMode::kSync};
  s.gradient_buckets = true;
  FieldTable<ProbeSettings> fields;
  fields.add(params::text("tag", "untagged", "a label"), &ProbeSettings::tag);
  s.declare(fields);
  s.collective_modes = {SyncMode::kSync};
  s.collective = [](const CollectiveParts& p, const std::any&) -> std::unique_ptr<Collective> {
    return std::make_unique<RingAllReduce>(p.workers, p.codecs);
  };
  return s;
}

/// Dense float32 under a name of its own, written as CONTRIBUTING.md's codec recipe says: a
/// class deriving from Codec that declares its traits once (the dense wire format, so its
/// payloads add on the ring) and implements what it does.
class PlainCodec : public Codec {
 public:
  PlainCodec() : Codec(plain_traits()) {}
  Bytes encode(const at::Tensor& grad) override { return DenseCodec::encode_dense(grad); }
  at::Tensor decode(ByteSpan payload) const override { return DenseCodec::decode_dense(payload); }
  void accumulate(Bytes& acc, ByteSpan other) const override { dense_.accumulate(acc, other); }

 private:
  static CodecTraits plain_traits() {
    CodecTraits t;
    t.name = "plain";
    t.aggregation = Aggregation::kSummable;
    t.encodes_on_device = true;
    t.loss_tolerance = DenseCodec().traits().loss_tolerance;
    return t;
  }
  DenseCodec dense_;
};

/// plain's one key, bound to the member its factory reads.
struct PlainOptions {
  bool loud = false;
};

CodecInfo plain_codec() {
  return CodecKind<PlainOptions>(
             "plain", "dense float32 under another name (declared by a test)",
             FieldTable<PlainOptions>().add(
                 params::boolean("loud", false, "a key of its own (changes nothing)"),
                 &PlainOptions::loud),
             [](const PlainOptions&, const CodecContext&) -> std::unique_ptr<Codec> {
               return std::make_unique<PlainCodec>();
             })
      .info();
}

/// Declares the test's kinds for the test's lifetime.
class ExtensionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelRegistry::extend().add(linear_probe_model());
    DatasetRegistry::extend().add(blobs_dataset());
    SchemeRegistry::extend().add(tagged_ring_scheme());
    CodecRegistry::extend().add(plain_codec());
  }
  void TearDown() override {
    ModelRegistry::extend().remove("linear_probe");
    DatasetRegistry::extend().remove("blobs");
    SchemeRegistry::extend().remove("tagged_ring");
    CodecRegistry::extend().remove("plain");
  }

  static nlohmann::json scenario(const std::string& scheme, const std::string& codec) {
    return {{"gradwire", 1},
            {"name", "extension"},
            {"seed", 5},
            {"model", {{"kind", "linear_probe"}}},
            {"dataset", {{"kind", "blobs"}, {"features", 8}}},
            {"training", {{"workers", 2}, {"steps", 6}, {"batch", 16}, {"eval_every", 3}}},
            {"compute", {{"mode", "fixed"}, {"seconds", 0.001}, {"threads", 1}}},
            {"codec", {{"kind", codec}}},
            {"topology", {{"kind", scheme}}},
            {"network", {{"rate", "100Mbps"}}}};
  }

};

TEST_F(ExtensionTest, KindsAreListed) {
  EXPECT_NE(model_reference_markdown().find("`linear_probe`"), std::string::npos);
  EXPECT_NE(dataset_reference_markdown().find("`blobs`"), std::string::npos);
  EXPECT_NE(scheme_reference_markdown().find("`tagged_ring`"), std::string::npos);
  EXPECT_NE(scheme_reference_json().dump().find("\"tag\""), std::string::npos);
  const auto kinds = param_named(SchemeRegistry::builtin().common_params(), "kind").choices;
  EXPECT_EQ(kinds.back(), "tagged_ring");
  const auto codecs = CodecRegistry::builtin().names();
  EXPECT_NE(std::find(codecs.begin(), codecs.end(), "plain"), codecs.end());
}

TEST_F(ExtensionTest, KindsAreValidatedThroughTheirDeclarations) {
  auto doc = scenario("tagged_ring", "plain");
  doc["topology"]["tag"] = "blue";
  const Scenario s = load_scenario(doc);
  EXPECT_EQ(s.resolved["topology"]["tag"], "blue");
  EXPECT_EQ(s.resolved["dataset"]["features"], 8);
  EXPECT_EQ(s.topology.settings_as<ProbeSettings>().tag, "blue");
  EXPECT_EQ(load_scenario(s.resolved).resolved, s.resolved);

  const auto path_of_error = [](const nlohmann::json& bad) -> std::string {
    try {
      load_scenario(bad);
    } catch (const ConfigError& e) {
      return e.path();
    }
    return "(loaded)";
  };
  auto wrong_type = doc;
  wrong_type["topology"]["tag"] = 3;
  EXPECT_EQ(path_of_error(wrong_type), "topology.tag");
  auto other_scheme = doc;
  other_scheme["topology"]["kind"] = "ring";
  EXPECT_EQ(path_of_error(other_scheme), "topology.tag");
  auto too_wide = doc;
  too_wide["dataset"]["features"] = 65;
  EXPECT_EQ(path_of_error(too_wide), "dataset.features");
  auto images = doc;
  images["model"]["kind"] = "cnn";  // the blobs are features, not images
  EXPECT_EQ(path_of_error(images), "model.kind");
  auto codec_key = doc;
  codec_key["codec"]["loud"] = true;
  EXPECT_EQ(load_scenario(codec_key).codec.at("loud"), true);
  EXPECT_TRUE(CodecRegistry::builtin().options<PlainOptions>(codec_key["codec"], "codec")->loud);
  codec_key["codec"]["loud"] = "yes";
  EXPECT_EQ(path_of_error(codec_key), "codec.loud");
  auto topk_key = doc;
  topk_key["codec"]["ratio"] = 0.1;  // top-k's key, not plain's
  EXPECT_EQ(path_of_error(topk_key), "codec.ratio");
}

TEST_F(ExtensionTest, KindsRunAsTheBuiltinsTheyImitate) {
  // The declared traits reach the run: a summable codec's payloads are added on the ring, hop
  // by hop, exactly as `none`'s are.
  CodecContext context;
  context.numel = 16;
  const auto plain = CodecRegistry::builtin().create({{"kind", "plain"}}, context);
  EXPECT_EQ(plain->name(), "plain");
  EXPECT_EQ(plain->traits().aggregation, Aggregation::kSummable);
  const RunResult own = Engine(load_scenario(scenario("tagged_ring", "plain"))).run("", nullptr);
  const RunResult builtin = Engine(load_scenario(scenario("ring", "none"))).run("", nullptr);
  EXPECT_EQ(own.summary["steps"], 6);
  EXPECT_GT(own.summary["bytes_on_wire"].get<double>(), 0.0);
  EXPECT_EQ(gradwire::testing::without_wall_times(own.metrics_jsonl), gradwire::testing::without_wall_times(builtin.metrics_jsonl));
}

}  // namespace
}  // namespace gradwire
