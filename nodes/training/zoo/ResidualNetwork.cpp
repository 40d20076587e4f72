#include "nodes/training/zoo/ResidualNetwork.h"

#include <stdexcept>
#include <vector>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "nodes/training/zoo/BasicBlock.h"
#include "nodes/training/zoo/ConvLayers.h"

namespace gradwire {

struct ResidualNetwork::Layers {
  std::shared_ptr<torch::nn::Conv2dImpl> conv1;
  std::shared_ptr<torch::nn::BatchNorm2dImpl> bn1;
  std::vector<std::shared_ptr<BasicBlock>> blocks;  // layer1.0, layer1.1, ... in forward order
  std::shared_ptr<torch::nn::LinearImpl> fc;
};

ResidualNetwork::ResidualNetwork(const std::string& name, const ModelInput& input,
                                 std::int64_t stem_channels, int stages,
                                 std::int64_t blocks_per_stage, Shortcut shortcut,
                                 std::int64_t min_side)
    : layers_(std::make_shared<Layers>()) {
  const auto& shape = input.sample_shape;
  if (shape.size() != 3) {
    throw std::invalid_argument(name + ": needs image samples shaped {C, H, W}, got " +
                                std::to_string(shape.size()) + " dimensions");
  }
  if (shape[0] < 1 || shape[1] < 1 || shape[2] < 1) {
    throw std::invalid_argument(name + ": sample dimensions must be at least 1");
  }
  if (shape[1] < min_side || shape[2] < min_side) {
    throw std::invalid_argument(name + ": images of " + std::to_string(shape[1]) + "x" +
                                std::to_string(shape[2]) + " are too small (need at least " +
                                std::to_string(min_side) + "x" + std::to_string(min_side) + ")");
  }
  if (input.classes < 1) {
    throw std::invalid_argument(name + ": classes must be at least 1, got " +
                                std::to_string(input.classes));
  }
  std::int64_t h = shape[1];
  std::int64_t w = shape[2];

  Layers& l = *layers_;
  l.conv1 = register_module("conv1", make_conv(shape[0], stem_channels, 3, 1));
  l.bn1 = register_module("bn1", make_batchnorm(stem_channels));
  add_layer_cost("conv1", "conv", conv_flops(shape[0], stem_channels, 3, 1, h, w));
  add_layer_cost("bn1", "batchnorm", batchnorm_flops(stem_channels, h, w));

  std::int64_t channels = stem_channels;
  for (int stage = 0; stage < stages; ++stage) {
    const std::int64_t out = stem_channels << stage;
    const std::string stage_name = "layer" + std::to_string(stage + 1);
    auto list = register_module(stage_name, std::make_shared<torch::nn::ModuleListImpl>());
    for (std::int64_t i = 0; i < blocks_per_stage; ++i) {
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      auto block = std::make_shared<BasicBlock>(channels, out, stride, shortcut);
      list->push_back(block);
      l.blocks.push_back(block);
      for (LayerCost& c : block->costs(stage_name + "." + std::to_string(i), h, w)) {
        add_layer_cost(std::move(c.name), std::move(c.kind), c.flops);
      }
      h = conv_out_side(h, 3, stride);
      w = conv_out_side(w, 3, stride);
      channels = out;
    }
  }
  // torch's default initialisation for the classifier, as torchvision and the CIFAR ResNets.
  l.fc = register_module("fc", std::make_shared<torch::nn::LinearImpl>(channels, input.classes));
  add_layer_cost("fc", "linear", linear_flops(channels, input.classes));
}

torch::Tensor ResidualNetwork::forward(torch::Tensor x) {
  Layers& l = *layers_;
  x = l.bn1->forward(l.conv1->forward(x)).relu_();
  for (const auto& block : l.blocks) x = block->forward(x);
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return l.fc->forward(x);
}

}  // namespace gradwire
