// The Transformer: one stack of pre-norm encoder layers behind two front ends (token and
// position embeddings with a causal mask; patch embedding with a class token) and two back
// ends (a decoder at every position; a head on the class token).
#include "nodes/training/zoo/TransformerModel.h"

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "nodes/training/StepRandomness.h"
#include "nodes/training/zoo/EncoderLayer.h"

namespace gradwire {
namespace {

constexpr double kDefaultDropout = 0.1;
constexpr double kEmbeddingStd = 0.02;  // GPT-2's and ViT's initialisation of embeddings

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("transformer: " + message);
}

}  // namespace

struct TransformerModel::Layers {
  bool tokens = false;
  double dropout = 0;
  torch::nn::Embedding token_embedding{nullptr};  // tokens
  torch::nn::Conv2d patch_embedding{nullptr};     // images
  torch::Tensor class_token;                      // images: [1, 1, d_model]
  torch::Tensor position_embedding;               // [1, positions, d_model]
  std::vector<std::shared_ptr<EncoderLayer>> encoder;
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear decoder{nullptr};  // tokens: to the vocabulary; images: to the classes
};

TransformerModel::TransformerModel(const ModelInput& input, const TransformerSettings& config)
    : layers_(std::make_shared<Layers>()) {
  const auto& shape = input.sample_shape;
  const std::int64_t d = config.d_model;
  require(input.tokens ? shape.size() == 1 : shape.size() == 3,
          "needs token sequences ({T}) or images ({C, H, W})");
  for (std::int64_t side : shape) require(side >= 1, "sample dimensions must be at least 1");
  require(input.classes >= 1, "needs at least 1 class or token");
  require(d >= 1, "d_model must be at least 1, got " + std::to_string(d));
  require(config.heads >= 1, "heads must be at least 1, got " + std::to_string(config.heads));
  require(d % config.heads == 0, "heads (" + std::to_string(config.heads) +
                                     ") must divide d_model (" + std::to_string(d) + ")");
  require(config.ff >= 1, "ff must be at least 1, got " + std::to_string(config.ff));
  require(config.layers >= 1, "layers must be at least 1, got " + std::to_string(config.layers));
  const double dropout = config.dropout < 0 ? kDefaultDropout : config.dropout;
  require(dropout < 1, "dropout must be below 1, got " + std::to_string(dropout));

  namespace nn = torch::nn;
  Layers& l = *layers_;
  l.tokens = input.tokens;
  l.dropout = dropout;
  std::int64_t length = 0;  // positions the encoder layers see
  if (input.tokens) {
    length = shape[0];
    l.token_embedding = register_module("token_embedding", nn::Embedding(input.classes, d));
    add_layer_cost("token_embedding", "embedding", 0);  // a table lookup
  } else {
    const std::int64_t channels = shape[0];
    const std::int64_t patch = config.patch;
    require(patch >= 1, "patch must be at least 1, got " + std::to_string(patch));
    require(shape[1] % patch == 0 && shape[2] % patch == 0,
            "image sides " + std::to_string(shape[1]) + "x" + std::to_string(shape[2]) +
                " must be multiples of patch (" + std::to_string(patch) + ")");
    const std::int64_t patches = (shape[1] / patch) * (shape[2] / patch);
    length = patches + 1;
    l.patch_embedding = register_module(
        "patch_embedding", nn::Conv2d(nn::Conv2dOptions(channels, d, patch).stride(patch)));
    l.class_token = register_parameter("class_token", torch::zeros({1, 1, d}));
    add_layer_cost("patch_embedding", "conv", 2 * patches * d * channels * patch * patch);
  }
  l.position_embedding = register_parameter("position_embedding", torch::empty({1, length, d}));

  auto encoder = register_module("layers", nn::ModuleList());
  for (std::int64_t i = 0; i < config.layers; ++i) {
    l.encoder.push_back(std::make_shared<EncoderLayer>(d, config.heads, config.ff, dropout));
    encoder->push_back(l.encoder.back());
    const std::string name = "layers." + std::to_string(i);
    // Q, K, V and output projections; then scores Q K^T and their weighted sum of V.
    add_layer_cost(name + ".attention", "attention",
                   2 * length * 4 * d * d + 2 * 2 * length * length * d);
    add_layer_cost(name + ".feed_forward", "linear", 2 * 2 * length * d * config.ff);
  }
  l.norm = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({d})));
  if (input.tokens) {
    l.decoder = register_module("decoder", nn::Linear(d, input.classes));
    add_layer_cost("decoder", "linear", 2 * length * d * input.classes);
  } else {
    l.decoder = register_module("head", nn::Linear(d, input.classes));
    add_layer_cost("head", "linear", 2 * d * input.classes);
  }

  torch::NoGradGuard no_grad;
  nn::init::normal_(l.position_embedding, 0.0, kEmbeddingStd);
  if (input.tokens) nn::init::normal_(l.token_embedding->weight, 0.0, kEmbeddingStd);
}

torch::Tensor TransformerModel::forward(torch::Tensor x) {
  Layers& l = *layers_;
  torch::Tensor h;
  torch::Tensor mask;
  if (l.tokens) {
    // Shorter sequences than the model was built for use the first positions.
    const std::int64_t length = x.size(1);
    h = l.token_embedding->forward(x) + l.position_embedding.narrow(1, 0, length);
    // Additive causal mask, -inf above the diagonal: position i attends to positions <= i.
    // Made per call (L x L, negligible) so it follows the model's dtype and device.
    mask = torch::full({length, length}, -std::numeric_limits<double>::infinity(), h.options())
               .triu(1);
  } else {
    h = l.patch_embedding->forward(x).flatten(2).transpose(1, 2);  // [batch, patches, d]
    h = torch::cat({l.class_token.expand({h.size(0), 1, h.size(2)}), h}, 1) +
        l.position_embedding;
  }
  h = StepRandomness::dropout(h, l.dropout, is_training());
  for (const auto& layer : l.encoder) h = layer->forward(h, mask);
  h = l.norm->forward(h);
  // ATen's fused linear; see EncoderLayer.cpp for why not LinearImpl::forward.
  return torch::linear(l.tokens ? h : h.select(1, 0), l.decoder->weight, l.decoder->bias);
}

}  // namespace gradwire
