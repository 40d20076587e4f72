// Splitting the training set between workers. Both splits use std::mt19937_64 seeded with the
// scenario seed, so a scenario always gives every worker the same samples.
#include "nodes/training/Partition.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace gradwire {

Shards partition_iid(std::int64_t samples, int workers, std::uint64_t seed) {
  if (workers < 1) throw std::invalid_argument("partition: workers must be at least 1");
  if (samples < workers) {
    throw std::invalid_argument("partition: " + std::to_string(samples) +
                                " samples cannot fill " + std::to_string(workers) + " shards");
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);

  // Equal shards keep synchronous workers in step (same number of batches per epoch); the
  // remainder of fewer than `workers` samples is left out.
  const auto per_worker = static_cast<std::size_t>(samples / workers);
  Shards shards(static_cast<std::size_t>(workers));
  for (std::size_t w = 0; w < shards.size(); ++w) {
    auto begin = order.begin() + static_cast<std::ptrdiff_t>(w * per_worker);
    shards[w].assign(begin, begin + static_cast<std::ptrdiff_t>(per_worker));
    // Sorted shards read as sets and keep memory access in order; ShardLoader shuffles anyway.
    std::sort(shards[w].begin(), shards[w].end());
  }
  return shards;
}

Shards partition_dirichlet(const at::Tensor& labels, std::int64_t classes, int workers,
                           double alpha, std::uint64_t seed) {
  if (workers < 1) throw std::invalid_argument("partition: workers must be at least 1");
  if (!(alpha > 0.0)) throw std::invalid_argument("partition: dirichlet alpha must be > 0");
  if (classes < 1) throw std::invalid_argument("partition: classes must be at least 1");
  if (!labels.defined() || labels.dim() != 1) {
    throw std::invalid_argument("partition: labels must be a 1-D tensor");
  }
  const std::int64_t samples = labels.size(0);
  if (samples < workers) {
    throw std::invalid_argument("partition: " + std::to_string(samples) +
                                " samples cannot fill " + std::to_string(workers) + " shards");
  }

  // Group sample indices by class.
  const at::Tensor flat = labels.to(at::kLong).contiguous();
  const auto* label_data = flat.data_ptr<std::int64_t>();
  std::vector<std::vector<std::int64_t>> by_class(static_cast<std::size_t>(classes));
  for (std::int64_t i = 0; i < samples; ++i) {
    const std::int64_t label = label_data[i];
    if (label < 0 || label >= classes) {
      throw std::invalid_argument("partition: label " + std::to_string(label) + " at index " +
                                  std::to_string(i) + " is outside [0, " +
                                  std::to_string(classes) + ")");
    }
    by_class[static_cast<std::size_t>(label)].push_back(i);
  }

  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gamma(alpha, 1.0);
  Shards shards(static_cast<std::size_t>(workers));
  std::vector<double> proportions(static_cast<std::size_t>(workers));
  for (auto& members : by_class) {
    std::shuffle(members.begin(), members.end(), rng);
    // Dirichlet(alpha) = independent Gamma(alpha, 1) draws, normalised.
    double total = 0.0;
    for (double& p : proportions) {
      p = gamma(rng);
      total += p;
    }
    if (!(total > 0.0)) {
      // With tiny alpha every gamma draw can underflow to 0; the limit of Dirichlet(alpha)
      // as alpha -> 0 puts all mass on one worker, so do exactly that.
      std::fill(proportions.begin(), proportions.end(), 0.0);
      proportions[std::uniform_int_distribution<std::size_t>(0, proportions.size() - 1)(rng)] = 1.0;
      total = 1.0;
    }
    // Cut the class's shuffled members at the rounded cumulative proportions: each member goes
    // to exactly one worker and the last cut is always at the end.
    const auto n = static_cast<double>(members.size());
    double cumulative = 0.0;
    std::size_t start = 0;
    for (std::size_t w = 0; w < shards.size(); ++w) {
      cumulative += proportions[w];
      const std::size_t end = (w + 1 == shards.size())
                                  ? members.size()
                                  : std::min(members.size(), static_cast<std::size_t>(
                                                                 n * cumulative / total + 0.5));
      if (end > start) {
        shards[w].insert(shards[w].end(), members.begin() + static_cast<std::ptrdiff_t>(start),
                         members.begin() + static_cast<std::ptrdiff_t>(end));
        start = end;
      }
    }
  }

  // A worker without samples could not compute a gradient at all; give it one from the
  // currently largest shard (lowest worker index on ties, for determinism).
  for (auto& shard : shards) {
    if (!shard.empty()) continue;
    auto largest = std::max_element(
        shards.begin(), shards.end(),
        [](const auto& a, const auto& b) { return a.size() < b.size(); });
    shard.push_back(largest->back());
    largest->pop_back();
  }
  for (auto& shard : shards) std::sort(shard.begin(), shard.end());
  return shards;
}

}  // namespace gradwire
