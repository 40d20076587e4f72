#include "nodes/schemes/BucketedCollective.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

namespace gradwire {

struct BucketedCollective::RankState {
  std::int64_t step = -1;
  std::vector<at::Tensor> ready;  // per bucket: the released slice, until it is started
  int next = 0;                   // the bucket to start next
  bool in_flight = false;         // bucket next - 1... is in the inner collective
  bool pumping = false;
  at::Tensor update;              // the flat aggregate, filled bucket by bucket
  Done done;
};

BucketedCollective::BucketedCollective(std::vector<GradientBucket> buckets,
                                       std::vector<std::unique_ptr<Collective>> inner,
                                       std::int64_t numel)
    : buckets_(std::move(buckets)), inner_(std::move(inner)), numel_(numel) {
  if (buckets_.empty() || buckets_.size() != inner_.size()) {
    throw std::invalid_argument("BucketedCollective: need one inner collective per bucket");
  }
  std::int64_t covered = 0;
  for (const auto& b : buckets_) covered += b.numel;
  if (covered != numel_) {
    throw std::invalid_argument("BucketedCollective: buckets cover " + std::to_string(covered) +
                                " of " + std::to_string(numel_) + " elements");
  }
  for (int r = 0; r < inner_.front()->workers(); ++r) {
    ranks_.push_back(std::make_unique<RankState>());
  }
}

BucketedCollective::~BucketedCollective() = default;

int BucketedCollective::workers() const { return inner_.front()->workers(); }

void BucketedCollective::set_wall_account(WallClockAccount* account) {
  Collective::set_wall_account(account);
  for (auto& c : inner_) c->set_wall_account(account);
}

std::uint64_t BucketedCollective::encoded_bytes() const {
  std::uint64_t total = 0;
  for (const auto& c : inner_) total += c->encoded_bytes();
  return total;
}

std::uint64_t BucketedCollective::last_payload_bytes(int rank) const {
  std::uint64_t total = 0;
  for (const auto& c : inner_) total += c->last_payload_bytes(rank);
  return total;
}

void BucketedCollective::contribute(int rank, std::int64_t step, const at::Tensor& gradient,
                                    Done done) {
  // `gradient` is only lent for this call, and the buckets are read later: one copy.
  const at::Tensor own = gradient.clone();
  for (int b = 0; b < buckets(); ++b) {
    const GradientBucket& g = buckets_[static_cast<std::size_t>(b)];
    contribute_bucket(rank, step, b, own.slice(0, g.offset, g.offset + g.numel), done);
  }
}

void BucketedCollective::contribute_bucket(int rank, std::int64_t step, int bucket,
                                           const at::Tensor& slice, Done done) {
  RankState& s = *ranks_.at(static_cast<std::size_t>(rank));
  if (bucket < 0 || bucket >= buckets()) {
    throw std::logic_error("BucketedCollective: no bucket " + std::to_string(bucket));
  }
  const GradientBucket& g = buckets_[static_cast<std::size_t>(bucket)];
  if (slice.numel() != g.numel) {
    throw std::logic_error("BucketedCollective: bucket " + std::to_string(bucket) + " has " +
                           std::to_string(g.numel) + " elements, got " +
                           std::to_string(slice.numel()));
  }
  if (s.step != step) {
    if (s.next != 0 || s.in_flight) {
      throw std::logic_error("BucketedCollective: rank " + std::to_string(rank) +
                             " started step " + std::to_string(step) + " before finishing " +
                             std::to_string(s.step));
    }
    s.step = step;
    s.ready.assign(buckets_.size(), at::Tensor());
    s.update = at::empty({numel_}, at::kFloat);
  }
  if (s.ready[static_cast<std::size_t>(bucket)].defined() || bucket < s.next) {
    throw std::logic_error("BucketedCollective: bucket offered twice");
  }
  // Read when its turn comes; the worker leaves its gradient alone meanwhile (the contract).
  s.ready[static_cast<std::size_t>(bucket)] = slice;
  s.done = std::move(done);
  pump(rank);
}

void BucketedCollective::pump(int rank) {
  RankState& s = *ranks_[static_cast<std::size_t>(rank)];
  if (s.pumping) return;  // an inner collective finished inside contribute: the loop goes on
  s.pumping = true;
  while (!s.in_flight && s.next < buckets() && s.ready[static_cast<std::size_t>(s.next)].defined()) {
    const int b = s.next;
    at::Tensor slice = std::move(s.ready[static_cast<std::size_t>(b)]);
    s.ready[static_cast<std::size_t>(b)] = at::Tensor();
    s.in_flight = true;
    inner_[static_cast<std::size_t>(b)]->contribute(
        rank, s.step, slice,
        [this, rank, b](const at::Tensor& aggregate) { bucket_done(rank, b, aggregate); });
  }
  s.pumping = false;
}

void BucketedCollective::bucket_done(int rank, int bucket, const at::Tensor& aggregate) {
  RankState& s = *ranks_[static_cast<std::size_t>(rank)];
  const GradientBucket& g = buckets_[static_cast<std::size_t>(bucket)];
  s.update.slice(0, g.offset, g.offset + g.numel).copy_(aggregate);
  s.in_flight = false;
  s.next = bucket + 1;
  if (s.next == buckets()) {
    s.next = 0;
    s.step = -1;
    Done done = std::move(s.done);
    s.done = nullptr;
    at::Tensor update = std::move(s.update);
    done(update);
    return;
  }
  pump(rank);
}

}  // namespace gradwire
