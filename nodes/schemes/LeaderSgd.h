// Leader SGD (Teng et al., "Leader Stochastic Gradient Descent for Distributed Training of
// Deep Learning Models", NeurIPS 2019; multi-leader variant): workers take local SGD steps and
// every `l_comm` steps are pulled towards the leader of their group (the member with the lowest
// recent training loss), x = (1 - c1) x + c1 x_leader, and every `g_comm` steps towards the
// global leader with c2. When both fall on one step, both attractive forces act in one update,
// x = x - c1 (x - x_group_leader) - c2 (x - x_global_leader), as in the paper's multi-leader
// update. To find the leaders, participants exchange their loss (a few bytes; all of them on a
// global step, from which each group's leader is known too); then only leaders' parameters
// travel. The global leader's go through the group leaders: the global leader sends them to its
// own group and once to each other group's leader, who passes them on within its group.
// This is the synchronous version: at each pull step the group waits for the losses and the
// leaders' parameters. `mode: async` runs AsyncLeaderSgd (nobody waits).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "nodes/schemes/TrainingScheme.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class Endpoint;
class Worker;

struct LeaderOptions {
  std::int64_t l_comm = 16;  ///< steps between pulls towards the group leader
  std::int64_t g_comm = 64;  ///< steps between pulls towards the global leader
  double c1 = 0.5;           ///< pull strength towards the group leader
  double c2 = 0.5;           ///< pull strength towards the global leader
  int group_size = 4;        ///< consecutive ranks form a group (e.g. one site or machine)
  bool async = false;        ///< topology.mode async: AsyncLeaderSgd (the mode, not a key)
};

/// Sends a copy of `message` through `rank`'s endpoint to each of `to` but `rank` itself.
void send_to_others(Endpoint& endpoint, int rank, const std::vector<int>& to,
                    const Message& message);
/// The ranks of `rank`'s group: consecutive ranks, `group_size` to a group, of `n` workers.
std::vector<int> leader_group(int rank, int group_size, int n);
/// Each worker's flat parameters, in rank order (their mean is the evaluated model).
std::vector<at::Tensor> worker_parameters(const std::vector<Worker*>& workers);

/// The pull of Leader SGD: (1 - c) x + c x_leader.
at::Tensor leader_pull(const at::Tensor& x, const at::Tensor& leader, double c);
/// Both pulls in one update: x - c1 (x - group_leader) - c2 (x - global_leader); a term whose
/// coefficient is 0 is left out (its leader may then be undefined).
at::Tensor leader_pulls(const at::Tensor& x, const at::Tensor& group_leader, double c1,
                        const at::Tensor& global_leader, double c2);

class LeaderSgd : public TrainingScheme {
 public:
  LeaderSgd(std::vector<Endpoint*> messengers, LeaderOptions options);
  ~LeaderSgd() override;

  void on_start(Worker& worker) override;
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;
  at::Tensor evaluation_parameters() const override;
  double consensus_distance() const override;

 private:
  struct Node;
  void on_message(int rank, Message&& message);
  void advance(int rank);
  std::vector<int> participants(int rank, bool global) const;
  /// The member of `among` with the lowest loss this round (ties: the lowest rank).
  int lowest_loss(const Node& node, const std::vector<int>& among) const;
  bool same_group(int a, int b) const;
  /// Sends rank's parameters (or, `relayed`, those a message carried) to `to` but itself.
  void send_parameters(int rank, const std::vector<int>& to, std::uint32_t carries,
                       const Message* relayed);
  std::vector<Worker*> workers() const;

  std::vector<Endpoint*> messengers_;
  LeaderOptions options_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace gradwire
