// The average of several workers' models and how far they are from it: what decentralised
// schemes evaluate (the average) and report as consensus distance (the mean squared distance).
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace gradwire {

/// The element-wise mean of `models` (flat parameter vectors of one length; at least one).
at::Tensor mean_of(const std::vector<at::Tensor>& models);
/// The mean over `models` of the squared L2 distance to their mean (the consensus distance).
double distance_to_consensus(const std::vector<at::Tensor>& models);

}  // namespace gradwire
