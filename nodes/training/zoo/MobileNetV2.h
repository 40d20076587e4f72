// MobileNetV2 (Sandler et al. 2018), the edge-device network: inverted residual blocks with
// linear bottlenecks and depthwise 3x3 convolutions, widths scaled by a multiplier. For images
// of 64 pixels or less the stem and the second stage keep stride 1, as CIFAR studies adapt it,
// so a 32x32 image still ends at 4x4; larger images use the ImageNet strides.
#pragma once

#include <memory>

#include "nodes/training/Model.h"

namespace gradwire {

/// The `mobilenetv2` model's keys.
struct MobileNetV2Settings {
  double width = 1.0;  ///< width multiplier of every layer
};

class MobileNetV2 : public Model {
 public:
  /// `input.sample_shape` = {C, H, W}; `width` > 0 scales every layer's channels (rounded to
  /// multiples of 8, as the paper's reference does). Throws std::invalid_argument otherwise.
  MobileNetV2(const ModelInput& input, double width);

  /// `x`: [batch, C, H, W]; returns [batch, classes] logits.
  torch::Tensor forward(torch::Tensor x) override;

 private:
  struct Layers;
  std::shared_ptr<Layers> layers_;
};

}  // namespace gradwire
