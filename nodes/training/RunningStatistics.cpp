#include "nodes/training/RunningStatistics.h"

#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "nodes/training/Model.h"

namespace gradwire {

void load_mean_buffers(Model& target, const std::vector<std::shared_ptr<Model>>& workers) {
  torch::NoGradGuard no_grad;
  std::vector<torch::OrderedDict<std::string, torch::Tensor>> sources;
  for (const auto& w : workers) {
    if (w) sources.push_back(w->named_buffers());
  }
  if (sources.empty()) return;
  for (auto& item : target.named_buffers()) {
    torch::Tensor& buffer = item.value();
    for (const auto& source : sources) {
      if (!source.contains(item.key())) {
        throw std::invalid_argument("load_mean_buffers: a worker's model has no buffer " +
                                    item.key());
      }
    }
    if (!torch::isFloatingType(buffer.scalar_type())) {
      buffer.copy_(sources.front()[item.key()]);
      continue;
    }
    torch::Tensor sum = torch::zeros_like(buffer);
    for (const auto& source : sources) sum += source[item.key()].to(buffer.device());
    buffer.copy_(sum / static_cast<double>(sources.size()));
  }
}

}  // namespace gradwire
