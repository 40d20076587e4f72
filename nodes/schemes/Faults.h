// Workers that leave and rejoin ("faults"). Header only: the interface the fault-aware
// schemes implement and the record of what happened.
//
// Model (the same for ring, sync PS and gossip):
//  - Ground truth: at `leave_at` the worker's host stops (its Worker app stops stepping; what
//    arrives for it is dropped). Messages it sent before leaving still arrive.
//  - Detection: a party that waits for the worker (a ring rank for its predecessor's hop, the
//    server for a push, a gossip node for an in-peer's share) notices after `timeout` without
//    progress. Its failure detector is perfect but slow: at that moment it asks the ground truth
//    whether the peer it is missing is down (in a real system, a ping that gets no answer).
//    A slow but live peer is therefore never excluded; the wait is re-armed instead.
//  - Rejoin: at `rejoin_at` the worker's host comes back with nothing but its rank. It sends a
//    join request over the network; it is admitted from a later step and receives the current
//    parameters over the network (bytes on the wire) from a peer, then resumes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <ATen/core/Tensor.h>

namespace gradwire {

/// One fault event: "leave" (the host went down), "detected" (a survivor excluded it),
/// "rejoin" (the host came back and asked to join), "resume" (it received the parameters and
/// computes again from `step`).
struct FaultEvent {
  std::string kind;
  int rank = 0;
  double sim_time_s = 0;
  std::int64_t step = -1;  ///< the step the event applies from (-1: not step-bound)
};

using FaultLog = std::function<void(const FaultEvent&)>;

/// Timeout-driven fault handling a scheme offers to the Worker/Engine.
class FaultTolerant {
 public:
  /// `step` and `parameters` (flat float32 CPU) a rejoining worker resumes with.
  using Resume = std::function<void(std::int64_t step, const at::Tensor& parameters)>;

  virtual ~FaultTolerant() = default;
  /// Enables fault handling: waits are watched with `timeout_s`; events go to `log`.
  virtual void enable_faults(double timeout_s, FaultLog log) = 0;
  /// Rank's host is down from now on (ground truth, not yet known to anyone).
  virtual void leave(int rank) = 0;
  /// Rank's host is back; the scheme admits it and calls `resume` later in simulated time.
  virtual void rejoin(int rank, Resume resume) = 0;
  /// Where a donor's current parameters come from (synchronous collectives, which do not
  /// hold the replicas themselves).
  virtual void set_parameter_source(std::function<at::Tensor(int rank)> /*source*/) {}
};

}  // namespace gradwire
