// Every model kind's keys and defaults. The defaults here are the ones ModelConfig carries, so
// a scenario that names only the kind gets the architecture its paper describes.
#include "nodes/training/ModelRegistry.h"

#include <algorithm>

#include "nodes/training/Model.h"

namespace gradwire {

namespace {

std::vector<ModelInfo> declare() {
  using namespace params;
  const ModelConfig d;
  auto dropout = [](const std::string& model_default) {
    return derived(number("dropout", -1, -1, 1,
                          "dropout probability; < 0 takes the model's default"),
                   model_default);
  };
  return {
      {"cnn", "LeNet-5-like convolutional network: two 5x5 convolutions with pooling, three "
              "linear layers", ModelData::kImages, "LeCun et al. 1998",
       {integer("conv1", d.conv1, 1, 1024, "channels of the first convolution"),
        integer("conv2", d.conv2, 1, 1024, "channels of the second convolution"),
        integer("fc1", d.fc1, 1, 65536, "width of the first linear layer"),
        integer("fc2", d.fc2, 1, 65536, "width of the second linear layer")}},
      {"mlp", "multilayer perceptron over flattened samples", ModelData::kAny, "",
       {derived(list("hidden", "hidden layer widths; [] is softmax regression"), "[256, 128]")}},
      {"resnet20", "CIFAR ResNet-20: 3 stages x 3 basic blocks, 16-64 channels, identity "
                   "shortcuts (0.27M parameters)", ModelData::kImages,
       "He et al. 2016, section 4.2", {}},
      {"resnet56", "CIFAR ResNet-56: 3 stages x 9 basic blocks (0.85M parameters)",
       ModelData::kImages, "He et al. 2016, section 4.2", {}},
      {"resnet18", "ResNet-18 with a 3x3 stem and no max pool, as CIFAR studies use it "
                   "(11.2M parameters)", ModelData::kImages, "He et al. 2016", {}},
      {"vgg16", "VGG-16 with batch normalisation and one linear classifier, as CIFAR studies "
                "use it (14.7M parameters)", ModelData::kImages,
       "Simonyan & Zisserman 2015", {}},
      {"mobilenetv2", "MobileNetV2: inverted residuals with depthwise convolutions, stride 1 "
                      "in the stem and second stage for small images (2.2M parameters)",
       ModelData::kImages, "Sandler et al. 2018",
       {number("width", d.width, 0, 4, "width multiplier of every layer", true)}},
      {"lstm_lm", "word-level LSTM language model: embedding, stacked LSTM, linear decoder",
       ModelData::kTokens, "Zaremba et al. 2014; the PTB model of Lin et al. 2018 (DGC)",
       {integer("embedding", d.embedding, 1, 65536, "embedding size"),
        integer("hidden_size", d.hidden_size, 1, 65536,
                "LSTM hidden size (650: PTB medium; DGC's PTB model: 1500)"),
        integer("layers", d.layers, 1, 64, "stacked LSTM layers"),
        dropout("0.5"),
        boolean("tied", d.tied, "the decoder shares the embedding's weights (needs "
                                "embedding = hidden_size)")}},
      {"transformer", "pre-norm Transformer encoder: a causal language model on tokens, a "
                      "ViT-style classifier on image patches", ModelData::kTokensOrImages,
       "Vaswani et al. 2017; Dosovitskiy et al. 2021",
       {integer("d_model", d.d_model, 1, 65536, "model width"),
        integer("heads", d.heads, 1, 1024, "attention heads (must divide d_model)"),
        integer("ff", d.ff, 1, 262144, "feed-forward width"),
        integer("layers", d.layers, 1, 64, "encoder layers"),
        dropout("0.1"),
        integer("patch", d.patch, 1, 1024, "images: side of the square patches (must divide "
                                           "the image's height and width)")}},
      {"torchscript", "any PyTorch model exported to TorchScript (scripts/export-model)",
       ModelData::kFromFile, "",
       {text("path", "", "the exported .pt file (required)")}},
  };
}

}  // namespace

ModelRegistry::ModelRegistry() : models_(declare()) {}

const ModelRegistry& ModelRegistry::builtin() {
  static const ModelRegistry registry;
  return registry;
}

const ModelInfo* ModelRegistry::find(const std::string& kind) const {
  const auto it = std::find_if(models_.begin(), models_.end(),
                               [&kind](const ModelInfo& m) { return m.kind == kind; });
  return it == models_.end() ? nullptr : &*it;
}

std::vector<std::string> ModelRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto& m : models_) out.push_back(m.kind);
  return out;
}

std::string model_data_text(ModelData data) {
  switch (data) {
    case ModelData::kAny: return "features or images";
    case ModelData::kImages: return "images";
    case ModelData::kTokens: return "tokens";
    case ModelData::kTokensOrImages: return "tokens or images";
    case ModelData::kFromFile: return "as exported";
  }
  return "";
}

std::string model_reference_markdown() {
  const ModelRegistry& r = ModelRegistry::builtin();
  std::string out = "| kind | data | architecture | source |\n|---|---|---|---|\n";
  for (const auto& m : r.list()) {
    out += "| `" + m.kind + "` | " + model_data_text(m.data) + " | " + m.summary + " | " +
           m.reference + " |\n";
  }
  for (const auto& m : r.list()) {
    if (m.params.empty()) continue;
    out += "\n### `" + m.kind + "`\n\n" + param_table_markdown(m.params);
  }
  return out;
}

nlohmann::json model_reference_json() {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& m : ModelRegistry::builtin().list()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : m.params) params.push_back(p.to_json());
    all.push_back({{"kind", m.kind},
                   {"summary", m.summary},
                   {"data", model_data_text(m.data)},
                   {"reference", m.reference},
                   {"params", params}});
  }
  return all;
}

}  // namespace gradwire
