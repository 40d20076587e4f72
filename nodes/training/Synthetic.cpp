// A seeded Gaussian-mixture classification task: quick to make, separable enough that a small
// MLP learns it in a few hundred steps, so tests and smoke runs need no dataset files.
#include "nodes/training/Dataset.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

namespace gradwire {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("synthetic dataset: " + message);
}

/// `n` samples of the mixture: a uniformly drawn class per sample, its mean plus N(0, I) noise.
Dataset draw(const at::Tensor& means, std::int64_t n, at::Generator& generator) {
  const std::int64_t classes = means.size(0);
  const std::int64_t features = means.size(1);
  Dataset out;
  out.classes = classes;
  out.sample_shape = {features};
  out.labels = at::randint(classes, {n}, generator, at::kLong);
  out.inputs = means.index_select(0, out.labels) + at::randn({n, features}, generator);
  return out;
}

}  // namespace

DatasetSplit make_synthetic(const SyntheticConfig& config, std::uint64_t seed) {
  require(config.classes >= 2, "classes must be at least 2");
  require(config.features >= 1, "features must be at least 1");
  require(config.train_samples >= 1, "train_samples must be at least 1");
  require(config.test_samples >= 0, "test_samples must not be negative");
  require(config.separation >= 0.0, "separation must not be negative");

  // A private generator rather than the global one: the data depend on `seed` alone, whatever
  // else has drawn from torch's global RNG before (model initialisation, other datasets).
  // CPU normal/randint draw serially from it, so the result is independent of thread count.
  at::Generator generator = at::detail::createCPUGenerator(seed);

  const at::Tensor means =
      at::randn({config.classes, config.features}, generator, at::kFloat) * config.separation;
  DatasetSplit split;
  split.train = draw(means, config.train_samples, generator);
  split.test = draw(means, config.test_samples, generator);
  return split;
}

}  // namespace gradwire
