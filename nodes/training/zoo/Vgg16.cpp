#include "nodes/training/zoo/Vgg16.h"

#include <stdexcept>
#include <string>

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include "nodes/training/zoo/ConvLayers.h"

namespace gradwire {
namespace {

constexpr std::int64_t kPool = 0;  // a max pool in the configuration
// Configuration D of Simonyan & Zisserman: output channels of each 3x3 convolution.
constexpr std::int64_t kConfigD[] = {64,  64,  kPool, 128, 128, kPool, 256, 256, 256, kPool,
                                     512, 512, 512,   kPool, 512, 512, 512, kPool};
constexpr std::int64_t kMinSide = 32;  // five 2x2 poolings

}  // namespace

struct Vgg16::Layers {
  torch::nn::Sequential features;  // conv, bn, ReLU per convolution; a max pool per stage
  std::shared_ptr<torch::nn::LinearImpl> classifier;
};

Vgg16::Vgg16(const ModelInput& input) : layers_(std::make_shared<Layers>()) {
  const auto& shape = input.sample_shape;
  if (shape.size() != 3) {
    throw std::invalid_argument("vgg16: needs image samples shaped {C, H, W}, got " +
                                std::to_string(shape.size()) + " dimensions");
  }
  if (shape[0] < 1) throw std::invalid_argument("vgg16: channels must be at least 1");
  if (shape[1] < kMinSide || shape[2] < kMinSide) {
    throw std::invalid_argument("vgg16: images of " + std::to_string(shape[1]) + "x" +
                                std::to_string(shape[2]) +
                                " are too small for five 2x2 poolings (need at least 32x32)");
  }
  if (input.classes < 1) {
    throw std::invalid_argument("vgg16: classes must be at least 1, got " +
                                std::to_string(input.classes));
  }
  namespace nn = torch::nn;
  Layers& l = *layers_;
  std::int64_t channels = shape[0];
  std::int64_t h = shape[1];
  std::int64_t w = shape[2];
  for (std::int64_t out : kConfigD) {
    const std::string index = "features." + std::to_string(l.features->size());
    if (out == kPool) {
      l.features->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)));
      h /= 2;
      w /= 2;
      continue;
    }
    // torchvision's vgg16_bn keeps the convolutions' biases although batch norm follows, and
    // the published 14.7M parameters count them.
    l.features->push_back(make_conv(channels, out, 3, 1, 1, true));
    add_layer_cost(index, "conv", conv_flops(channels, out, 3, 1, h, w));
    l.features->push_back(make_batchnorm(out));
    add_layer_cost("features." + std::to_string(l.features->size() - 1), "batchnorm",
                   batchnorm_flops(out, h, w));
    l.features->push_back(nn::ReLU(nn::ReLUOptions().inplace(true)));
    channels = out;
  }
  register_module("features", l.features);
  l.classifier =
      register_module("classifier", std::make_shared<nn::LinearImpl>(channels, input.classes));
  // As torchvision initialises its VGG classifiers.
  nn::init::normal_(l.classifier->weight, 0.0, 0.01);
  nn::init::zeros_(l.classifier->bias);
  add_layer_cost("classifier", "linear", linear_flops(channels, input.classes));
}

torch::Tensor Vgg16::forward(torch::Tensor x) {
  Layers& l = *layers_;
  x = l.features->forward(x);
  // 32x32 images end at 1x1; larger ones are averaged down to it.
  if (x.size(2) != 1 || x.size(3) != 1) x = torch::adaptive_avg_pool2d(x, {1, 1});
  return l.classifier->forward(x.flatten(1));
}

}  // namespace gradwire
