// Stochastic Gradient Push (Assran et al., ICML 2019): decentralised training by push-sum
// gossip. Each worker keeps parameters x and a push-sum weight w (1 at the start); it computes
// gradients at the de-biased z = x / w, takes a local SGD step on x (momentum kept locally),
// then sends p*(x, w) to its out-peers of the time-varying exponential graph and keeps p*(x, w),
// p = 1/(peers + 1); when the messages of its in-peers for that step have arrived it adds them,
// sets z = x / w and continues. The sum of weights stays n and the nodes reach consensus.
//
// With `overlap` (SGP's tau = 1) a node mixes the shares of the previous step instead of
// waiting for this step's: sending overlaps the next computation.
//
// What travels: each push is a `none`-codec payload of the n_params + 1 floats (p*x, p*w).
//
// Faults (nodes/schemes/Faults.h): a node waiting `timeout` for an in-peer's share pings it; a peer
// that is down is marked gone for everyone (simplification: the notice spreads instantly, no
// bytes simulated), after which nobody sends to it or waits for it, and a sender's mixing
// weight becomes 1/(live out-peers + 1). Mass a sender pushed to the peer before the notice is
// lost with it; both x and w lose the same shares, so the de-biased z = x / w stays a convex
// combination of the nodes' models and training goes on (the sum of weights drops below n).
// A share that arrives after its step was mixed is absorbed at the next mix (never lost).
// A rejoining node asks the lowest live node (the donor), which admits it from step
// s = (highest step of any node) + 2 and hands it half its (x, w) over the network, so the
// sum of weights is unchanged by a rejoin; the newcomer resumes at z = x / w of the donor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "nodes/schemes/ExponentialGraph.h"
#include "nodes/schemes/Faults.h"
#include "nodes/schemes/TrainingScheme.h"
#include "nodes/training/LearningRateSchedule.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class Endpoint;

struct PushSumOptions {
  int peers = 1;  ///< out-peers per step
  /// One-step overlap (SGP with tau = 1, Assran et al. Sec. 3): after sending step t's shares
  /// a node mixes the shares its in-peers sent at step t - 1 and goes on, so communication
  /// overlaps the next step's computation instead of blocking it.
  bool overlap = false;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  LearningRateSchedule lr;
};

class PushSumGossip : public TrainingScheme, public FaultTolerant {
 public:
  /// `messengers[r]` is worker r's messenger (must outlive the scheme).
  PushSumGossip(std::vector<Endpoint*> messengers, PushSumOptions options);
  ~PushSumGossip() override;

  void on_start(Worker& worker) override;
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;
  at::Tensor evaluation_parameters() const override;
  double consensus_distance() const override;
  FaultTolerant* faults() override { return this; }

  void enable_faults(double timeout_s, FaultLog log) override;
  void leave(int rank) override;
  void rejoin(int rank, Resume resume) override;

  /// Sum of the push-sum weights held by the workers (stays n, up to messages in flight).
  double total_weight() const;

 private:
  struct Node;
  void on_message(int rank, Message&& message);
  void try_mix(int rank);
  bool live_at(int rank, std::int64_t step) const;
  std::vector<int> live(std::vector<int> ranks, std::int64_t step) const;
  bool counts(int rank) const;  // in evaluation: up and not waiting to rejoin
  void watch(int rank, std::int64_t step);
  void on_join(int donor, int newcomer);

  std::vector<Endpoint*> messengers_;
  PushSumOptions options_;
  ExponentialGraph graph_;
  std::vector<std::unique_ptr<Node>> nodes_;

  bool faults_ = false;
  double timeout_s_ = 0;
  FaultLog log_;
  std::vector<bool> down_;                   // ground truth
  std::vector<bool> gone_;                   // known to be gone (from some step on)
  std::vector<std::int64_t> rejoined_from_;  // first step it takes part in again
  std::vector<Resume> resume_;
};

}  // namespace gradwire
