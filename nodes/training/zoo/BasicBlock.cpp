#include "nodes/training/zoo/BasicBlock.h"

#include <stdexcept>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>

#include "nodes/training/zoo/ConvLayers.h"

namespace gradwire {

BasicBlock::BasicBlock(std::int64_t in, std::int64_t out, std::int64_t stride, Shortcut shortcut)
    : in_(in), out_(out), stride_(stride) {
  if (in < 1 || out < 1 || stride < 1) {
    throw std::invalid_argument("basic block: channels and stride must be at least 1, got " +
                                std::to_string(in) + " -> " + std::to_string(out) +
                                ", stride " + std::to_string(stride));
  }
  conv1_ = register_module("conv1", make_conv(in, out, 3, stride));
  bn1_ = register_module("bn1", make_batchnorm(out));
  conv2_ = register_module("conv2", make_conv(out, out, 3, 1));
  bn2_ = register_module("bn2", make_batchnorm(out));
  reshapes_ = stride != 1 || in != out;
  if (!reshapes_) return;
  if (shortcut == Shortcut::kProjection) {
    shortcut_conv_ = make_conv(in, out, 1, stride);
    shortcut_bn_ = make_batchnorm(out);
    // A list, not a Sequential: only the names matter, forward calls the two layers itself.
    auto downsample = std::make_shared<torch::nn::ModuleListImpl>();
    downsample->push_back(shortcut_conv_);
    downsample->push_back(shortcut_bn_);
    register_module("downsample", downsample);
    return;
  }
  if (out < in) {
    throw std::invalid_argument("basic block: a zero-padded shortcut cannot narrow " +
                                std::to_string(in) + " channels to " + std::to_string(out));
  }
  // Centred, as the common PyTorch CIFAR ResNets pad (planes / 4 on each side for a doubling).
  pad_before_ = (out - in) / 2;
  pad_after_ = out - in - pad_before_;
}

torch::Tensor BasicBlock::forward(torch::Tensor x) {
  torch::Tensor y = bn1_->forward(conv1_->forward(x)).relu_();
  y = bn2_->forward(conv2_->forward(y));
  if (!reshapes_) {
    y += x;
  } else if (shortcut_conv_) {
    y += shortcut_bn_->forward(shortcut_conv_->forward(x));
  } else {
    // x[:, :, ::s, ::s] has the convolution's output side ceil(H / s) for 3x3, padding 1.
    torch::Tensor s = x;
    if (stride_ != 1) s = x.slice(2, 0, x.size(2), stride_).slice(3, 0, x.size(3), stride_);
    y += torch::constant_pad_nd(s, {0, 0, 0, 0, pad_before_, pad_after_});
  }
  return y.relu_();
}

std::vector<LayerCost> BasicBlock::costs(const std::string& prefix, std::int64_t height,
                                         std::int64_t width) const {
  const std::int64_t h = conv_out_side(height, 3, stride_);
  const std::int64_t w = conv_out_side(width, 3, stride_);
  std::vector<LayerCost> out = {
      {prefix + ".conv1", "conv", conv_flops(in_, out_, 3, 1, h, w)},
      {prefix + ".bn1", "batchnorm", batchnorm_flops(out_, h, w)},
      {prefix + ".conv2", "conv", conv_flops(out_, out_, 3, 1, h, w)},
      {prefix + ".bn2", "batchnorm", batchnorm_flops(out_, h, w)},
  };
  if (shortcut_conv_) {
    out.push_back({prefix + ".downsample.0", "conv", conv_flops(in_, out_, 1, 1, h, w)});
    out.push_back({prefix + ".downsample.1", "batchnorm", batchnorm_flops(out_, h, w)});
  }
  return out;
}

}  // namespace gradwire
