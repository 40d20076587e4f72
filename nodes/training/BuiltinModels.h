// The built-in model kinds' declarations (nodes/training/BuiltinModels.cpp); ModelRegistry adds
// them in the order listings show. A new kind is a new file with one such function, declared
// here and added in ModelRegistry's constructor.
#pragma once

#include "nodes/training/ModelRegistry.h"

namespace gradwire {

ModelInfo cnn_model();
ModelInfo mlp_model();
ModelInfo resnet20_model();
ModelInfo resnet56_model();
ModelInfo resnet18_model();
ModelInfo vgg16_model();
ModelInfo mobilenetv2_model();
ModelInfo lstm_lm_model();
ModelInfo transformer_model();
ModelInfo torchscript_model();

}  // namespace gradwire
