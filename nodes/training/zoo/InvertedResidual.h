// The inverted residual block of MobileNetV2 (Sandler et al. 2018): a 1x1 expansion with
// ReLU6, a depthwise 3x3 convolution with ReLU6, and a linear 1x1 projection, each followed by
// batch norm; the input is added back when the block keeps the shape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodes/training/Model.h"

namespace torch {
namespace nn {
class Conv2dImpl;       // defined in <torch/nn/modules/conv.h>; only the .cpp needs them whole
class BatchNorm2dImpl;  // defined in <torch/nn/modules/batchnorm.h>
class SequentialImpl;   // defined in <torch/nn/modules/container/sequential.h>
}  // namespace nn
}  // namespace torch

namespace gradwire {

/// Named as torchvision's InvertedResidual: one child "conv" holding "0" (expansion, absent when
/// expand_ratio is 1), then the depthwise convolution, the projection and its batch norm.
class InvertedResidual : public torch::nn::Module {
 public:
  /// Throws std::invalid_argument for sizes below 1.
  InvertedResidual(std::int64_t in, std::int64_t out, std::int64_t stride,
                   std::int64_t expand_ratio);

  /// `x`: [batch, in, H, W]; returns [batch, out, ceil(H / stride), ceil(W / stride)].
  torch::Tensor forward(torch::Tensor x);

  /// Forward costs of one sample of `height` x `width`, in forward order, named under `prefix`
  /// (the block's module path, e.g. "features.2").
  std::vector<LayerCost> costs(const std::string& prefix, std::int64_t height,
                               std::int64_t width) const;

 private:
  std::int64_t in_;
  std::int64_t out_;
  std::int64_t stride_;
  std::int64_t hidden_;
  std::shared_ptr<torch::nn::SequentialImpl> expand_;  // null when expand_ratio is 1
  std::shared_ptr<torch::nn::SequentialImpl> depthwise_;
  std::shared_ptr<torch::nn::Conv2dImpl> project_;
  std::shared_ptr<torch::nn::BatchNorm2dImpl> project_bn_;
  bool residual_ = false;
};

}  // namespace gradwire
