// A LeNet-5-like convolutional network (LeCun et al. 1998), the usual small image model of
// gradient-compression studies on (Fashion-)MNIST.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nodes/training/Model.h"

namespace torch {
namespace nn {
class Conv2dImpl;  // defined in <torch/nn/modules/conv.h>; only LeNet.cpp needs them whole
class LinearImpl;  // defined in <torch/nn/modules/linear.h>
}  // namespace nn
}  // namespace torch

namespace gradwire {

/// The `cnn` model's keys: channels of its two convolutions and widths of its first two linear
/// layers (LeNet-5's).
struct LeNetSettings {
  std::int64_t conv1 = 6;
  std::int64_t conv2 = 16;
  std::int64_t fc1 = 120;
  std::int64_t fc2 = 84;
};

/// conv(C -> conv1, 5x5, padding 2) -> ReLU -> maxpool 2
/// -> conv(conv1 -> conv2, 5x5) -> ReLU -> maxpool 2
/// -> fc(conv2 x h x w -> fc1) -> ReLU -> fc(fc1 -> fc2) -> ReLU -> fc(fc2 -> classes).
/// h x w is derived from the input shape (5 x 5 for 28 x 28 inputs). Layer costs: 2 x
/// multiply-accumulates of the two convolutions and three fully connected layers; biases,
/// ReLUs and pooling are not counted.
class LeNet : public Model {
 public:
  /// `sample_shape` = {C, H, W}; widths come from config.conv1, conv2, fc1, fc2. Throws
  /// std::invalid_argument for a shape that is not {C, H, W}, images too small to survive both
  /// convolutions and pools (H or W < 12), or non-positive widths.
  LeNet(const std::vector<std::int64_t>& sample_shape, std::int64_t classes,
        const LeNetSettings& config);

  /// `x`: [batch, C, H, W]; returns [batch, classes] logits.
  torch::Tensor forward(torch::Tensor x) override;

 private:
  std::shared_ptr<torch::nn::Conv2dImpl> conv1_;
  std::shared_ptr<torch::nn::Conv2dImpl> conv2_;
  std::shared_ptr<torch::nn::LinearImpl> fc1_;
  std::shared_ptr<torch::nn::LinearImpl> fc2_;
  std::shared_ptr<torch::nn::LinearImpl> fc3_;
};

}  // namespace gradwire
