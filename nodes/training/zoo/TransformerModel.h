// A small Transformer encoder (Vaswani et al. 2017; pre-norm layers): on token sequences a
// causal language model (token and learned position embeddings, masked self-attention, a
// linear decoder to the vocabulary); on images a classifier in the manner of ViT (Dosovitskiy
// et al. 2021): non-overlapping patches embedded by one strided convolution, a class token,
// learned position embeddings, and a linear head on the class token.
#pragma once

#include <cstdint>
#include <memory>

#include "nodes/training/Model.h"

namespace gradwire {

/// The `transformer` model's keys: model width, attention heads, feed-forward width, layers,
/// dropout, and the patch side that turns an image into a sequence.
struct TransformerSettings {
  std::int64_t d_model = 128;
  std::int64_t heads = 4;
  std::int64_t ff = 512;
  std::int64_t layers = 2;
  double dropout = -1;  ///< < 0: the model's default, 0.1
  std::int64_t patch = 4;
};

class TransformerModel : public Model {
 public:
  /// `input`: token sequences ({T}, language model) or images ({C, H, W}, classifier whose H
  /// and W are multiples of config.patch). Sizes from `config`: d_model, heads (dividing
  /// d_model), ff, layers, dropout (< 0: 0.1), patch. Throws std::invalid_argument otherwise.
  TransformerModel(const ModelInput& input, const TransformerSettings& config);

  /// Tokens: int64 [batch, T] -> [batch, T, vocabulary]; images: [batch, C, H, W] ->
  /// [batch, classes].
  torch::Tensor forward(torch::Tensor x) override;

 private:
  struct Layers;
  std::shared_ptr<Layers> layers_;
};

}  // namespace gradwire
