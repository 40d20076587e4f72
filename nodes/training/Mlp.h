// A multilayer perceptron: the smallest model gradwire trains, used for synthetic tasks and as a
// cheap stand-in when a study is about the network rather than the model.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nodes/training/Model.h"

namespace torch {
namespace nn {
class LinearImpl;  // defined in <torch/nn/modules/linear.h>; only Mlp.cpp needs it whole
}  // namespace nn
}  // namespace torch

namespace gradwire {

/// Flattens each sample, then Linear -> ReLU -> ... -> Linear(classes). No ReLU after the last
/// layer: the outputs are logits for cross-entropy. Layer costs: 2 x in x out per Linear
/// layer; biases and ReLUs are not counted.
/// The `mlp` model's keys.
struct MlpSettings {
  std::vector<std::int64_t> hidden = {256, 128};  ///< hidden layer widths; empty: softmax regression
};

class Mlp : public Model {
 public:
  /// `inputs` = features per flattened sample; `hidden` = widths of the hidden layers (may be
  /// empty: plain softmax regression). Throws std::invalid_argument on a non-positive width.
  Mlp(std::int64_t inputs, const std::vector<std::int64_t>& hidden, std::int64_t classes);

  /// `x`: [batch, ...] whose trailing dimensions multiply to `inputs`; returns [batch, classes].
  torch::Tensor forward(torch::Tensor x) override;

 private:
  std::vector<std::shared_ptr<torch::nn::LinearImpl>> layers_;
};

}  // namespace gradwire
