#include "nodes/training/zoo/ConvLayers.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>

namespace gradwire {

std::shared_ptr<torch::nn::Conv2dImpl> make_conv(std::int64_t in, std::int64_t out,
                                                 std::int64_t kernel, std::int64_t stride,
                                                 std::int64_t groups, bool bias) {
  namespace nn = torch::nn;
  auto conv = std::make_shared<nn::Conv2dImpl>(nn::Conv2dOptions(in, out, kernel)
                                                   .stride(stride)
                                                   .padding((kernel - 1) / 2)
                                                   .groups(groups)
                                                   .bias(bias));
  nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
  if (bias) nn::init::zeros_(conv->bias);
  return conv;
}

std::shared_ptr<torch::nn::BatchNorm2dImpl> make_batchnorm(std::int64_t channels) {
  return std::make_shared<torch::nn::BatchNorm2dImpl>(channels);
}

std::shared_ptr<torch::nn::SequentialImpl> make_conv_bn_relu6(std::int64_t in, std::int64_t out,
                                                              std::int64_t kernel,
                                                              std::int64_t stride,
                                                              std::int64_t groups) {
  namespace nn = torch::nn;
  auto seq = std::make_shared<nn::SequentialImpl>();
  seq->push_back(make_conv(in, out, kernel, stride, groups));
  seq->push_back(make_batchnorm(out));
  seq->push_back(nn::ReLU6(nn::ReLU6Options().inplace(true)));
  return seq;
}

}  // namespace gradwire
