// The basic residual block of He et al. 2016: two 3x3 convolutions, each followed by batch
// norm, added to a shortcut of the block's input, then ReLU. The ResNets of the zoo differ only
// in the shortcut they use where the block changes the image's shape.
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
}  // namespace nn
}  // namespace torch

namespace gradwire {

/// How a block whose stride or width changes the shape carries its input to the sum.
enum class Shortcut {
  /// Option A of He et al.: subsample with the stride and zero-pad the new channels; no
  /// parameters (the CIFAR ResNets).
  kZeroPad,
  /// Option B: 1x1 convolution with the stride, then batch norm, registered as "downsample"
  /// with children "0" and "1" as torchvision names them (ResNet-18).
  kProjection,
};

class BasicBlock : public torch::nn::Module {
 public:
  /// Throws std::invalid_argument for sizes below 1, or a zero-padded shortcut that would have
  /// to drop channels (out < in).
  BasicBlock(std::int64_t in, std::int64_t out, std::int64_t stride, Shortcut shortcut);

  /// `x`: [batch, in, H, W]; returns [batch, out, ceil(H / stride), ceil(W / stride)].
  torch::Tensor forward(torch::Tensor x);

  /// Forward costs of one sample of `height` x `width`, in forward order, named under `prefix`
  /// (the block's module path, e.g. "layer1.0").
  std::vector<LayerCost> costs(const std::string& prefix, std::int64_t height,
                               std::int64_t width) const;

  std::int64_t stride() const { return stride_; }

 private:
  std::int64_t in_;
  std::int64_t out_;
  std::int64_t stride_;
  std::shared_ptr<torch::nn::Conv2dImpl> conv1_;
  std::shared_ptr<torch::nn::BatchNorm2dImpl> bn1_;
  std::shared_ptr<torch::nn::Conv2dImpl> conv2_;
  std::shared_ptr<torch::nn::BatchNorm2dImpl> bn2_;
  /// Projection shortcut only (null otherwise).
  std::shared_ptr<torch::nn::Conv2dImpl> shortcut_conv_;
  std::shared_ptr<torch::nn::BatchNorm2dImpl> shortcut_bn_;
  /// Zero-padded shortcut that changes the shape: channels added before and after the input's.
  std::int64_t pad_before_ = 0;
  std::int64_t pad_after_ = 0;
  bool reshapes_ = false;
};

}  // namespace gradwire
