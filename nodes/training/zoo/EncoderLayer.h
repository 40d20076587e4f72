// One pre-norm Transformer encoder layer (as torch.nn.TransformerEncoderLayer with
// norm_first=True, activation="gelu"): x + attention(LayerNorm(x)), then
// x + Linear(GELU(Linear(LayerNorm(x)))), with dropout on the attention weights, after the GELU
// and on both residual branches.
#pragma once

#include <cstdint>
#include <memory>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace torch {
namespace nn {
class LayerNormImpl;  // defined in <torch/nn/modules/normalization.h>; only EncoderLayer.cpp
class LinearImpl;     // needs them whole
}  // namespace nn
}  // namespace torch

namespace gradwire {

class EncoderLayer : public torch::nn::Module {
 public:
  /// Throws std::invalid_argument unless all sizes are at least 1 and `heads` divides
  /// `d_model`, and 0 <= dropout < 1.
  EncoderLayer(std::int64_t d_model, std::int64_t heads, std::int64_t ff, double dropout);

  /// `x`: [batch, L, d_model]; `mask`: additive [L, L] attention mask (-inf where a position
  /// may not look), or undefined for full attention. Returns [batch, L, d_model].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask = {});

 private:
  std::int64_t d_model_;
  std::int64_t heads_;
  double dropout_;
  std::shared_ptr<torch::nn::LayerNormImpl> attention_norm_;
  std::shared_ptr<torch::nn::LinearImpl> in_proj_;  // queries, keys and values in one matrix
  std::shared_ptr<torch::nn::LinearImpl> out_proj_;
  std::shared_ptr<torch::nn::LayerNormImpl> feed_forward_norm_;
  std::shared_ptr<torch::nn::LinearImpl> linear1_;
  std::shared_ptr<torch::nn::LinearImpl> linear2_;
};

}  // namespace gradwire
