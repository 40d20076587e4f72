// The LSTM language model: the architecture and initialisation of Zaremba et al.'s PTB model as
// PyTorch's word_language_model example builds it, so gradwire's numbers compare with theirs.
#include "nodes/training/zoo/LstmLanguageModel.h"

#include <stdexcept>
#include <string>
#include <tuple>

#include <ATen/ATen.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/rnn.h>

#include "nodes/training/StepRandomness.h"

namespace gradwire {
namespace {

constexpr double kDefaultDropout = 0.5;
constexpr double kInitRange = 0.1;  // uniform(-0.1, 0.1) for the embedding and the decoder

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("lstm_lm: " + message);
}

}  // namespace

struct LstmLanguageModel::Layers {
  torch::nn::Embedding embedding{nullptr};
  torch::nn::LSTM lstm{nullptr};
  // Tied: the embedding's weight itself, registered once (under "embedding"), so optimisers,
  // gradient exchange and parameter counts see it once.
  torch::Tensor decoder_weight;
  torch::Tensor decoder_bias;
  // Per stacked layer: the LSTM's w_ih, w_hh, b_ih, b_hh (the module's own parameters).
  std::vector<std::vector<torch::Tensor>> layer_weights;
  double dropout = 0;
};

LstmLanguageModel::LstmLanguageModel(const ModelInput& input,
                                     const LstmLanguageModelSettings& config)
    : layers_(std::make_shared<Layers>()) {
  require(input.tokens && input.sample_shape.size() == 1,
          "needs token sequences (sample shape {T})");
  const std::int64_t steps = input.sample_shape[0];
  const std::int64_t vocab = input.classes;
  const std::int64_t embedding = config.embedding;
  const std::int64_t hidden = config.hidden_size;
  require(steps >= 1, "sequences must have at least 1 token");
  require(vocab >= 1, "the vocabulary must have at least 1 token");
  require(embedding >= 1, "embedding must be at least 1, got " + std::to_string(embedding));
  require(hidden >= 1, "hidden_size must be at least 1, got " + std::to_string(hidden));
  require(config.layers >= 1, "layers must be at least 1, got " + std::to_string(config.layers));
  const double dropout = config.dropout < 0 ? kDefaultDropout : config.dropout;
  require(dropout < 1, "dropout must be below 1, got " + std::to_string(dropout));
  require(!config.tied || embedding == hidden,
          "tied weights need embedding == hidden_size (the decoder reuses the embedding's "
          "vocabulary x embedding matrix), got " + std::to_string(embedding) + " and " +
              std::to_string(hidden));

  namespace nn = torch::nn;
  Layers& l = *layers_;
  l.dropout = dropout;
  l.embedding = register_module("embedding", nn::Embedding(vocab, embedding));
  // Dropout between stacked layers (PyTorch's LSTM option) is applied in forward, layer by
  // layer, so its masks come from the step's generator (StepRandomness.h); the module holds
  // the parameters, named and initialised as PyTorch's.
  l.lstm = register_module(
      "lstm",
      nn::LSTM(nn::LSTMOptions(embedding, hidden).num_layers(config.layers).batch_first(true)));
  {
    const auto named = l.lstm->named_parameters(false);
    for (std::int64_t i = 0; i < config.layers; ++i) {
      const std::string n = std::to_string(i);
      l.layer_weights.push_back({named["weight_ih_l" + n], named["weight_hh_l" + n],
                                 named["bias_ih_l" + n], named["bias_hh_l" + n]});
    }
  }
  auto decoder = register_module("decoder", std::make_shared<nn::Module>());
  l.decoder_bias = decoder->register_parameter("bias", torch::zeros({vocab}));
  {
    torch::NoGradGuard no_grad;
    l.embedding->weight.uniform_(-kInitRange, kInitRange);
    if (config.tied) {
      l.decoder_weight = l.embedding->weight;
    } else {
      l.decoder_weight = decoder->register_parameter(
          "weight", torch::empty({vocab, hidden}).uniform_(-kInitRange, kInitRange));
    }
  }

  add_layer_cost("embedding", "embedding", 0);  // a table lookup
  for (std::int64_t i = 0; i < config.layers; ++i) {
    const std::int64_t in = i == 0 ? embedding : hidden;
    // Four gates, each an input and a recurrent matrix-vector product per time step.
    add_layer_cost("lstm.l" + std::to_string(i), "lstm", 2 * steps * 4 * hidden * (in + hidden));
  }
  add_layer_cost("decoder", "linear", 2 * steps * hidden * vocab);
}

torch::Tensor LstmLanguageModel::forward(torch::Tensor x) {
  Layers& l = *layers_;
  // No state passed: every sequence starts from zeros (see the header).
  const bool training = is_training();
  torch::Tensor h = StepRandomness::dropout(l.embedding->forward(x), l.dropout, training);
  // Time-major through the stack, as ATen's multi-layer LSTM runs it: one layer at a time,
  // dropout on every layer's output but the last's.
  h = h.transpose(0, 1);
  const std::int64_t batch = h.size(1);
  for (std::size_t i = 0; i < l.layer_weights.size(); ++i) {
    const auto& w = l.layer_weights[i];
    const torch::Tensor zero = at::zeros({1, batch, w[1].size(1)}, h.options());
    h = std::get<0>(at::lstm(h, {zero, zero}, w, /*has_biases=*/true, /*num_layers=*/1,
                             /*dropout=*/0.0, training, /*bidirectional=*/false,
                             /*batch_first=*/false));
    if (i + 1 < l.layer_weights.size()) h = StepRandomness::dropout(h, l.dropout, training);
  }
  // Back to batch-first, made contiguous so the decoder runs as one fused addmm (bias
  // included) instead of a matmul with a copy and a separate bias add.
  h = h.transpose(0, 1).contiguous();
  h = StepRandomness::dropout(h, l.dropout, training);
  return torch::linear(h, l.decoder_weight, l.decoder_bias);
}

}  // namespace gradwire
