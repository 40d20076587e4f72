#include "nodes/schemes/LeaderSgd.h"

#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "codecs/DenseCodec.h"
#include "nodes/schemes/ModelAverage.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t { kLoss = 1, kParameters = 2 };
// A parameters message's round says whose parameters it carries.
enum Carries : std::uint32_t { kGroupLeader = 0, kGlobalLeader = 1 };
}  // namespace

at::Tensor leader_pull(const at::Tensor& x, const at::Tensor& leader, double c) {
  return x * (1.0 - c) + leader * c;
}

at::Tensor leader_pulls(const at::Tensor& x, const at::Tensor& group_leader, double c1,
                        const at::Tensor& global_leader, double c2) {
  at::Tensor out = x.clone();
  if (c1 != 0.0) out -= (x - group_leader) * c1;
  if (c2 != 0.0) out -= (x - global_leader) * c2;
  return out;
}

struct LeaderSgd::Node {
  Worker* worker = nullptr;
  enum class Phase { kIdle, kLosses, kParameters } phase = Phase::kIdle;
  std::int64_t step = 0;
  bool local = false;   // a pull towards the group leader falls on this step
  bool global = false;  // a pull towards the global leader falls on this step
  int group_leader = -1;
  int global_leader = -1;
  std::map<int, double> losses;  // participant -> loss, this round
  at::Tensor group_parameters;   // the group leader's, once arrived
  at::Tensor global_parameters;  // the global leader's, once arrived
  // (step, kind, round, source) -> message that arrived before this node needed it.
  std::map<std::tuple<std::int64_t, std::uint32_t, std::uint32_t, std::uint32_t>, Message> inbox;
};

LeaderSgd::LeaderSgd(std::vector<Endpoint*> messengers, LeaderOptions options)
    : messengers_(std::move(messengers)), options_(options) {
  if (options_.l_comm < 1 || options_.g_comm < 1 || options_.group_size < 1) {
    throw std::invalid_argument("LeaderSgd: l_comm, g_comm and group_size must be >= 1");
  }
  for (std::size_t r = 0; r < messengers_.size(); ++r) {
    nodes_.push_back(std::make_unique<Node>());
    const int rank = static_cast<int>(r);
    messengers_[r]->SetHandler([this, rank](Message&& m) { on_message(rank, std::move(m)); });
  }
}

LeaderSgd::~LeaderSgd() = default;

void LeaderSgd::on_start(Worker& worker) {
  nodes_.at(static_cast<std::size_t>(worker.rank()))->worker = &worker;
}

void send_to_others(Endpoint& endpoint, int rank, const std::vector<int>& to,
                    const Message& message) {
  for (int peer : to) {
    if (peer == rank) continue;
    Message copy = message;
    endpoint.Send(static_cast<std::uint32_t>(peer), std::move(copy));
  }
}

std::vector<int> leader_group(int rank, int group_size, int n) {
  std::vector<int> out;
  const int first = rank / group_size * group_size;
  for (int r = first; r < std::min(n, first + group_size); ++r) out.push_back(r);
  return out;
}

std::vector<at::Tensor> worker_parameters(const std::vector<Worker*>& workers) {
  std::vector<at::Tensor> out;
  for (const Worker* worker : workers) out.push_back(worker->Parameters());
  return out;
}

std::vector<int> LeaderSgd::participants(int rank, bool global) const {
  const int n = static_cast<int>(nodes_.size());
  return global ? leader_group(0, n, n) : leader_group(rank, options_.group_size, n);
}

int LeaderSgd::lowest_loss(const Node& node, const std::vector<int>& among) const {
  // Everyone sees the same losses, so everyone picks the same leader (ties: lowest rank).
  int leader = among.front();
  for (int peer : among) {
    if (node.losses.at(peer) < node.losses.at(leader)) leader = peer;
  }
  return leader;
}

bool LeaderSgd::same_group(int a, int b) const {
  return a / options_.group_size == b / options_.group_size;
}

void LeaderSgd::send_parameters(int rank, const std::vector<int>& to, std::uint32_t carries,
                                const Message* relayed) {
  Message m;
  m.kind = kParameters;
  m.round = carries;
  m.step = static_cast<std::uint64_t>(nodes_[rank]->step);
  if (relayed != nullptr) {
    m.payload = relayed->payload;
  } else {
    WallClockAccount::Charge charge(account_);
    m.payload = DenseCodec::encode_dense(nodes_[rank]->worker->Parameters());
  }
  send_to_others(*messengers_[rank], rank, to, m);
}

void LeaderSgd::on_gradient(Worker& worker, const at::Tensor& gradient) {
  worker.ApplyGradient(gradient);  // the local step (momentum and weight decay as configured)
  const int rank = worker.rank();
  Node& node = *nodes_[rank];
  node.step = worker.steps_done();
  const std::int64_t done = node.step + 1;
  node.global = done % options_.g_comm == 0 && nodes_.size() >= 2;
  node.local = done % options_.l_comm == 0 && participants(rank, false).size() >= 2;
  if (!node.global && !node.local) {
    worker.FinishStep();
    return;
  }
  node.phase = Node::Phase::kLosses;
  node.losses.clear();
  node.losses[rank] = worker.last_loss();
  node.group_parameters = at::Tensor();
  node.global_parameters = at::Tensor();
  Message m;
  m.kind = kLoss;
  m.step = static_cast<std::uint64_t>(node.step);
  const double loss = worker.last_loss();
  m.payload.resize(sizeof loss);
  std::memcpy(m.payload.data(), &loss, sizeof loss);
  // A global pull needs every loss; each group's leader is then known from them too.
  send_to_others(*messengers_[rank], rank, participants(rank, node.global), m);
  advance(rank);
}

