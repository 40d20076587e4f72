// Gradient buckets through a collective, as PyTorch DDP and Horovod overlap communication with
// backward: each bucket (nodes/training/GradientBuckets.h) is handed over the moment backward
// completes it, and the buckets pass through the collective one after another on each worker
// (one communication stream, as NCCL runs its operations in order): a worker starts bucket
// b + 1 when the aggregate of bucket b has reached it and bucket b + 1 is ready. When the last
// bucket's aggregate arrives, the worker gets the whole mean gradient.
//
// Every bucket has its own inner collective (ring, parameter server) with its own codec per
// worker, so codec state (error feedback, DGC's momentum, PowerSGD's factors, rounds of
// multi-round codecs) is per bucket, as DDP's communication hooks keep it. The inner
// collectives talk over their own channel of each host's endpoint
// (nodes/transport/EndpointChannels.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nodes/schemes/Collective.h"
#include "nodes/training/GradientBuckets.h"

namespace gradwire {

class BucketedCollective : public Collective {
 public:
  /// `inner[b]` reduces bucket `buckets[b]`; `numel` is the flat gradient's length.
  BucketedCollective(std::vector<GradientBucket> buckets,
                     std::vector<std::unique_ptr<Collective>> inner, std::int64_t numel);
  ~BucketedCollective() override;

  int buckets() const override { return static_cast<int>(buckets_.size()); }
  const GradientBucket& bucket(int b) const { return buckets_.at(static_cast<std::size_t>(b)); }
  /// Every bucket at once (the whole gradient ready together).
  void contribute(int rank, std::int64_t step, const at::Tensor& gradient, Done done) override;
  void contribute_bucket(int rank, std::int64_t step, int bucket, const at::Tensor& slice,
                         Done done) override;
  int workers() const override;

  void set_wall_account(WallClockAccount* account) override;
  std::uint64_t encoded_bytes() const override;
  std::uint64_t last_payload_bytes(int rank) const override;

 private:
  struct RankState;
  void pump(int rank);
  void bucket_done(int rank, int bucket, const at::Tensor& aggregate);

  std::vector<GradientBucket> buckets_;
  std::vector<std::unique_ptr<Collective>> inner_;
  std::int64_t numel_;
  std::vector<std::unique_ptr<RankState>> ranks_;
};

}  // namespace gradwire
