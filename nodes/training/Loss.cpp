// Cross-entropy for classifiers and language models alike: a language model's logits are
// flattened to one prediction per token, which is what perplexity is computed from.
#include "nodes/training/Loss.h"

#include <stdexcept>
#include <string>

#include <torch/nn/functional/loss.h>

namespace gradwire {

torch::Tensor softmax_cross_entropy(const torch::Tensor& logits, const torch::Tensor& labels,
                                 bool reduction_sum) {
  namespace F = torch::nn::functional;
  auto options = F::CrossEntropyFuncOptions();
  if (reduction_sum) options.reduction(torch::kSum);
  if (logits.dim() == labels.dim() + 1 && logits.dim() >= 3) {
    return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}), options);
  }
  if (logits.dim() != 2 || labels.dim() != 1) {
    throw std::invalid_argument("softmax_cross_entropy: logits of " + std::to_string(logits.dim()) +
                                " dimensions do not pair with labels of " +
                                std::to_string(labels.dim()));
  }
  return F::cross_entropy(logits, labels, options);
}

}  // namespace gradwire
