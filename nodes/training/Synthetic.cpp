// Seeded synthetic tasks, so tests and smoke runs need no dataset files: a Gaussian mixture
// separable enough that a small MLP learns it in a few hundred steps, and token text from a
// sparse Markov chain that a small language model learns as quickly.
#include "nodes/training/Dataset.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

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

// The Markov chain: each token's likely successors share most of the probability mass; the
// rest is spread uniformly, so every transition stays possible.
constexpr std::int64_t kSuccessors = 4;
constexpr double kSuccessorMass[kSuccessors] = {0.45, 0.25, 0.12, 0.08};
constexpr double kUniformMass = 0.1;

/// Windows of seq_len + 1 tokens with stride seq_len, as load_text cuts text.
Dataset token_sequences(const at::Tensor& stream, std::int64_t count, std::int64_t seq_len,
                        std::int64_t vocab) {
  Dataset out;
  out.inputs = stream.narrow(0, 0, count * seq_len).view({count, seq_len}).clone();
  out.labels = stream.narrow(0, 1, count * seq_len).view({count, seq_len}).clone();
  out.classes = vocab;
  out.sample_shape = {seq_len};
  out.tokens = true;
  out.vocabulary.reserve(static_cast<std::size_t>(vocab));
  for (std::int64_t t = 0; t < vocab; ++t) out.vocabulary.push_back("t" + std::to_string(t));
  return out;
}

/// One stream long enough for both parts, the test part continuing where training ends.
DatasetSplit make_tokens(const SyntheticConfig& config, at::Generator& generator) {
  const std::int64_t vocab = config.vocab;
  const std::int64_t train_length = config.train_samples * config.seq_len + 1;
  const std::int64_t test_length = config.test_samples * config.seq_len + 1;
  const at::Tensor successors = at::randint(vocab, {vocab, kSuccessors}, generator, at::kLong);
  // One uniform draw per token picks a successor or, past their mass, a uniform token.
  const at::Tensor draws = at::rand({train_length + test_length}, generator, at::kDouble);
  at::Tensor stream = at::empty({train_length + test_length}, at::kLong);
  const auto next = successors.accessor<std::int64_t, 2>();
  const auto u = draws.accessor<double, 1>();
  auto out = stream.accessor<std::int64_t, 1>();
  std::int64_t token = std::min(vocab - 1, static_cast<std::int64_t>(u[0] * vocab));
  out[0] = token;
  for (std::int64_t i = 1; i < stream.size(0); ++i) {
    double r = u[i];
    std::int64_t chosen = -1;
    for (std::int64_t s = 0; s < kSuccessors && chosen < 0; ++s) {
      if (r < kSuccessorMass[s]) chosen = next[token][s];
      r -= kSuccessorMass[s];
    }
    if (chosen < 0) {
      chosen = std::min(vocab - 1, static_cast<std::int64_t>(r / kUniformMass * vocab));
    }
    token = chosen;
    out[i] = token;
  }
  DatasetSplit split;
  split.train = token_sequences(stream.narrow(0, 0, train_length), config.train_samples,
                                config.seq_len, vocab);
  split.test = token_sequences(stream.narrow(0, train_length, test_length), config.test_samples,
                               config.seq_len, vocab);
  return split;
}

}  // namespace

DatasetSplit make_synthetic(const SyntheticConfig& config, std::uint64_t seed) {
  const bool tokens = config.vocab != 0;
  if (tokens) {
    require(config.vocab >= 2, "vocab must be at least 2 (or 0 for labelled samples)");
    require(config.seq_len >= 1, "seq_len must be at least 1");
  } else {
    require(config.classes >= 2, "classes must be at least 2");
    if (config.shape.empty()) require(config.features >= 1, "features must be at least 1");
    for (std::int64_t d : config.shape) require(d >= 1, "shape dimensions must be at least 1");
    require(config.separation >= 0.0, "separation must not be negative");
  }
  require(config.train_samples >= 1, "train_samples must be at least 1");
  require(config.test_samples >= 0, "test_samples must not be negative");

  // A private generator rather than the global one: the data depend on `seed` alone, whatever
  // else has drawn from torch's global RNG before (model initialisation, other datasets).
  // CPU normal/randint/uniform draw serially from it, so the result is independent of thread
  // count.
  at::Generator generator = at::detail::createCPUGenerator(seed);
  if (tokens) return make_tokens(config, generator);

  const std::int64_t features =
      config.shape.empty() ? config.features
                           : std::accumulate(config.shape.begin(), config.shape.end(),
                                             std::int64_t{1}, std::multiplies<>());
  const at::Tensor means =
      at::randn({config.classes, features}, generator, at::kFloat) * config.separation;
  DatasetSplit split;
  split.train = draw(means, config.train_samples, generator);
  split.test = draw(means, config.test_samples, generator);
  if (!config.shape.empty()) {
    for (Dataset* part : {&split.train, &split.test}) {
      std::vector<std::int64_t> sizes = {part->size()};
      sizes.insert(sizes.end(), config.shape.begin(), config.shape.end());
      part->inputs = part->inputs.view(sizes);
      part->sample_shape = config.shape;
    }
  }
  return split;
}

}  // namespace gradwire
