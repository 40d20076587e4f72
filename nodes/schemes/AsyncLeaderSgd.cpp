#include "nodes/schemes/AsyncLeaderSgd.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <stdexcept>

#include <ATen/ATen.h>

#include "codecs/DenseCodec.h"
#include "common/DecodeError.h"
#include "nodes/schemes/ModelAverage.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t { kLoss = 1, kParameters = 2 };
// A parameters message's round says whose parameters it carries and how they came: a group
// leader's; the global leader's from the global leader itself; or the global leader's passed
// on by the member of this group it was sent to.
enum Carries : std::uint32_t { kGroupLeader = 0, kGlobalLeader = 1, kGlobalRelayed = 2 };
}  // namespace

struct AsyncLeaderSgd::Node {
  Worker* worker = nullptr;
  /// Per rank: the last loss it reported (NaN: none yet); this node's own is its latest.
  std::vector<double> losses;
  double loss_sum = 0;  // own training losses since the last report
  int loss_count = 0;
  /// The last received leaders' parameters, encoded, and decoded once needed.
  std::vector<std::uint8_t> group_payload, global_payload;
  at::Tensor group_parameters, global_parameters;
};

AsyncLeaderSgd::AsyncLeaderSgd(std::vector<Endpoint*> messengers, LeaderOptions options)
    : messengers_(std::move(messengers)), options_(options) {
  if (options_.l_comm < 1 || options_.g_comm < 1 || options_.group_size < 1) {
    throw std::invalid_argument("AsyncLeaderSgd: l_comm, g_comm and group_size must be >= 1");
  }
  for (std::size_t r = 0; r < messengers_.size(); ++r) {
    nodes_.push_back(std::make_unique<Node>());
    nodes_.back()->losses.assign(messengers_.size(), std::numeric_limits<double>::quiet_NaN());
    const int rank = static_cast<int>(r);
    messengers_[r]->SetHandler([this, rank](Message&& m) { on_message(rank, std::move(m)); });
  }
}

AsyncLeaderSgd::~AsyncLeaderSgd() = default;

void AsyncLeaderSgd::on_start(Worker& worker) {
  nodes_.at(static_cast<std::size_t>(worker.rank()))->worker = &worker;
}

std::vector<int> AsyncLeaderSgd::group_of(int rank) const {
  return leader_group(rank, options_.group_size, static_cast<int>(nodes_.size()));
}

std::vector<int> AsyncLeaderSgd::everyone() const {
  return leader_group(0, static_cast<int>(nodes_.size()), static_cast<int>(nodes_.size()));
}

int AsyncLeaderSgd::lowest_known(int rank, const std::vector<int>& among) const {
  const std::vector<double>& losses = nodes_[rank]->losses;
  int best = among.front();
  for (int peer : among) {
    // NaN (not heard of yet) never wins: every comparison with it is false.
    if (losses[peer] < losses[best] || std::isnan(losses[best])) best = peer;
  }
  return best;
}

bool AsyncLeaderSgd::leads(int rank, const std::vector<int>& among) const {
  for (int peer : among) {
    if (std::isnan(nodes_[rank]->losses[peer])) return false;
  }
  return lowest_known(rank, among) == rank;
}

void AsyncLeaderSgd::send(int rank, const std::vector<int>& to, const Message& message) {
  send_to_others(*messengers_[rank], rank, to, message);
}

