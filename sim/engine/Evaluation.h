// Test-set evaluation of a model: top-1 (and top-5) accuracy and mean cross-entropy for
// classifiers; for language models the same per token, and perplexity.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "nodes/training/Dataset.h"

namespace gradwire {

class Model;

struct EvalResult {
  double accuracy = 0;       ///< top-1; next-token accuracy for language models
  double top5_accuracy = -1; ///< < 0 when not measured (fewer than 10 classes)
  double loss = 0;           ///< mean cross-entropy per sample (per token for language models)
  double perplexity = -1;    ///< exp(loss) for language models; < 0 otherwise
  std::int64_t samples = 0;
};

class Evaluator {
 public:
  /// `test` must outlive the evaluator; `samples` > 0 evaluates only the first samples.
  Evaluator(const Dataset& test, std::int64_t samples, torch::Device device);
  EvalResult evaluate(Model& model) const;

  /// Whether top-5 accuracy is measured: with at least this many classes.
  static constexpr std::int64_t kTop5Classes = 10;

 private:
  const Dataset& test_;
  std::int64_t samples_;
  torch::Device device_;
};

}  // namespace gradwire
