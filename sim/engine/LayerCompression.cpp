#include "sim/engine/LayerCompression.h"

#include <algorithm>
#include <utility>

namespace gradwire {

LayerCompression::LayerCompression(std::vector<LayerSlice> layers) : layers_(std::move(layers)) {
  for (const LayerSlice& l : layers_) {
    types_.push_back(layer_type(l.shape));
    if (std::find(type_order_.begin(), type_order_.end(), types_.back()) == type_order_.end()) {
      type_order_.push_back(types_.back());
    }
    run_.push_back(Totals{l.numel(), 0, 0});
  }
  step_sent_.assign(layers_.size(), 0.0);
}

std::string LayerCompression::layer_type(const std::vector<std::int64_t>& shape) {
  switch (shape.size()) {
    case 4: return "conv";
    case 2: return "fc";
    case 0:
    case 1: return "vector";
    default: return "other";
  }
}

void LayerCompression::add(const std::vector<TensorSend>& sends) {
  if (sends.size() != layers_.size() || layers_.empty()) return;
  for (std::size_t i = 0; i < sends.size(); ++i) {
    run_[i].sent += static_cast<double>(sends[i].sent);
    run_[i].bytes += sends[i].bytes;
    step_sent_[i] += static_cast<double>(sends[i].sent);
  }
  run_sends_ += 1;
  step_sends_ += 1;
}

nlohmann::json LayerCompression::end_step() {
  nlohmann::json out;
  if (step_sends_ > 0) {
    out = nlohmann::json::object();
    for (const std::string& type : type_order_) {
      double sent = 0, numel = 0;
      for (std::size_t i = 0; i < layers_.size(); ++i) {
        if (types_[i] != type) continue;
        sent += step_sent_[i];
        numel += static_cast<double>(run_[i].numel);
      }
      out[type] = numel > 0 ? sent / (numel * step_sends_) : 0.0;
    }
  }
  std::fill(step_sent_.begin(), step_sent_.end(), 0.0);
  step_sends_ = 0;
  return out;
}

nlohmann::json LayerCompression::totals_json(const Totals& t, double sends) const {
  const double bytes = t.bytes / sends;
  nlohmann::json out = {{"numel", t.numel},
                        {"density", t.numel > 0 ? t.sent / (static_cast<double>(t.numel) * sends) : 0.0},
                        {"bytes_per_step", bytes}};
  // A tensor that sent nothing has no finite ratio: null rather than infinity.
  out["compression"] = bytes > 0 ? nlohmann::json(4.0 * static_cast<double>(t.numel) / bytes) : nlohmann::json();
  return out;
}

nlohmann::json LayerCompression::summary() const {
  if (run_sends_ <= 0) return nullptr;
  nlohmann::json tensors = nlohmann::json::array();
  nlohmann::json by_type = nlohmann::json::object();
  for (const std::string& type : type_order_) {
    Totals sum;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      if (types_[i] != type) continue;
      sum.numel += run_[i].numel;
      sum.sent += run_[i].sent;
      sum.bytes += run_[i].bytes;
    }
    nlohmann::json t = totals_json(sum, run_sends_);
    t["tensors"] = std::count(types_.begin(), types_.end(), type);
    by_type[type] = std::move(t);
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    nlohmann::json t = totals_json(run_[i], run_sends_);
    t["name"] = layers_[i].name;
    t["shape"] = layers_[i].shape;
    t["type"] = types_[i];
    tensors.push_back(std::move(t));
  }
  return {{"by_type", std::move(by_type)}, {"tensors", std::move(tensors)}};
}

}  // namespace gradwire
