// The models gradwire trains. Every model maps a batch of samples to logits (class logits
// [batch, classes], or next-token logits [batch, time, vocabulary] for language models) and
// states its forward cost layer by layer, which compute profiles turn into simulated seconds.
#pragma once

#include <any>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace gradwire {

/// Forward cost of one layer on one sample (a sample is one image, one feature vector, or one
/// sequence of tokens), in the order the forward pass runs the layers.
struct LayerCost {
  std::string name;        ///< the layer's module name, e.g. "layer1.0.conv1"
  std::string kind;        ///< "conv", "linear", "batchnorm", "lstm", "attention", ...
  std::int64_t flops = 0;  ///< 2 x multiply-accumulates (2 per element for normalisation)
};

class Model : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  /// Forward FLOPs of one sample: the sum of layer_costs() unless a model states a total only.
  virtual std::int64_t forward_flops_per_sample() const;
  /// Per-layer forward FLOPs in forward order; empty when the model only knows its total.
  const std::vector<LayerCost>& layer_costs() const { return layer_costs_; }
  /// True when forward may draw from LibTorch's global generator instead of the step's
  /// (StepRandomness.h): such a model's steps must run one after another, in the order the
  /// workers started them, to repeat. gradwire's own models draw only from the step's
  /// generator.
  virtual bool draws_from_global_generator() const { return false; }

 protected:
  /// Records one layer's forward cost; call in forward order while building the model.
  void add_layer_cost(std::string name, std::string kind, std::int64_t flops);

 private:
  std::vector<LayerCost> layer_costs_;
};

/// A scenario's `model`: its kind, and the kind's settings (each kind's options struct, read
/// from its keys by its declaration in nodes/training/ModelRegistry.h: LeNetSettings for
/// "cnn", MlpSettings for "mlp", ...). A kind's keys are known only to its declaration and its
/// settings, so a new model adds nothing here.
struct ModelConfig {
  std::string kind = "cnn";  ///< a ModelRegistry name
  std::any settings;         ///< the kind's settings; empty: the kind's defaults

  /// The kind's settings (its defaults when none were read, as for a config made in code).
  template <typename Settings>
  const Settings& settings_as() const {
    if (!settings.has_value()) {
      static const Settings kDefaults{};
      return kDefaults;
    }
    return std::any_cast<const Settings&>(settings);
  }
  /// The kind's settings to fill in code (its defaults first when none are set).
  template <typename Settings>
  Settings& edit_settings() {
    if (!settings.has_value()) settings = Settings{};
    return std::any_cast<Settings&>(settings);
  }
};

/// What a model is built for: one sample's shape and the number of outputs per prediction.
struct ModelInput {
  std::vector<std::int64_t> sample_shape;  ///< {C,H,W} images, {F} features, {T} token sequences
  std::int64_t classes = 0;                ///< classes, or the vocabulary size for tokens
  bool tokens = false;                     ///< samples are int64 token ids (language modelling)
};

/// "[3, 32, 32]": a sample shape as messages show it.
std::string shape_text(const std::vector<std::int64_t>& shape);

/// Builds `config.kind` for `input`. Throws std::invalid_argument when the kind does not fit
/// the data (an image model on features, a language model on images, ...). Parameters are
/// initialised from the current torch RNG state; a torchscript model keeps the weights stored
/// in its file (ModelFileError when the file cannot be used).
std::shared_ptr<Model> make_model(const ModelConfig& config, const ModelInput& input);

/// Classification data (not tokens): kept for the many callers that build image/feature models.
std::shared_ptr<Model> make_model(const ModelConfig& config,
                                  const std::vector<std::int64_t>& sample_shape,
                                  std::int64_t classes);

}  // namespace gradwire
