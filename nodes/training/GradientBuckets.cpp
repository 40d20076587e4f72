#include "nodes/training/GradientBuckets.h"

#include <stdexcept>

namespace gradwire {

namespace {
std::vector<std::int64_t> offsets_of(const std::vector<std::int64_t>& numels) {
  std::vector<std::int64_t> offsets(numels.size() + 1, 0);
  for (std::size_t i = 0; i < numels.size(); ++i) offsets[i + 1] = offsets[i] + numels[i];
  return offsets;
}
}  // namespace

std::vector<GradientBucket> plan_buckets(const std::vector<std::int64_t>& parameter_numels,
                                         const BucketCaps& caps, std::int64_t element_bytes) {
  if (caps.first_bytes <= 0 || caps.bytes <= 0 || element_bytes <= 0) {
    throw std::invalid_argument("plan_buckets: caps and element size must be positive");
  }
  const auto offsets = offsets_of(parameter_numels);
  std::vector<GradientBucket> buckets;
  const int count = static_cast<int>(parameter_numels.size());
  std::int64_t limit = caps.first_bytes;
  std::int64_t size = 0;
  int last = count - 1;  // the bucket being filled ends at this parameter
  for (int p = count - 1; p >= 0; --p) {
    size += parameter_numels[static_cast<std::size_t>(p)] * element_bytes;
    // DDP closes a bucket once it reaches its cap (the parameter that crosses it stays in).
    if (size >= limit || p == 0) {
      GradientBucket b;
      b.first_parameter = p;
      b.last_parameter = last;
      b.offset = offsets[static_cast<std::size_t>(p)];
      b.numel = offsets[static_cast<std::size_t>(last) + 1] - b.offset;
      buckets.push_back(b);
      size = 0;
      last = p - 1;
      limit = caps.bytes;
    }
  }
  return buckets;
}

std::vector<GradientBucket> single_bucket(const std::vector<std::int64_t>& parameter_numels) {
  const auto offsets = offsets_of(parameter_numels);
  GradientBucket b;
  b.first_parameter = 0;
  b.last_parameter = static_cast<int>(parameter_numels.size()) - 1;
  b.offset = 0;
  b.numel = offsets.back();
  return {b};
}

}  // namespace gradwire
