// The training objective: cross-entropy of a model's logits against the dataset's labels, for
// classifiers ([batch, classes] against [batch]) and language models ([batch, time, vocabulary]
// against [batch, time], averaged over every token).
#pragma once

#include <torch/types.h>

namespace gradwire {

/// Mean cross-entropy; `reduction_sum` gives the sum instead (for evaluation over many
/// batches). Throws std::invalid_argument when the shapes do not pair up.
torch::Tensor softmax_cross_entropy(const torch::Tensor& logits, const torch::Tensor& labels,
                                 bool reduction_sum = false);

}  // namespace gradwire
