// Gradient buckets as PyTorch DistributedDataParallel forms them: gradients are grouped in
// reverse parameter order (the order backward produces them), a bucket is closed as soon as
// its size reaches the cap, and the first bucket has a smaller cap so communication starts
// early. This is DDP's rule after its first iteration, when the Reducer rebuilds its buckets
// in gradient-ready order (torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size, with limits {first_bucket_bytes, bucket_cap}).
//
// Parameters are stored one after another in the flat gradient in forward order, so a bucket
// of consecutive parameters in reverse order is one contiguous range of the flat vector.
#pragma once

#include <cstdint>
#include <vector>

namespace gradwire {

/// Size caps in bytes. DDP's defaults: a 1 MiB first bucket, 25 MiB after.
struct BucketCaps {
  std::int64_t first_bytes = std::int64_t{1} << 20;
  std::int64_t bytes = std::int64_t{25} << 20;
};

/// One bucket: parameters [first_parameter, last_parameter] in forward order, which occupy
/// elements [offset, offset + numel) of the flat gradient.
struct GradientBucket {
  std::int64_t offset = 0;
  std::int64_t numel = 0;
  int first_parameter = 0;
  int last_parameter = 0;
};

/// Buckets in the order their gradients become ready (bucket 0 holds the last parameters).
/// `parameter_numels` in forward order; `element_bytes` is 4 for float32 gradients.
std::vector<GradientBucket> plan_buckets(const std::vector<std::int64_t>& parameter_numels,
                                         const BucketCaps& caps, std::int64_t element_bytes = 4);

/// One bucket holding the whole gradient (no overlap with backward).
std::vector<GradientBucket> single_bucket(const std::vector<std::int64_t>& parameter_numels);

}  // namespace gradwire
