#include "nodes/schemes/ModelAverage.h"

#include <ATen/ATen.h>

namespace gradwire {

at::Tensor mean_of(const std::vector<at::Tensor>& models) {
  at::Tensor sum;
  for (const at::Tensor& x : models) sum = sum.defined() ? sum + x : x;
  return sum / static_cast<double>(models.size());
}

double distance_to_consensus(const std::vector<at::Tensor>& models) {
  const at::Tensor mean = mean_of(models);
  double total = 0;
  for (const at::Tensor& x : models) total += (x - mean).pow(2).sum().item<double>();
  return total / static_cast<double>(models.size());
}

}  // namespace gradwire