void AsyncLeaderSgd::on_gradient(Worker& worker, const at::Tensor& gradient) {
  worker.ApplyGradient(gradient);  // the local step (momentum and weight decay as configured)
  const int rank = worker.rank();
  Node& node = *nodes_[rank];
  node.loss_sum += worker.last_loss();
  ++node.loss_count;
  const std::int64_t done = worker.steps_done() + 1;
  const std::vector<int> group = group_of(rank);
  const std::vector<int> all = everyone();
  const bool global = done % options_.g_comm == 0 && all.size() >= 2;
  const bool local = done % options_.l_comm == 0 && group.size() >= 2;
  if (!global && !local) {
    worker.FinishStep();
    return;
  }
  // Report the recent loss to everyone, then act on what is known now.
  const double loss = node.loss_sum / node.loss_count;
  node.loss_sum = 0;
  node.loss_count = 0;
  node.losses[rank] = loss;
  Message report;
  report.kind = kLoss;
  report.step = static_cast<std::uint64_t>(worker.steps_done());
  report.payload.resize(sizeof loss);
  std::memcpy(report.payload.data(), &loss, sizeof loss);
  send(rank, all, report);

  const bool leads_all = global && leads(rank, all);
  const bool leads_group = leads_all || (local && leads(rank, group));
  if (leads_group) {
    Message m;
    m.kind = kParameters;
    m.step = report.step;
    {
      WallClockAccount::Charge charge(account_);
      m.payload = DenseCodec::encode_dense(worker.Parameters());
    }
    // The global leader leads its group too: one message serves both pulls there.
    m.round = leads_all ? kGlobalLeader : kGroupLeader;
    send(rank, group, m);
    if (leads_all) {
      const int n = static_cast<int>(nodes_.size());
      for (int first = 0; first < n; first += options_.group_size) {
        if (first / options_.group_size == rank / options_.group_size) continue;
        send(rank, {lowest_known(rank, group_of(first))}, m);
      }
    }
  }

  const bool pull_group = local && !leads_group && !node.group_payload.empty();
  const bool pull_global = global && !leads_all && !node.global_payload.empty();
  if (pull_group || pull_global) {
    WallClockAccount::Charge charge(account_);
    if (pull_group && !node.group_parameters.defined()) {
      node.group_parameters = DenseCodec::decode_dense(node.group_payload);
    }
    if (pull_global && !node.global_parameters.defined()) {
      node.global_parameters = DenseCodec::decode_dense(node.global_payload);
    }
    const at::Tensor x = worker.Parameters();
    for (const at::Tensor* t : {&node.group_parameters, &node.global_parameters}) {
      if (t->defined() && t->numel() != x.numel()) {
        throw DecodeError("leader sgd: parameter count mismatch");
      }
    }
    worker.SetParameters(leader_pulls(x, node.group_parameters, pull_group ? options_.c1 : 0.0,
                                      node.global_parameters, pull_global ? options_.c2 : 0.0));
  }
  worker.FinishStep();
}

void AsyncLeaderSgd::on_message(int rank, Message&& message) {
  Node& node = *nodes_[rank];
  const int source = static_cast<int>(message.source);
  if (message.kind == kLoss) {
    double loss = 0;
    if (message.payload.size() != sizeof loss) throw DecodeError("leader sgd: bad loss message");
    std::memcpy(&loss, message.payload.data(), sizeof loss);
    node.losses.at(static_cast<std::size_t>(source)) = loss;
    return;
  }
  if (message.kind != kParameters) throw DecodeError("leader sgd: unknown message kind");
  const bool same_group = source / options_.group_size == rank / options_.group_size;
  if (message.round == kGlobalLeader && !same_group) {
    // This group's entry point: pass the global leader's parameters on within the group.
    Message relay = message;
    relay.round = kGlobalRelayed;
    send(rank, group_of(rank), relay);
  }
  if (message.round == kGroupLeader || (message.round == kGlobalLeader && same_group)) {
    node.group_payload = message.payload;
    node.group_parameters = at::Tensor();
  }
  if (message.round != kGroupLeader) {
    node.global_payload = std::move(message.payload);
    node.global_parameters = at::Tensor();
  }
}

std::vector<Worker*> AsyncLeaderSgd::workers() const {
  std::vector<Worker*> out;
  for (const auto& node : nodes_) out.push_back(node->worker);
  return out;
}

at::Tensor AsyncLeaderSgd::evaluation_parameters() const { return mean_of(worker_parameters(workers())); }

double AsyncLeaderSgd::consensus_distance() const {
  return distance_to_consensus(worker_parameters(workers()));
}

}  // namespace gradwire
