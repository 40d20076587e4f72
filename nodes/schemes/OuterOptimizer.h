// The outer optimiser of local-update training: after H local steps the participants'
// pseudo-gradient (start parameters minus end parameters, averaged) is applied to the
// round's start parameters as if it were a gradient, by SGD with an outer learning rate and
// optionally (Nesterov) momentum. Learning rate 1 without momentum is FedAvg (McMahan et al.,
// "Communication-Efficient Learning of Deep Networks from Decentralized Data", AISTATS 2017):
// the new model is the mean of the participants' models. With momentum it is FedAvgM (Hsu et
// al., "Measuring the Effects of Non-Identical Data Distribution for Federated Visual
// Classification", 2019); with Nesterov momentum 0.9 and learning rate 0.7 it is DiLoCo
// (Douillard et al., "DiLoCo: Distributed Low-Communication Training of Language Models",
// 2023). The update follows torch.optim.SGD: b = mu b + d; step = nesterov ? d + mu b : b.
#pragma once

#include <ATen/ATen.h>

namespace gradwire {

struct OuterOptimizerOptions {
  double lr = 1.0;
  double momentum = 0.0;
  bool nesterov = false;
};

class OuterOptimizer {
 public:
  explicit OuterOptimizer(OuterOptimizerOptions options) : options_(options) {}

  /// The new global parameters from the round's `start` and the aggregated
  /// `pseudo_gradient` (same shape). Updates the momentum buffer.
  at::Tensor step(const at::Tensor& start, const at::Tensor& pseudo_gradient);

 private:
  OuterOptimizerOptions options_;
  at::Tensor buffer_;  // momentum; undefined until the first step with momentum
};

}  // namespace gradwire
