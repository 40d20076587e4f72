// Local-update training: every worker takes `local_steps` (H) optimizer steps on its own shard,
// then the participants' pseudo-gradients (the round's start parameters minus their current
// parameters) go through a Collective (parameter server or ring all-reduce, with any codec the
// scenario names, so a compressed pseudo-gradient is a codec choice) and every worker applies
// the same outer optimiser step (nodes/schemes/OuterOptimizer.h) to the round's start. This is
// local SGD / FedAvg (outer lr 1, no momentum), FedAvgM and DiLoCo (outer momentum, Nesterov).
//
// Streaming DiLoCo (Douillard et al., "Streaming DiLoCo with overlapping communication:
// Towards a Distributed Free Lunch", 2025): the parameters are split into P fragments
// (contiguous groups of parameter tensors, one collective and codec state each) and fragment p
// is synchronised every H steps, shifted by p H / P steps, so the traffic of a round is spread
// over it. Without `overlap` a worker waits at the end of a step until the fragments it sent
// are back; with it, the worker goes on computing and merges a fragment when it arrives,
// keeping the local progress it made meanwhile (global + (now - at send)). With one fragment
// and no overlap the schedule is DiLoCo's.
//
// Participants: each delta is weighted by its worker's samples over the participants' samples
// (FedAvg's n_k / n), applied before encoding so that the collective's mean is the weighted
// mean; equal shards leave the delta untouched.
//
// Partial participation (nodes/schemes/Participation.h; parameter server, one fragment, no
// overlap): round r spans local steps r H to (r + 1) H - 1 and starts when round r - 1's result
// leaves the server (round 0: when the workers start); its clients are sampled then. Only they
// train their H local steps and send their pseudo-gradient, weighted by their samples over the
// sampled clients' samples. A client that is not sampled computes nothing: it sits out the
// round's steps at once and waits at its last step for the round's result. The server
// aggregates the updates that count (the mean over them) and every worker applies the outer
// step to the round's start; a round that applied none leaves the model (and the outer
// momentum) as it was, and a client whose update did not count drops its local progress.
// Without participation every worker takes part in every round.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nodes/schemes/OuterOptimizer.h"
#include "nodes/schemes/TrainingScheme.h"
#include "nodes/training/GradientBuckets.h"

namespace gradwire {

class Collective;
class EndpointChannels;
class Participation;

struct LocalOptions {
  std::int64_t local_steps = 8;   ///< H: local steps per round
  std::string aggregation = "ps";  ///< "ps" or "ring"
  double outer_lr = 1.0;
  double outer_momentum = 0.0;
  bool outer_nesterov = false;
  std::int64_t fragments = 1;     ///< P: fragments synchronised on staggered schedules
  bool overlap = false;           ///< keep computing while a fragment is in flight
};

/// Per participant: the factor its delta is scaled by before the collective averages, its
/// samples over the participants' mean samples, so that the mean of the scaled deltas is
/// FedAvg's sum_k n_k d_k / sum_k n_k. All 1 (exactly) when the samples are equal.
std::vector<double> sample_weights(const std::vector<std::int64_t>& samples);

/// The parameters cut into `fragments` contiguous groups of whole tensors (forward order) of
/// about equal size. `parameter_numels` in forward order; needs 1 <= fragments <= tensors.
std::vector<GradientBucket> plan_fragments(const std::vector<std::int64_t>& parameter_numels,
                                           int fragments);

class LocalSgd : public TrainingScheme {
 public:
  /// `collectives[p]` reduces fragment `fragments[p]`'s pseudo-gradients (they may talk over
  /// `channels`, which the scheme keeps alive for them); `samples[r]`: worker r's training
  /// samples. `participation` (may be null: every worker, every round) samples the rounds; it
  /// needs one fragment, no overlap, and must be the one the collective samples with.
  LocalSgd(std::vector<GradientBucket> fragments,
           std::vector<std::unique_ptr<EndpointChannels>> channels,
           std::vector<std::unique_ptr<Collective>> collectives, std::vector<std::int64_t> samples,
           LocalOptions options, Participation* participation = nullptr);
  ~LocalSgd() override;

  void on_start(Worker& worker) override;
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;
  /// With participation: whether the worker was sampled for the round of its current step.
  bool computes(Worker& worker) override;
  void on_sit_out(Worker& worker) override;
  /// The global model (the outer optimiser's latest parameters, as worker 0 holds them).
  at::Tensor evaluation_parameters() const override;
  double consensus_distance() const override;

  /// Whether fragment `fragment` is synchronised when a worker has done `steps` local steps.
  bool due(int fragment, std::int64_t steps) const;

 private:
  struct Node;
  void advance(int rank);
  void send(int rank, int fragment);
  void arrive(int rank, int fragment, const at::Tensor& aggregate);

  std::vector<GradientBucket> fragments_;
  std::vector<std::int64_t> offsets_;  // per fragment: the schedule's shift in steps
  std::vector<std::unique_ptr<EndpointChannels>> channels_;  // outlive the collectives
  std::vector<std::unique_ptr<Collective>> collectives_;
  std::vector<std::int64_t> samples_;  // per worker
  std::vector<double> weights_;  // per worker (sample_weights over all workers)
  Participation* participation_ = nullptr;
  LocalOptions options_;
  std::vector<std::unique_ptr<Node>> nodes_;
  bool accounts_set_ = false;
};

}  // namespace gradwire
