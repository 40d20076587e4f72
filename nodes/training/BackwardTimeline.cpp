#include "nodes/training/BackwardTimeline.h"

#include <cstdint>
#include <regex>

#include "nodes/training/Model.h"

namespace gradwire {

namespace {

/// The costed layer a parameter belongs to: the last layer whose name is a dotted prefix of
/// the parameter's name ("layer1.0.conv1" for "layer1.0.conv1.weight"). torch's LSTM names
/// its parameters "weight_ih_l<k>" inside one module, costed per layer as "<module>.l<k>".
int layer_of(const std::string& parameter, const std::vector<LayerCost>& costs) {
  static const std::regex kLstm(R"((.*)\.(weight|bias)_(ih|hh)_l(\d+)(_reverse)?)");
  std::smatch m;
  std::string name = parameter;
  if (std::regex_match(parameter, m, kLstm)) name = m[1].str() + ".l" + m[4].str() + ".x";
  int found = -1;
  std::size_t best = 0;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    const std::string& layer = costs[i].name;
    if (layer.size() < name.size() && name.compare(0, layer.size(), layer) == 0 &&
        name[layer.size()] == '.' && layer.size() >= best) {
      best = layer.size();
      found = static_cast<int>(i);
    }
  }
  return found;
}

/// Layer index of every parameter, or empty when some parameter has no costed layer.
std::vector<int> parameter_layers(const Model& model) {
  const auto& costs = model.layer_costs();
  std::vector<int> layers;
  if (costs.empty()) return layers;
  std::int64_t total = 0;
  for (const auto& c : costs) total += c.flops;
  if (total <= 0) return {};
  for (const auto& item : model.named_parameters()) {
    const int layer = layer_of(item.key(), costs);
    if (layer < 0) return {};
    layers.push_back(layer);
  }
  return layers;
}

}  // namespace

std::vector<double> gradient_ready_fractions(const Model& model) {
  const double forward = 1.0 - kBackwardShare;
  std::vector<double> out;
  const std::vector<int> layers = parameter_layers(model);
  if (!layers.empty()) {
    const auto& costs = model.layer_costs();
    // Backward done through layer i (from the last layer down to i), as a share of all.
    std::vector<double> done(costs.size());
    double total = 0;
    for (const auto& c : costs) total += static_cast<double>(c.flops);
    double cumulative = 0;
    for (std::size_t i = costs.size(); i-- > 0;) {
      cumulative += static_cast<double>(costs[i].flops);
      done[i] = cumulative / total;
    }
    for (int layer : layers) out.push_back(forward + kBackwardShare * done[static_cast<std::size_t>(layer)]);
  } else {
    std::vector<double> numels;
    double total = 0;
    for (const auto& p : model.parameters()) {
      numels.push_back(static_cast<double>(p.numel()));
      total += numels.back();
    }
    out.resize(numels.size());
    double cumulative = 0;
    for (std::size_t i = numels.size(); i-- > 0;) {
      cumulative += numels[i];
      out[i] = forward + kBackwardShare * (total > 0 ? cumulative / total : 1.0);
    }
  }
  // The first parameters' gradients complete the backward pass.
  if (!out.empty()) out.front() = 1.0;
  return out;
}

std::string gradient_ready_rule(const Model& model) {
  return parameter_layers(model).empty() ? "parameter count" : "layer FLOPs";
}

}  // namespace gradwire