void LeaderSgd::on_message(int rank, Message&& message) {
  Node& node = *nodes_[rank];
  node.inbox.emplace(std::make_tuple(static_cast<std::int64_t>(message.step), message.kind,
                                     message.round, message.source),
                     std::move(message));
  advance(rank);
}

void LeaderSgd::advance(int rank) {
  Node& node = *nodes_[rank];
  const std::vector<int> group = participants(rank, false);
  if (node.phase == Node::Phase::kLosses) {
    for (int peer : participants(rank, node.global)) {
      if (node.losses.count(peer)) continue;
      auto it = node.inbox.find(
          std::make_tuple(node.step, kLoss, std::uint32_t{0}, static_cast<std::uint32_t>(peer)));
      if (it == node.inbox.end()) return;
      double loss = 0;
      if (it->second.payload.size() != sizeof loss) throw DecodeError("leader sgd: bad loss message");
      std::memcpy(&loss, it->second.payload.data(), sizeof loss);
      node.losses[peer] = loss;
      node.inbox.erase(it);
    }
    node.group_leader = lowest_loss(node, group);
    node.global_leader = node.global ? lowest_loss(node, participants(rank, true)) : -1;
    const int g = node.global_leader;
    if (node.global && rank == g) {
      // Through the group leaders: the global leader's own group directly, every other group
      // by one transfer to its leader, who passes it on within the group.
      std::vector<int> to = group;
      const int n = static_cast<int>(nodes_.size());
      for (int first = 0; first < n; first += options_.group_size) {
        if (same_group(first, rank)) continue;
        std::vector<int> other;
        for (int r = first; r < std::min(n, first + options_.group_size); ++r) other.push_back(r);
        to.push_back(lowest_loss(node, other));
      }
      send_parameters(rank, to, kGlobalLeader, nullptr);
    }
    // When the global leader leads this group too, its parameters serve both pulls.
    if (node.local && rank == node.group_leader && !(node.global && g == rank)) {
      send_parameters(rank, group, kGroupLeader, nullptr);
    }
    node.phase = Node::Phase::kParameters;
  }
  if (node.phase != Node::Phase::kParameters) return;
  const int g = node.global_leader;
  const int l = node.group_leader;
  const bool pulled_globally = node.global && rank != g;
  const bool pulled_locally = node.local && rank != l;
  if (pulled_globally && !node.global_parameters.defined()) {
    // From the global leader itself in its own group and at each group's leader, else from
    // the group's leader passing it on.
    const int source = same_group(g, rank) || rank == l ? g : l;
    auto it = node.inbox.find(std::make_tuple(node.step, kParameters, std::uint32_t{kGlobalLeader},
                                              static_cast<std::uint32_t>(source)));
    if (it == node.inbox.end()) return;
    if (rank == l && !same_group(g, rank)) send_parameters(rank, group, kGlobalLeader, &it->second);
    {
      WallClockAccount::Charge charge(account_);
      node.global_parameters = DenseCodec::decode_dense(it->second.payload);
    }
    node.inbox.erase(it);
  }
  const bool group_led_globally = node.global && l == g;
  if (pulled_locally && !group_led_globally && !node.group_parameters.defined()) {
    auto it = node.inbox.find(std::make_tuple(node.step, kParameters, std::uint32_t{kGroupLeader},
                                              static_cast<std::uint32_t>(l)));
    if (it == node.inbox.end()) return;
    WallClockAccount::Charge charge(account_);
    node.group_parameters = DenseCodec::decode_dense(it->second.payload);
    node.inbox.erase(it);
  }
  if (pulled_globally || pulled_locally) {
    WallClockAccount::Charge charge(account_);
    const at::Tensor x = node.worker->Parameters();
    const at::Tensor& local = group_led_globally ? node.global_parameters : node.group_parameters;
    for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&local, &node.global_parameters}) {
      if (t->defined() && t->numel() != x.numel()) {
        throw DecodeError("leader sgd: parameter count mismatch");
      }
    }
    // Both attractive forces in one update when both pulls fall on this step.
    node.worker->SetParameters(leader_pulls(x, local, pulled_locally ? options_.c1 : 0.0,
                                            node.global_parameters,
                                            pulled_globally ? options_.c2 : 0.0));
  }
  node.group_parameters = at::Tensor();
  node.global_parameters = at::Tensor();
  node.phase = Node::Phase::kIdle;
  node.worker->FinishStep();
}

std::vector<Worker*> LeaderSgd::workers() const {
  std::vector<Worker*> out;
  for (const auto& node : nodes_) out.push_back(node->worker);
  return out;
}

at::Tensor LeaderSgd::evaluation_parameters() const { return mean_of(worker_parameters(workers())); }

double LeaderSgd::consensus_distance() const {
  return distance_to_consensus(worker_parameters(workers()));
}

}  // namespace gradwire
