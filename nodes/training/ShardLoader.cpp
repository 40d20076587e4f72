// Mini-batches from one worker's shard. The shard order is reshuffled at every epoch boundary
// from the loader's own seeded generator, so batches depend only on (shard, batch, seed); the
// same generator draws the crops and flips of an augmented image dataset.
#include "nodes/training/ShardLoader.h"

#include "nodes/training/ImageAugmentation.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace gradwire {

ShardLoader::ShardLoader(const Dataset& dataset, std::vector<std::int64_t> indices,
                         std::int64_t batch, std::uint64_t seed)
    : dataset_(dataset), indices_(std::move(indices)), batch_(batch), rng_(seed) {
  if (batch_ < 0) throw std::invalid_argument("ShardLoader: batch must not be negative");
  if (batch_ > 0 && indices_.empty()) {
    throw std::invalid_argument("ShardLoader: an empty shard cannot give batches");
  }
  const std::int64_t n = dataset_.size();
  for (std::int64_t index : indices_) {
    if (index < 0 || index >= n) {
      throw std::invalid_argument("ShardLoader: sample index " + std::to_string(index) +
                                  " is outside a dataset of " + std::to_string(n) + " samples");
    }
  }
  std::shuffle(indices_.begin(), indices_.end(), rng_);
}

std::pair<torch::Tensor, torch::Tensor> ShardLoader::next() {
  // Collect the batch's sample indices, starting a new shuffled epoch whenever the shard runs
  // out; a batch larger than the shard therefore spans several epochs.
  at::Tensor picked = at::empty({batch_}, at::kLong);
  auto* out = picked.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < batch_; ++i) {
    out[i] = indices_[static_cast<std::size_t>(cursor_)];
    if (++cursor_ == shard_size()) {
      // epoch() counts completed passes, so it advances as soon as the last sample is used.
      cursor_ = 0;
      ++epoch_;
      std::shuffle(indices_.begin(), indices_.end(), rng_);
    }
  }
  at::Tensor inputs = dataset_.inputs.index_select(0, picked);
  if (dataset_.augment) inputs = ImageAugmentation::crop_and_flip(inputs, rng_);
  return {inputs, dataset_.labels.index_select(0, picked)};
}

}  // namespace gradwire
