#include "sim/engine/Evaluation.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "nodes/training/Loss.h"
#include "nodes/training/Model.h"

namespace gradwire {

Evaluator::Evaluator(const Dataset& test, std::int64_t samples, torch::Device device)
    : test_(test), samples_(samples), device_(device) {}

EvalResult Evaluator::evaluate(Model& model) const {
  torch::NoGradGuard no_grad;
  model.eval();
  const std::int64_t total = samples_ > 0 ? std::min(samples_, test_.size()) : test_.size();
  // Language models predict every position: a batch of 1000 sequences would hold 1000 x T x
  // vocabulary logits, so they go in smaller batches.
  const std::int64_t batch = test_.tokens ? 50 : 1000;
  const bool top5 = test_.classes >= kTop5Classes;
  std::int64_t correct = 0;
  std::int64_t correct5 = 0;
  std::int64_t predictions = 0;
  double loss_sum = 0;
  for (std::int64_t start = 0; start < total; start += batch) {
    const std::int64_t end = std::min(total, start + batch);
    torch::Tensor x = test_.inputs.slice(0, start, end).to(device_);
    torch::Tensor y = test_.labels.slice(0, start, end).to(device_);
    torch::Tensor logits = model.forward(x);
    loss_sum += softmax_cross_entropy(logits, y, /*reduction_sum=*/true).item<double>();
    logits = logits.reshape({-1, logits.size(-1)});
    y = y.reshape({-1});
    predictions += y.numel();
    correct += logits.argmax(1).eq(y).sum().item<std::int64_t>();
    if (top5) {
      const torch::Tensor best5 = std::get<1>(logits.topk(5, 1));
      correct5 += best5.eq(y.unsqueeze(1)).any(1).sum().item<std::int64_t>();
    }
  }
  model.train();
  EvalResult r;
  r.samples = total;
  if (predictions > 0) {
    const double n = static_cast<double>(predictions);
    r.accuracy = static_cast<double>(correct) / n;
    if (top5) r.top5_accuracy = static_cast<double>(correct5) / n;
    r.loss = loss_sum / n;
    if (test_.tokens) r.perplexity = std::exp(r.loss);
  }
  return r;
}

}  // namespace gradwire
