#include "nodes/training/zoo/MobileNetV2.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>

#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/container/functional.h>
#include <torch/nn/modules/linear.h>

#include "nodes/training/StepRandomness.h"
#include "nodes/training/zoo/ConvLayers.h"
#include "nodes/training/zoo/InvertedResidual.h"

namespace gradwire {
namespace {

struct Stage {
  std::int64_t expand;    // t
  std::int64_t channels;  // c, before the width multiplier
  std::int64_t blocks;    // n
  std::int64_t stride;    // s of the first block (ImageNet)
};

constexpr Stage kStages[] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                             {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
constexpr std::int64_t kStemChannels = 32;
constexpr std::int64_t kLastChannels = 1280;
constexpr std::int64_t kDivisor = 8;
constexpr std::int64_t kSmallImage = 64;  // up to this side the CIFAR strides apply
constexpr double kDropout = 0.2;

// torchvision's _make_divisible: the nearest multiple of 8, at least 8, and never more than
// 10% below `v`.
std::int64_t make_divisible(double v) {
  std::int64_t rounded = std::max<std::int64_t>(
      kDivisor, static_cast<std::int64_t>(v + kDivisor / 2.0) / kDivisor * kDivisor);
  if (rounded < 0.9 * v) rounded += kDivisor;
  return rounded;
}

}  // namespace

struct MobileNetV2::Layers {
  std::shared_ptr<torch::nn::SequentialImpl> stem;  // features.0
  std::vector<std::shared_ptr<InvertedResidual>> blocks;  // features.1 ... features.17
  std::shared_ptr<torch::nn::SequentialImpl> last;  // features.18
  torch::nn::Sequential classifier;                 // dropout, linear
};

MobileNetV2::MobileNetV2(const ModelInput& input, double width)
    : layers_(std::make_shared<Layers>()) {
  const auto& shape = input.sample_shape;
  if (shape.size() != 3) {
    throw std::invalid_argument("mobilenetv2: needs image samples shaped {C, H, W}, got " +
                                std::to_string(shape.size()) + " dimensions");
  }
  if (shape[0] < 1 || shape[1] < 1 || shape[2] < 1) {
    throw std::invalid_argument("mobilenetv2: sample dimensions must be at least 1");
  }
  if (input.classes < 1) {
    throw std::invalid_argument("mobilenetv2: classes must be at least 1, got " +
                                std::to_string(input.classes));
  }
  if (!(width > 0) || !std::isfinite(width)) {
    throw std::invalid_argument("mobilenetv2: width must be a multiplier above 0 (1 is the "
                                "paper's network), got " + std::to_string(width));
  }
  namespace nn = torch::nn;
  Layers& l = *layers_;
  const bool small = shape[1] <= kSmallImage && shape[2] <= kSmallImage;
  std::int64_t h = shape[1];
  std::int64_t w = shape[2];
  auto features = register_module("features", std::make_shared<nn::ModuleListImpl>());

  std::int64_t channels = make_divisible(kStemChannels * width);
  const std::int64_t stem_stride = small ? 1 : 2;
  l.stem = make_conv_bn_relu6(shape[0], channels, 3, stem_stride);
  features->push_back(l.stem);
  h = conv_out_side(h, 3, stem_stride);
  w = conv_out_side(w, 3, stem_stride);
  add_layer_cost("features.0.0", "conv", conv_flops(shape[0], channels, 3, 1, h, w));
  add_layer_cost("features.0.1", "batchnorm", batchnorm_flops(channels, h, w));

  for (std::size_t s = 0; s < std::size(kStages); ++s) {
    const Stage& stage = kStages[s];
    const std::int64_t out = make_divisible(stage.channels * width);
    // CIFAR adaptation: the stem and the t=6, c=24 stage keep the resolution.
    const std::int64_t first_stride = (small && s == 1) ? 1 : stage.stride;
    for (std::int64_t i = 0; i < stage.blocks; ++i) {
      const std::int64_t stride = i == 0 ? first_stride : 1;
      auto block = std::make_shared<InvertedResidual>(channels, out, stride, stage.expand);
      const std::string name = "features." + std::to_string(features->size());
      features->push_back(block);
      l.blocks.push_back(block);
      for (LayerCost& c : block->costs(name, h, w)) {
        add_layer_cost(std::move(c.name), std::move(c.kind), c.flops);
      }
      h = conv_out_side(h, 3, stride);
      w = conv_out_side(w, 3, stride);
      channels = out;
    }
  }

  const std::int64_t last = make_divisible(kLastChannels * std::max(1.0, width));
  const std::string last_name = "features." + std::to_string(features->size());
  l.last = make_conv_bn_relu6(channels, last, 1, 1);
  features->push_back(l.last);
  add_layer_cost(last_name + ".0", "conv", conv_flops(channels, last, 1, 1, h, w));
  add_layer_cost(last_name + ".1", "batchnorm", batchnorm_flops(last, h, w));

  auto linear = std::make_shared<nn::LinearImpl>(last, input.classes);
  // As torchvision initialises its MobileNetV2 classifier.
  nn::init::normal_(linear->weight, 0.0, 0.01);
  nn::init::zeros_(linear->bias);
  // torchvision's Dropout, drawing its mask from the step's generator (StepRandomness.h).
  l.classifier->push_back(nn::Functional(
      [this](torch::Tensor x) { return StepRandomness::dropout(x, kDropout, is_training()); }));
  l.classifier->push_back(linear);
  register_module("classifier", l.classifier);
  add_layer_cost("classifier.1", "linear", linear_flops(last, input.classes));
}

torch::Tensor MobileNetV2::forward(torch::Tensor x) {
  Layers& l = *layers_;
  x = l.stem->forward(x);
  for (const auto& block : l.blocks) x = block->forward(x);
  x = l.last->forward(x);
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return l.classifier->forward(x);
}

}  // namespace gradwire
