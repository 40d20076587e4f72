// What the zoo's convolutional networks share: convolutions and batch norms initialised the
// way torchvision initialises them, and the forward-cost arithmetic of their layers.
#pragma once

#include <cstdint>
#include <memory>

namespace torch {
namespace nn {
class Conv2dImpl;       // defined in <torch/nn/modules/conv.h>
class BatchNorm2dImpl;  // defined in <torch/nn/modules/batchnorm.h>
class SequentialImpl;   // defined in <torch/nn/modules/container/sequential.h>
}  // namespace nn
}  // namespace torch

namespace gradwire {

/// kernel x kernel convolution padded by (kernel - 1) / 2, so stride 1 keeps the image side.
/// Weights are kaiming-normal (fan_out, ReLU gain) and a bias, if any, zero, as torchvision
/// initialises its ResNets, VGGs and MobileNets; drawn from the global torch generator.
std::shared_ptr<torch::nn::Conv2dImpl> make_conv(std::int64_t in, std::int64_t out,
                                                 std::int64_t kernel, std::int64_t stride,
                                                 std::int64_t groups = 1, bool bias = false);

/// Batch norm with torch's defaults (eps 1e-5, momentum 0.1, weight 1, bias 0).
std::shared_ptr<torch::nn::BatchNorm2dImpl> make_batchnorm(std::int64_t channels);

/// make_conv (no bias), batch norm and an in-place ReLU6 as children "0", "1", "2": torchvision's
/// Conv2dNormActivation as MobileNetV2 uses it.
std::shared_ptr<torch::nn::SequentialImpl> make_conv_bn_relu6(std::int64_t in, std::int64_t out,
                                                              std::int64_t kernel,
                                                              std::int64_t stride,
                                                              std::int64_t groups = 1);

/// Output side of make_conv's convolution on an input side `in` (floor, as torch).
constexpr std::int64_t conv_out_side(std::int64_t in, std::int64_t kernel, std::int64_t stride) {
  return (in + 2 * ((kernel - 1) / 2) - kernel) / stride + 1;
}

/// 2 x multiply-accumulates of a convolution producing out x h_out x w_out.
constexpr std::int64_t conv_flops(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                  std::int64_t groups, std::int64_t h_out, std::int64_t w_out) {
  return 2 * (in / groups) * kernel * kernel * out * h_out * w_out;
}

/// Normalise and scale: 2 per element.
constexpr std::int64_t batchnorm_flops(std::int64_t channels, std::int64_t h, std::int64_t w) {
  return 2 * channels * h * w;
}

constexpr std::int64_t linear_flops(std::int64_t in, std::int64_t out) { return 2 * in * out; }

}  // namespace gradwire
