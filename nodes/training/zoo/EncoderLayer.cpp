// Multi-head self-attention written with plain batched matrix products (the computation
// torch.nn.MultiheadAttention performs in training), so the forward and backward run the same
// kernels as the PyTorch model gradwire's timings are compared with.
#include "nodes/training/zoo/EncoderLayer.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/nn/init.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "nodes/training/StepRandomness.h"

namespace gradwire {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("transformer: " + message);
}

/// ATen's linear rather than LinearImpl::forward: the C++ module's functional linear turns a
/// [batch, L, d] input into a matmul and a separate bias add, where ATen (as PyTorch calls it)
/// runs one fused addmm, whose backward is faster too.
torch::Tensor fused_linear(const torch::nn::LinearImpl& layer, const torch::Tensor& x) {
  return torch::linear(x, layer.weight, layer.bias);
}

}  // namespace

EncoderLayer::EncoderLayer(std::int64_t d_model, std::int64_t heads, std::int64_t ff,
                           double dropout)
    : d_model_(d_model), heads_(heads), dropout_(dropout) {
  require(d_model >= 1, "d_model must be at least 1, got " + std::to_string(d_model));
  require(heads >= 1, "heads must be at least 1, got " + std::to_string(heads));
  require(d_model % heads == 0, "heads (" + std::to_string(heads) + ") must divide d_model (" +
                                    std::to_string(d_model) + ")");
  require(ff >= 1, "ff must be at least 1, got " + std::to_string(ff));
  require(dropout >= 0 && dropout < 1, "dropout must be in [0, 1), got " + std::to_string(dropout));

  namespace nn = torch::nn;
  const auto norm = [&] {
    return std::make_shared<nn::LayerNormImpl>(nn::LayerNormOptions({d_model}));
  };
  attention_norm_ = register_module("attention_norm", norm());
  in_proj_ = register_module("in_proj", std::make_shared<nn::LinearImpl>(d_model, 3 * d_model));
  out_proj_ = register_module("out_proj", std::make_shared<nn::LinearImpl>(d_model, d_model));
  feed_forward_norm_ = register_module("feed_forward_norm", norm());
  linear1_ = register_module("linear1", std::make_shared<nn::LinearImpl>(d_model, ff));
  linear2_ = register_module("linear2", std::make_shared<nn::LinearImpl>(ff, d_model));

  // torch.nn.MultiheadAttention's initialisation: Xavier for the packed projections, zero
  // biases; the feed-forward layers keep Linear's default.
  torch::NoGradGuard no_grad;
  nn::init::xavier_uniform_(in_proj_->weight);
  in_proj_->bias.zero_();
  out_proj_->bias.zero_();
}

torch::Tensor EncoderLayer::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const std::int64_t batch = x.size(0);
  const std::int64_t length = x.size(1);
  const std::int64_t head_dim = d_model_ / heads_;
  const bool training = is_training();

  // [batch, L, 3d] -> [3, batch * heads, L, head_dim] in one copy, then q, k, v are views.
  const torch::Tensor qkv = fused_linear(*in_proj_, attention_norm_->forward(x))
                                .view({batch, length, 3, heads_, head_dim})
                                .permute({2, 0, 3, 1, 4})
                                .reshape({3, batch * heads_, length, head_dim});
  const torch::Tensor q = qkv[0];
  const torch::Tensor k_t = qkv[1].transpose(1, 2);
  const torch::Tensor v = qkv[2];
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  torch::Tensor scores = mask.defined()
                             ? torch::baddbmm(mask, q, k_t, /*beta=*/1.0, /*alpha=*/scale)
                             : torch::bmm(q, k_t).mul_(scale);
  scores = StepRandomness::dropout(torch::softmax(scores, -1), dropout_, training);
  const torch::Tensor attended = torch::bmm(scores, v)
                                     .view({batch, heads_, length, head_dim})
                                     .transpose(1, 2)
                                     .reshape({batch, length, d_model_});
  torch::Tensor out =
      x + StepRandomness::dropout(fused_linear(*out_proj_, attended), dropout_, training);

  torch::Tensor h = torch::gelu(fused_linear(*linear1_, feed_forward_norm_->forward(out)));
  h = fused_linear(*linear2_, StepRandomness::dropout(h, dropout_, training));
  return out + StepRandomness::dropout(h, dropout_, training);
}

}  // namespace gradwire
