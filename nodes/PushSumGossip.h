// Stochastic Gradient Push (Assran et al., ICML 2019): decentralised training by push-sum
// gossip. Each worker keeps parameters x and a push-sum weight w (1 at the start); it computes
// gradients at the de-biased z = x / w, takes a local SGD step on x (momentum kept locally),
// then sends p*(x, w) to its out-peers of the time-varying exponential graph and keeps p*(x, w),
// p = 1/(peers + 1); when the messages of its in-peers for that step have arrived it adds them,
// sets z = x / w and continues. The sum of weights stays n and the nodes reach consensus.
//
// What travels: each push is a `none`-codec payload of the n_params + 1 floats (p*x, p*w).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "nodes/ExponentialGraph.h"
#include "nodes/LearningRateSchedule.h"
#include "nodes/Message.h"
#include "nodes/TrainingScheme.h"

namespace gradwire {

class Endpoint;

struct PushSumOptions {
  int peers = 1;  ///< out-peers per step
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  LearningRateSchedule lr;
};

class PushSumGossip : public TrainingScheme {
 public:
  /// `messengers[r]` is worker r's messenger (must outlive the scheme).
  PushSumGossip(std::vector<Endpoint*> messengers, PushSumOptions options);
  ~PushSumGossip() override;

  void on_start(Worker& worker) override;
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;
  at::Tensor evaluation_parameters() const override;
  double consensus_distance() const override;

  /// Sum of the push-sum weights held by the workers (stays n, up to messages in flight).
  double total_weight() const;

 private:
  struct Node;
  void on_message(int rank, Message&& message);
  void try_mix(int rank);

  std::vector<Endpoint*> messengers_;
  PushSumOptions options_;
  ExponentialGraph graph_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace gradwire
