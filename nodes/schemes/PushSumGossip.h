// Stochastic Gradient Push (Assran et al., ICML 2019): decentralised training by push-sum
// gossip. Each worker keeps parameters x and a push-sum weight w (1 at the start); it computes
// gradients at the de-biased z = x / w, takes a local SGD step on x (momentum kept locally),
// then sends p*(x, w) to its out-peers of the time-varying exponential graph and keeps p*(x, w),
// p = 1/(peers + 1); when the messages of its in-peers for that step have arrived it adds them,
// sets z = x / w and continues. The sum of weights stays n and the nodes reach consensus.
//
// With a delay bound `tau` > 0 (overlap SGP, Assran et al. Sec. 3) a node at step t mixes the
// shares its in-peers sent at step t - tau instead of waiting for this step's: sending
// overlaps the next tau steps' computation, and a node waits only for a share that is tau
// steps old (so it runs at most tau steps ahead of an in-peer). Every share is mixed exactly
// tau steps late, the bound itself, which keeps runs deterministic; the paper's nodes also
// take younger shares that happen to have arrived. The shares of the last tau steps are
// never mixed: the run ends with them in the inboxes (unmixed_weight()).
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
  /// Largest delay bound `tau` a scenario may ask for.
  static constexpr int kMaxTau = 8;
  /// Delay bound (overlap SGP): after sending step t's shares a node mixes the shares its
  /// in-peers sent at step t - tau (none while t < tau) and goes on, so communication
  /// overlaps the next tau steps' computation instead of blocking it. 0: this step's shares.
  int tau = 0;
  /// The scenario said `overlap: true`, the older spelling of tau = 1 (tau is then 1); kept
  /// so such scenarios resolve as they always did.
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

  /// Sum of the push-sum weights held by the workers (stays n, up to messages in flight and
  /// shares not mixed yet).
  double total_weight() const;
  /// Sum of the push-sum weights of the shares that have arrived but are not mixed yet (with
  /// tau > 0, those of the last tau steps once training ends): with total_weight() it makes
  /// n when nothing is in flight.
  double unmixed_weight() const;

 private:
  /// The de-biased models z = x / w of the nodes that count (not gone), in rank order.
  std::vector<at::Tensor> live_models() const;
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
