// What the ResNets of the zoo share (He et al. 2016): a 3x3 stem convolution with batch norm and
// ReLU, stages of basic blocks that double the width and halve the resolution from the second
// stage on, global average pooling and one linear layer. ResNetCifar and ResNet18 choose the
// widths, the depth and the shortcut.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nodes/training/Model.h"

namespace gradwire {

enum class Shortcut;

class ResidualNetwork : public Model {
 public:
  /// `x`: [batch, C, H, W]; returns [batch, classes] logits.
  torch::Tensor forward(torch::Tensor x) override;

 protected:
  /// `name` prefixes error messages. Submodules are named as torchvision names them: conv1,
  /// bn1, layer1.0 ... layer<stages>.<blocks_per_stage - 1>, fc. Throws std::invalid_argument
  /// for samples that are not {C, H, W} images of at least min_side x min_side, or classes < 1.
  ResidualNetwork(const std::string& name, const ModelInput& input, std::int64_t stem_channels,
                  int stages, std::int64_t blocks_per_stage, Shortcut shortcut,
                  std::int64_t min_side);

 private:
  struct Layers;
  std::shared_ptr<Layers> layers_;
};

}  // namespace gradwire
