// The CIFAR ResNets of He et al. 2016 ("Deep Residual Learning", section 4.2): a 3x3 stem with
// 16 channels, three stages of n basic blocks at 16, 32 and 64 channels (stride 2 between
// stages), global average pooling and one linear layer; depth = 6n + 2 (resnet20: n = 3,
// 0.27M parameters; resnet56: n = 9, 0.85M). Shortcuts that change shape are the paper's
// option A: identity with stride-2 subsampling and zero-padded channels, so they add no
// parameters.
#pragma once

#include <cstdint>

#include "nodes/training/zoo/ResidualNetwork.h"

namespace gradwire {

class ResNetCifar : public ResidualNetwork {
 public:
  /// `depth` = 6n + 2 (20, 32, 44, 56, 110, ...); `input.sample_shape` = {C, H, W} with H, W
  /// at least 4. Throws std::invalid_argument otherwise.
  ResNetCifar(std::int64_t depth, const ModelInput& input);
};

}  // namespace gradwire
