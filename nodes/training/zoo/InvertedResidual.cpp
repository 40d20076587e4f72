#include "nodes/training/zoo/InvertedResidual.h"

#include <stdexcept>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>

#include "nodes/training/zoo/ConvLayers.h"

namespace gradwire {

InvertedResidual::InvertedResidual(std::int64_t in, std::int64_t out, std::int64_t stride,
                                   std::int64_t expand_ratio)
    : in_(in), out_(out), stride_(stride), hidden_(in * expand_ratio) {
  if (in < 1 || out < 1 || stride < 1 || expand_ratio < 1) {
    throw std::invalid_argument(
        "inverted residual: channels, stride and expansion must be at least 1, got " +
        std::to_string(in) + " -> " + std::to_string(out) + ", stride " +
        std::to_string(stride) + ", expansion " + std::to_string(expand_ratio));
  }
  residual_ = stride == 1 && in == out;
  // A list, not a Sequential: it only names the layers (a Sequential cannot hold Sequentials).
  auto conv = std::make_shared<torch::nn::ModuleListImpl>();
  if (expand_ratio != 1) {
    expand_ = make_conv_bn_relu6(in, hidden_, 1, 1);
    conv->push_back(expand_);
  }
  depthwise_ = make_conv_bn_relu6(hidden_, hidden_, 3, stride, hidden_);
  conv->push_back(depthwise_);
  project_ = make_conv(hidden_, out, 1, 1);
  conv->push_back(project_);
  project_bn_ = make_batchnorm(out);
  conv->push_back(project_bn_);
  register_module("conv", conv);
}

torch::Tensor InvertedResidual::forward(torch::Tensor x) {
  torch::Tensor y = expand_ ? expand_->forward(x) : x;
  y = project_bn_->forward(project_->forward(depthwise_->forward(y)));
  return residual_ ? x + y : y;
}

std::vector<LayerCost> InvertedResidual::costs(const std::string& prefix, std::int64_t height,
                                               std::int64_t width) const {
  const std::int64_t h = conv_out_side(height, 3, stride_);
  const std::int64_t w = conv_out_side(width, 3, stride_);
  std::vector<LayerCost> out;
  int index = 0;
  const auto name = [&](int i) { return prefix + ".conv." + std::to_string(i); };
  if (expand_) {
    out.push_back({name(index) + ".0", "conv", conv_flops(in_, hidden_, 1, 1, height, width)});
    out.push_back({name(index) + ".1", "batchnorm", batchnorm_flops(hidden_, height, width)});
    ++index;
  }
  out.push_back({name(index) + ".0", "conv", conv_flops(hidden_, hidden_, 3, hidden_, h, w)});
  out.push_back({name(index) + ".1", "batchnorm", batchnorm_flops(hidden_, h, w)});
  out.push_back({name(index + 1), "conv", conv_flops(hidden_, out_, 1, 1, h, w)});
  out.push_back({name(index + 2), "batchnorm", batchnorm_flops(out_, h, w)});
  return out;
}

}  // namespace gradwire
