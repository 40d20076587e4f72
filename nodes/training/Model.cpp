// make_model: the one place that turns a scenario's model section into a network.
#include "nodes/training/Model.h"

#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>

#include "nodes/training/LeNet.h"
#include "nodes/training/Mlp.h"
#include "nodes/training/ModelRegistry.h"
#include "nodes/training/TorchScriptModel.h"
#include "nodes/training/zoo/LstmLanguageModel.h"
#include "nodes/training/zoo/MobileNetV2.h"
#include "nodes/training/zoo/ResNet18.h"
#include "nodes/training/zoo/ResNetCifar.h"
#include "nodes/training/zoo/TransformerModel.h"
#include "nodes/training/zoo/Vgg16.h"

namespace gradwire {

std::int64_t Model::forward_flops_per_sample() const {
  std::int64_t total = 0;
  for (const LayerCost& layer : layer_costs_) total += layer.flops;
  return total;
}

void Model::add_layer_cost(std::string name, std::string kind, std::int64_t flops) {
  layer_costs_.push_back(LayerCost{std::move(name), std::move(kind), flops});
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out;
  for (std::int64_t d : shape) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return "[" + out + "]";
}

namespace {

void require_images(const ModelConfig& config, const ModelInput& input) {
  if (input.tokens || input.sample_shape.size() != 3) {
    throw std::invalid_argument(
        "model kind \"" + config.kind + "\" needs image samples shaped {C, H, W}; this "
        "dataset's samples are " + (input.tokens ? "token sequences " : "") +
        shape_text(input.sample_shape) + " (use \"mlp\" for features, \"lstm_lm\" or "
        "\"transformer\" for text)");
  }
}

}  // namespace

std::shared_ptr<Model> make_model(const ModelConfig& config, const ModelInput& input) {
  const auto& shape = input.sample_shape;
  if (shape.empty()) throw std::invalid_argument("model: sample shape is empty");
  if (config.kind == "lstm_lm") {
    if (!input.tokens) {
      throw std::invalid_argument("model kind \"lstm_lm\" is a language model and needs token "
                                  "sequences (dataset kind \"text\", or \"synthetic\" with "
                                  "\"vocab\"); this dataset's samples are " +
                                  shape_text(shape));
    }
    return std::make_shared<LstmLanguageModel>(input, config);
  }
  if (config.kind == "transformer") {
    if (!input.tokens) require_images(config, input);
    return std::make_shared<TransformerModel>(input, config);
  }
  if (input.tokens) {
    throw std::invalid_argument("model kind \"" + config.kind + "\" does not read token "
                                "sequences; use \"lstm_lm\" or \"transformer\" for text");
  }
  if (config.kind == "mlp") {
    // An MLP sees every sample flattened, so images work too.
    for (std::int64_t d : shape) {
      if (d < 1) throw std::invalid_argument("mlp: sample dimensions must be at least 1");
    }
    const std::int64_t features =
        std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
    return std::make_shared<Mlp>(features, config.hidden, input.classes);
  }
  if (config.kind == "torchscript") {
    return std::make_shared<TorchScriptModel>(config.path, shape, input.classes);
  }
  if (config.kind == "cnn" && shape.size() != 3) {
    throw std::invalid_argument(
        "model kind \"cnn\" needs image samples shaped {C, H, W}; this dataset's samples "
        "have " + std::to_string(shape.size()) + " dimension(s) (use \"mlp\")");
  }
  if (config.kind == "cnn") return std::make_shared<LeNet>(shape, input.classes, config);
  if (config.kind == "resnet20" || config.kind == "resnet56") {
    require_images(config, input);
    return std::make_shared<ResNetCifar>(config.kind == "resnet20" ? 20 : 56, input);
  }
  if (config.kind == "resnet18") {
    require_images(config, input);
    return std::make_shared<ResNet18>(input);
  }
  if (config.kind == "vgg16") {
    require_images(config, input);
    return std::make_shared<Vgg16>(input);
  }
  if (config.kind == "mobilenetv2") {
    require_images(config, input);
    return std::make_shared<MobileNetV2>(input, config.width);
  }
  throw std::invalid_argument("unknown model kind \"" + config.kind + "\" (expected one of " +
                              join_names(ModelRegistry::builtin().kinds()) + ")");
}

std::shared_ptr<Model> make_model(const ModelConfig& config,
                                  const std::vector<std::int64_t>& sample_shape,
                                  std::int64_t classes) {
  return make_model(config, ModelInput{sample_shape, classes, false});
}

}  // namespace gradwire
