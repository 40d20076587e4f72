#include "nodes/training/zoo/ResNet18.h"

#include "nodes/training/zoo/BasicBlock.h"

namespace gradwire {

ResNet18::ResNet18(const ModelInput& input)
    : ResidualNetwork("resnet18", input, 64, 4, 2, Shortcut::kProjection, /*min_side=*/1) {}

}  // namespace gradwire
