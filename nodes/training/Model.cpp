// Model's layer costs; make_model dispatches through ModelRegistry (ModelRegistry.cpp).
#include "nodes/training/Model.h"

#include <string>

namespace gradwire {

std::int64_t Model::forward_flops_per_sample() const {
  std::int64_t total = 0;
  for (const LayerCost& layer : layer_costs_) total += layer.flops;
  return total;
}

void Model::add_layer_cost(std::string name, std::string kind, std::int64_t flops) {
  layer_costs_.push_back(LayerCost{std::move(name), std::move(kind), flops});
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out;
  for (std::int64_t d : shape) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return "[" + out + "]";
}

std::shared_ptr<Model> make_model(const ModelConfig& config,
                                  const std::vector<std::int64_t>& sample_shape,
                                  std::int64_t classes) {
  return make_model(config, ModelInput{sample_shape, classes, false});
}

}  // namespace gradwire
