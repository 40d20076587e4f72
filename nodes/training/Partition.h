// How the training set is split between workers: each worker trains on its own shard.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace gradwire {

using Shards = std::vector<std::vector<std::int64_t>>;  ///< per worker: sample indices

/// Shuffles (seeded) and deals equal shards; every sample lands in at most one shard.
Shards partition_iid(std::int64_t samples, int workers, std::uint64_t seed);

/// Non-IID split as in federated studies (Hsu et al. 2019): for each class, proportions over
/// workers ~ Dirichlet(alpha); small alpha -> skewed label mixes. Every sample is assigned to
/// exactly one worker; a worker that would get no sample receives one from the largest shard.
Shards partition_dirichlet(const torch::Tensor& labels, std::int64_t classes, int workers,
                           double alpha, std::uint64_t seed);

}  // namespace gradwire
