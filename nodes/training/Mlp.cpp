// Multilayer perceptron over flattened samples.
#include "nodes/training/Mlp.h"

#include <stdexcept>
#include <string>

#include <torch/nn/modules/linear.h>

namespace gradwire {

Mlp::Mlp(std::int64_t inputs, const std::vector<std::int64_t>& hidden, std::int64_t classes) {
  if (inputs < 1) throw std::invalid_argument("mlp: input features must be at least 1");
  if (classes < 1) throw std::invalid_argument("mlp: classes must be at least 1");
  std::vector<std::int64_t> widths{inputs};
  for (std::int64_t width : hidden) {
    if (width < 1) {
      throw std::invalid_argument("mlp: hidden widths must be at least 1, got " +
                                  std::to_string(width));
    }
    widths.push_back(width);
  }
  widths.push_back(classes);
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    // Registered so parameters(), named_parameters() and to() see every layer.
    const std::string name = "fc" + std::to_string(i + 1);
    layers_.push_back(register_module(
        name, std::make_shared<torch::nn::LinearImpl>(widths[i], widths[i + 1])));
    add_layer_cost(name, "linear", 2 * widths[i] * widths[i + 1]);
  }
}

torch::Tensor Mlp::forward(torch::Tensor x) {
  x = x.flatten(1);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    x = layers_[i]->forward(x);
    if (i + 1 < layers_.size()) x = torch::relu(x);
  }
  return x;
}

}  // namespace gradwire
