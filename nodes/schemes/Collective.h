// How workers combine their gradients through the network. A collective is driven only by
// events: a worker contributes when its gradient is ready, messages arrive when ns-3 says so,
// and each worker is called back at the simulated instant it holds the aggregate. There is no
// global barrier, so the same machinery admits asynchronous and gossip schemes later.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "nodes/schemes/WallClockAccount.h"

namespace gradwire {

class Collective {
 public:
  /// Receives the mean of all workers' gradients (a fresh 1-D float32 CPU tensor, owned by the
  /// callee) for the step that was contributed. With partial participation
  /// (nodes/schemes/Participation.h) it is the mean over the updates the round applied, and an
  /// undefined tensor when the round applied none (the model stays as it is).
  using Done = std::function<void(const at::Tensor& mean_gradient)>;

  virtual ~Collective() = default;

  /// Worker `rank` offers its flat gradient for `step` (read during the call only; the
  /// collective encodes it with that worker's codec at once). `done` runs once, later in
  /// simulated time, when the aggregate for `step` has reached this worker.
  virtual void contribute(int rank, std::int64_t step, const at::Tensor& gradient, Done done) = 0;

  /// Gradient buckets this collective reduces one after another (1: the whole gradient).
  virtual int buckets() const { return 1; }

  /// Worker `rank` offers bucket `bucket` of its gradient for `step` at the instant backward
  /// completed it: a contiguous slice of the flat gradient, which the collective may hold until
  /// the bucket's turn comes (the caller must not change it). `done` runs once, when the
  /// aggregate of every bucket of `step` has reached this worker, with the whole flat mean
  /// gradient. A collective of one bucket takes the whole gradient here.
  virtual void contribute_bucket(int rank, std::int64_t step, int bucket,
                                 const at::Tensor& slice, Done done);

  /// Number of workers taking part.
  virtual int workers() const = 0;

  /// Partial participation: whether worker `rank` computes and contributes in `step` (true
  /// for every worker unless the collective samples its rounds).
  virtual bool takes_part(int /*rank*/, std::int64_t /*step*/) { return true; }

  /// Worker `rank` sits `step` out (takes_part was false, so it computed nothing). `done` runs
  /// once, when the round's aggregate reaches it, so every replica applies the same updates.
  virtual void sit_out(int rank, std::int64_t step, Done done);

  /// Where wall time spent encoding/decoding/aggregating is charged (may be null).
  virtual void set_wall_account(WallClockAccount* account) { account_ = account; }

  /// Total size of the payloads the workers' codecs produced (before any forwarding): the
  /// figure a compression ratio is computed from.
  virtual std::uint64_t encoded_bytes() const { return encoded_bytes_; }

  /// Size of the payload(s) worker `rank` encoded for its latest contribution (all rounds).
  virtual std::uint64_t last_payload_bytes(int rank) const {
    return rank >= 0 && static_cast<std::size_t>(rank) < last_payload_.size() ? last_payload_[rank] : 0;
  }

 protected:
  WallClockAccount* account_ = nullptr;
  std::uint64_t encoded_bytes_ = 0;
  std::vector<std::uint64_t> last_payload_;  // per rank; collectives size it

  /// Starts worker `rank`'s count for a new step.
  void reset_payload(int rank) {
    if (static_cast<std::size_t>(rank) >= last_payload_.size()) last_payload_.resize(rank + 1, 0);
    last_payload_[rank] = 0;
  }
  /// Adds one round's encoded bytes (multi-round codecs call this once per round).
  void count_payload(int rank, std::uint64_t bytes) {
    if (static_cast<std::size_t>(rank) >= last_payload_.size()) last_payload_.resize(rank + 1, 0);
    last_payload_[rank] += bytes;
    encoded_bytes_ += bytes;
  }
};

}  // namespace gradwire
