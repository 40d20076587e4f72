#include "nodes/training/zoo/ResNetCifar.h"

#include <stdexcept>
#include <string>

#include "nodes/training/zoo/BasicBlock.h"

namespace gradwire {
namespace {

/// n of depth = 6n + 2: the basic blocks per stage (two 3x3 convolutions each).
std::int64_t blocks_per_stage(std::int64_t depth) {
  if (depth < 8 || (depth - 2) % 6 != 0) {
    throw std::invalid_argument("CIFAR ResNet: depth must be 6n + 2 with n >= 1 (20, 32, 44, "
                                "56, 110, ...), got " + std::to_string(depth));
  }
  return (depth - 2) / 6;
}

}  // namespace

ResNetCifar::ResNetCifar(std::int64_t depth, const ModelInput& input)
    : ResidualNetwork("resnet" + std::to_string(depth), input, 16, 3, blocks_per_stage(depth),
                      Shortcut::kZeroPad, /*min_side=*/4) {}

}  // namespace gradwire
