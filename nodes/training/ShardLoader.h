// Mini-batches from one worker's shard, reshuffled (seeded) at every epoch boundary, with the
// dataset's training augmentation applied.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "nodes/training/Dataset.h"

namespace gradwire {

class ShardLoader {
 public:
  /// `dataset` must outlive the loader. `indices` may be empty only if batch is 0.
  ShardLoader(const Dataset& dataset, std::vector<std::int64_t> indices, std::int64_t batch,
              std::uint64_t seed);

  /// Next (inputs, labels) batch; wraps around to a new shuffled epoch when exhausted.
  std::pair<torch::Tensor, torch::Tensor> next();

  std::int64_t epoch() const { return epoch_; }
  std::int64_t shard_size() const { return static_cast<std::int64_t>(indices_.size()); }

 private:
  const Dataset& dataset_;
  std::vector<std::int64_t> indices_;
  std::int64_t batch_;
  std::int64_t cursor_ = 0;
  std::int64_t epoch_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace gradwire
