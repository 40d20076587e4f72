// Test-set evaluation of a model: accuracy and mean cross-entropy.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "nodes/training/Dataset.h"

namespace gradwire {

class Model;

struct EvalResult {
  double accuracy = 0;
  double loss = 0;
  std::int64_t samples = 0;
};

class Evaluator {
 public:
  /// `test` must outlive the evaluator; `samples` > 0 evaluates only the first samples.
  Evaluator(const Dataset& test, std::int64_t samples, torch::Device device);
  EvalResult evaluate(Model& model) const;

 private:
  const Dataset& test_;
  std::int64_t samples_;
  torch::Device device_;
};

}  // namespace gradwire
