#include "sim/engine/Evaluation.h"

#include <algorithm>

#include <torch/torch.h>

#include "nodes/training/Model.h"

namespace gradwire {

Evaluator::Evaluator(const Dataset& test, std::int64_t samples, torch::Device device)
    : test_(test), samples_(samples), device_(device) {}

EvalResult Evaluator::evaluate(Model& model) const {
  torch::NoGradGuard no_grad;
  model.eval();
  const std::int64_t total = samples_ > 0 ? std::min(samples_, test_.size()) : test_.size();
  constexpr std::int64_t kBatch = 1000;
  std::int64_t correct = 0;
  double loss_sum = 0;
  for (std::int64_t start = 0; start < total; start += kBatch) {
    const std::int64_t end = std::min(total, start + kBatch);
    torch::Tensor x = test_.inputs.slice(0, start, end).to(device_);
    torch::Tensor y = test_.labels.slice(0, start, end).to(device_);
    torch::Tensor logits = model.forward(x);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += logits.argmax(1).eq(y).sum().item<std::int64_t>();
  }
  model.train();
  EvalResult r;
  r.samples = total;
  r.accuracy = total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
  r.loss = total ? loss_sum / static_cast<double>(total) : 0.0;
  return r;
}

}  // namespace gradwire
