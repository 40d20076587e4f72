// LeNet-5-like convolutional network; layer sizes follow from the input shape.
#include "nodes/training/LeNet.h"

#include <stdexcept>
#include <string>

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace gradwire {
namespace {

constexpr std::int64_t kKernel = 5;
constexpr std::int64_t kPadding1 = 2;  // "same" first convolution, as LeNet-5 on 32x32 had
constexpr std::int64_t kPool = 2;

// Output side of a stride-1 convolution and of a non-overlapping max pool (floor, as torch).
std::int64_t conv_out(std::int64_t in, std::int64_t padding) {
  return in + 2 * padding - kKernel + 1;
}
std::int64_t pool_out(std::int64_t in) { return in / kPool; }

void require_positive(std::int64_t value, const char* name) {
  if (value < 1) {
    throw std::invalid_argument(std::string("cnn: ") + name + " must be at least 1, got " +
                                std::to_string(value));
  }
}

}  // namespace

LeNet::LeNet(const std::vector<std::int64_t>& sample_shape, std::int64_t classes,
             const LeNetSettings& config) {
  if (sample_shape.size() != 3) {
    throw std::invalid_argument("cnn: needs image samples shaped {C, H, W}, got " +
                                std::to_string(sample_shape.size()) + " dimensions");
  }
  const std::int64_t channels = sample_shape[0];
  const std::int64_t height = sample_shape[1];
  const std::int64_t width = sample_shape[2];
  require_positive(channels, "channels");
  require_positive(classes, "classes");
  require_positive(config.conv1, "conv1");
  require_positive(config.conv2, "conv2");
  require_positive(config.fc1, "fc1");
  require_positive(config.fc2, "fc2");

  // Spatial sizes after each stage; 28 -> 28 -> 14 -> 10 -> 5 for Fashion-MNIST.
  const std::int64_t h1 = conv_out(height, kPadding1);
  const std::int64_t w1 = conv_out(width, kPadding1);
  const std::int64_t h2 = conv_out(pool_out(h1), 0);
  const std::int64_t w2 = conv_out(pool_out(w1), 0);
  const std::int64_t h3 = h2 > 0 ? pool_out(h2) : 0;
  const std::int64_t w3 = w2 > 0 ? pool_out(w2) : 0;
  if (h3 < 1 || w3 < 1) {
    throw std::invalid_argument("cnn: images of " + std::to_string(height) + "x" +
                                std::to_string(width) +
                                " are too small for two 5x5 convolutions and pools (need 12x12)");
  }
  const std::int64_t flat = config.conv2 * h3 * w3;

  namespace nn = torch::nn;
  conv1_ = register_module("conv1", std::make_shared<nn::Conv2dImpl>(
                                        nn::Conv2dOptions(channels, config.conv1, kKernel)
                                            .padding(kPadding1)));
  conv2_ = register_module(
      "conv2", std::make_shared<nn::Conv2dImpl>(nn::Conv2dOptions(config.conv1, config.conv2,
                                                                  kKernel)));
  fc1_ = register_module("fc1", std::make_shared<nn::LinearImpl>(flat, config.fc1));
  fc2_ = register_module("fc2", std::make_shared<nn::LinearImpl>(config.fc1, config.fc2));
  fc3_ = register_module("fc3", std::make_shared<nn::LinearImpl>(config.fc2, classes));

  const std::int64_t window = kKernel * kKernel;
  add_layer_cost("conv1", "conv", 2 * h1 * w1 * config.conv1 * channels * window);
  add_layer_cost("conv2", "conv", 2 * h2 * w2 * config.conv2 * config.conv1 * window);
  add_layer_cost("fc1", "linear", 2 * flat * config.fc1);
  add_layer_cost("fc2", "linear", 2 * config.fc1 * config.fc2);
  add_layer_cost("fc3", "linear", 2 * config.fc2 * classes);
}

torch::Tensor LeNet::forward(torch::Tensor x) {
  x = torch::max_pool2d(torch::relu(conv1_->forward(x)), kPool);
  x = torch::max_pool2d(torch::relu(conv2_->forward(x)), kPool);
  x = x.flatten(1);
  x = torch::relu(fc1_->forward(x));
  x = torch::relu(fc2_->forward(x));
  return fc3_->forward(x);
}

}  // namespace gradwire
