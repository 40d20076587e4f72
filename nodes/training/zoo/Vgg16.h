// VGG-16 for CIFAR (Simonyan & Zisserman 2015, configuration D, with batch normalisation after
// every convolution as CIFAR studies train it): thirteen 3x3 convolutions in five stages with
// max pooling, then one linear classifier on the 512 features; 14.7M parameters.
#pragma once

#include <memory>

#include "nodes/training/Model.h"

namespace gradwire {

class Vgg16 : public Model {
 public:
  /// `input.sample_shape` = {C, H, W} with H, W at least 32 (five 2x2 poolings). Throws
  /// std::invalid_argument otherwise.
  explicit Vgg16(const ModelInput& input);

  /// `x`: [batch, C, H, W]; returns [batch, classes] logits.
  torch::Tensor forward(torch::Tensor x) override;

 private:
  struct Layers;
  std::shared_ptr<Layers> layers_;
};

}  // namespace gradwire
