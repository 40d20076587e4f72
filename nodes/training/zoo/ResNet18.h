// ResNet-18 for 32x32 images, as CIFAR studies use it: torchvision's ResNet-18 (He et al. 2016,
// four stages of two basic blocks at 64-512 channels, 1x1 convolution + batch norm on
// shortcuts that change shape) with a 3x3 stride-1 stem and no max pool, so small images keep
// their resolution; 11.2M parameters for 10 classes.
#pragma once

#include "nodes/training/zoo/ResidualNetwork.h"

namespace gradwire {

class ResNet18 : public ResidualNetwork {
 public:
  /// `input.sample_shape` = {C, H, W}. Throws std::invalid_argument otherwise.
  explicit ResNet18(const ModelInput& input);
};

}  // namespace gradwire
