#include "nodes/schemes/LeaderSgd.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "codecs/DenseCodec.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t { kLoss = 1, kParameters = 2 };
}

at::Tensor leader_pull(const at::Tensor& x, const at::Tensor& leader, double c) {
  return x * (1.0 - c) + leader * c;
}

struct LeaderSgd::Node {
  Worker* worker = nullptr;
  enum class Phase { kIdle, kLosses, kParameters } phase = Phase::kIdle;
  std::int64_t step = 0;
  bool global = false;
  int leader = -1;
  std::map<int, double> losses;  // participant -> loss, this round
  std::map<std::tuple<std::int64_t, std::uint32_t, std::uint32_t>, Message> inbox;  // (step, kind, source)
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

std::vector<int> LeaderSgd::participants(int rank, bool global) const {
  const int n = static_cast<int>(nodes_.size());
  std::vector<int> out;
  const int first = global ? 0 : rank / options_.group_size * options_.group_size;
  const int last = global ? n : std::min(n, first + options_.group_size);
  for (int r = first; r < last; ++r) out.push_back(r);
  return out;
}

void LeaderSgd::on_gradient(Worker& worker, const at::Tensor& gradient) {
  worker.ApplyGradient(gradient);  // the local step (momentum and weight decay as configured)
  const int rank = worker.rank();
  Node& node = *nodes_[rank];
  node.step = worker.steps_done();
  const std::int64_t done = node.step + 1;
  node.global = done % options_.g_comm == 0;
  if (!node.global && done % options_.l_comm != 0) {
    worker.FinishStep();
    return;
  }
  const std::vector<int> group = participants(rank, node.global);
  if (group.size() < 2) {
    worker.FinishStep();
    return;
  }
  node.phase = Node::Phase::kLosses;
  node.losses.clear();
  node.losses[rank] = worker.last_loss();
  Message m;
  m.kind = kLoss;
  m.round = node.global ? 1 : 0;
  m.step = static_cast<std::uint64_t>(node.step);
  const double loss = worker.last_loss();
  m.payload.resize(sizeof loss);
  std::memcpy(m.payload.data(), &loss, sizeof loss);
  for (int peer : group) {
    if (peer == rank) continue;
    Message copy = m;
    messengers_[rank]->Send(static_cast<std::uint32_t>(peer), std::move(copy));
  }
  advance(rank);
}

void LeaderSgd::on_message(int rank, Message&& message) {
  Node& node = *nodes_[rank];
  node.inbox.emplace(std::make_tuple(static_cast<std::int64_t>(message.step), message.kind,
                                     message.source),
                     std::move(message));
  advance(rank);
}

void LeaderSgd::advance(int rank) {
  Node& node = *nodes_[rank];
  const std::vector<int> group = participants(rank, node.global);
  if (node.phase == Node::Phase::kLosses) {
    for (int peer : group) {
      if (node.losses.count(peer)) continue;
      auto it = node.inbox.find(std::make_tuple(node.step, kLoss, static_cast<std::uint32_t>(peer)));
      if (it == node.inbox.end()) return;
      double loss = 0;
      if (it->second.payload.size() != sizeof loss) throw DecodeError("leader sgd: bad loss message");
      std::memcpy(&loss, it->second.payload.data(), sizeof loss);
      node.losses[peer] = loss;
      node.inbox.erase(it);
    }
    // Everyone sees the same losses, so everyone picks the same leader (ties: lowest rank).
    node.leader = group.front();
    for (int peer : group) {
      if (node.losses[peer] < node.losses[node.leader]) node.leader = peer;
    }
    if (node.leader == rank) {
      Message m;
      m.kind = kParameters;
      m.step = static_cast<std::uint64_t>(node.step);
      {
        WallClockAccount::Charge charge(account_);
        m.payload = DenseCodec::encode_dense(node.worker->Parameters());
      }
      for (int peer : group) {
        if (peer == rank) continue;
        Message copy = m;
        messengers_[rank]->Send(static_cast<std::uint32_t>(peer), std::move(copy));
      }
      node.phase = Node::Phase::kIdle;
      node.worker->FinishStep();
      return;
    }
    node.phase = Node::Phase::kParameters;
  }
  if (node.phase == Node::Phase::kParameters) {
    auto it = node.inbox.find(
        std::make_tuple(node.step, kParameters, static_cast<std::uint32_t>(node.leader)));
    if (it == node.inbox.end()) return;
    {
      WallClockAccount::Charge charge(account_);
      const at::Tensor leader = DenseCodec::decode_dense(it->second.payload);
      const at::Tensor x = node.worker->Parameters();
      if (leader.numel() != x.numel()) throw DecodeError("leader sgd: parameter count mismatch");
      node.worker->SetParameters(leader_pull(x, leader, node.global ? options_.c2 : options_.c1));
    }
    node.inbox.erase(it);
    node.phase = Node::Phase::kIdle;
    node.worker->FinishStep();
  }
}

at::Tensor LeaderSgd::evaluation_parameters() const {
  at::Tensor sum;
  for (const auto& node : nodes_) {
    at::Tensor x = node->worker->Parameters();
    sum = sum.defined() ? sum + x : x;
  }
  return sum / static_cast<double>(nodes_.size());
}

double LeaderSgd::consensus_distance() const {
  const at::Tensor mean = evaluation_parameters();
  double total = 0;
  for (const auto& node : nodes_) {
    total += (node->worker->Parameters() - mean).pow(2).sum().item<double>();
  }
  return total / static_cast<double>(nodes_.size());
}

}  // namespace gradwire
