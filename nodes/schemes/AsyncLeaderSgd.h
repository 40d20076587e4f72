// Asynchronous Leader SGD (Teng et al., "Leader Stochastic Gradient Descent for Distributed
// Training of Deep Learning Models", NeurIPS 2019, whose experiments run an asynchronous,
// multi-leader implementation): workers never wait for each other. Each worker takes its local
// steps and, on its own schedule, every `l_comm` steps pulls towards the parameters of its
// group's leader that it last received, and every `g_comm` steps towards the global leader's,
// x = x - c1 (x - x_group_leader_known) - c2 (x - x_global_leader_known) (both forces in one
// update when both fall on a step, as in the synchronous version). The leaders' parameters and
// the workers' losses travel through the network in the background and replace the known
// copies when they arrive.
//
// The paper's text was not reachable here beyond its abstract, and the authors' public code
// has a central server decide, from the total count of iterations, when the workers exchange
// losses and the leader broadcasts. gradwire's reading, with no server and nobody waiting:
// - At each of its pull steps a worker reports its recent loss (the mean training loss of its
//   steps since its last report; the paper's code compares running averages too) to every
//   other worker: a few bytes each. Every worker thus keeps the last reported loss of each
//   worker.
// - A worker leads a scope (its group, or all workers) when it has heard from every member of
//   the scope and its fresh loss is the lowest of its own and the others' last reported ones
//   (ties: the lowest rank). Whoever leads sends its parameters: a group leader to its group
//   at a group step, a global leader at a global step to its own group (who also take them as
//   their group leader's) and once to the leader it knows of each other group, who passes
//   them on within its group (one transfer per group, as in the synchronous version).
// - The leader does not pull towards the scope it leads. A worker pulls towards whatever copy
//   it holds, however old: before the first copy arrives there is nothing to pull towards.
//   Losses are compared as they are known, so two workers can both claim a round; each
//   receiver keeps the copy that arrived last.
// A straggler therefore holds nobody back: its reports arrive late and its parameters are
// pulled towards what the fast workers sent (and are seldom anyone's leader).
#pragma once

#include <memory>
#include <vector>

#include "nodes/schemes/LeaderSgd.h"
#include "nodes/schemes/TrainingScheme.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class Endpoint;

class AsyncLeaderSgd : public TrainingScheme {
 public:
  AsyncLeaderSgd(std::vector<Endpoint*> messengers, LeaderOptions options);
  ~AsyncLeaderSgd() override;

  void on_start(Worker& worker) override;
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;
  at::Tensor evaluation_parameters() const override;
  double consensus_distance() const override;

 private:
  struct Node;
  void on_message(int rank, Message&& message);
  std::vector<int> group_of(int rank) const;
  std::vector<int> everyone() const;
  /// Whether `rank` leads `among` by the losses it knows (every member's must be known).
  bool leads(int rank, const std::vector<int>& among) const;
  /// The member of `among` with the lowest loss `rank` knows (ties: the lowest rank).
  int lowest_known(int rank, const std::vector<int>& among) const;
  void send(int rank, const std::vector<int>& to, const Message& message);
  std::vector<Worker*> workers() const;

  std::vector<Endpoint*> messengers_;
  LeaderOptions options_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace gradwire
