#include "nodes/schemes/PushSumGossip.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ns3/simulator.h>

#include "codecs/DenseCodec.h"
#include "nodes/schemes/ModelAverage.h"
#include "nodes/schemes/PushSumState.h"
#include "nodes/schemes/QuietWatchdog.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

namespace {
constexpr std::uint32_t kPush = 1;
constexpr std::uint32_t kJoin = 2;        // newcomer -> donor
constexpr std::uint32_t kJoinShare = 3;   // donor -> newcomer: half its (x, w), step = start
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
}

struct PushSumGossip::Node {
  Worker* worker = nullptr;
  PushSumState state;
  bool waiting = false; // pushed this step, waiting for the in-peers' messages
  std::int64_t step = 0;
  std::map<std::int64_t, std::vector<Message>> inbox;  // by step
  std::vector<Message> late;  // shares of steps already mixed (faults): absorbed next time
};

PushSumGossip::PushSumGossip(std::vector<Endpoint*> messengers, PushSumOptions options)
    : messengers_(std::move(messengers)),
      options_(options),
      graph_(static_cast<int>(messengers_.size()), options.peers) {
  for (std::size_t r = 0; r < messengers_.size(); ++r) {
    nodes_.push_back(std::make_unique<Node>());
    const int rank = static_cast<int>(r);
    messengers_[r]->SetHandler([this, rank](Message&& m) { on_message(rank, std::move(m)); });
  }
}

PushSumGossip::~PushSumGossip() = default;

void PushSumGossip::on_start(Worker& worker) {
  Node& node = *nodes_.at(static_cast<std::size_t>(worker.rank()));
  node.worker = &worker;
  node.state = PushSumState(worker.Parameters());
}

void PushSumGossip::on_gradient(Worker& worker, const at::Tensor& gradient) {
  const int rank = worker.rank();
  Node& node = *nodes_[rank];
  node.step = worker.steps_done();
  std::vector<int> peers = live(graph_.out_peers(rank, node.step), node.step);
  {
    WallClockAccount::Charge charge(account_);
    // Local SGD step with the gradient taken at z = x / w, then keep our share.
    node.state.local_step(gradient, options_.lr.at(node.step), options_.momentum,
                          options_.weight_decay, options_.nesterov);
    node.state.keep_share(1.0 / static_cast<double>(peers.size() + 1));
  }
  if (!peers.empty()) {
    at::Tensor packed = at::cat({node.state.x(), at::full({1}, node.state.w(), at::kFloat)});
    Message m;
    m.kind = kPush;
    m.step = static_cast<std::uint64_t>(node.step);
    m.payload = DenseCodec::encode_dense(packed);
    for (std::size_t i = 0; i < peers.size(); ++i) {
      Message copy = m;
      messengers_[rank]->Send(static_cast<std::uint32_t>(peers[i]), std::move(copy));
    }
  }
  node.waiting = true;
  if (faults_) watch(rank, node.step);
  try_mix(rank);
}

void PushSumGossip::on_message(int rank, Message&& message) {
  Node& node = *nodes_[rank];
  if (faults_) {
    if (down_[rank]) return;  // the host is gone: what reaches it is lost
    if (message.kind == kJoin) {
      on_join(rank, static_cast<int>(message.source));
      return;
    }
    if (message.kind == kJoinShare) {
      if (!resume_[rank]) return;
      at::Tensor parameters;
      {
        WallClockAccount::Charge charge(account_);
        at::Tensor packed = DenseCodec::decode_dense(message.payload);
        const std::int64_t numel = packed.numel() - 1;
        node.state = PushSumState(at::zeros({numel}, at::kFloat));
        node.state.keep_share(0.0);
        node.state.absorb(packed.narrow(0, 0, numel), packed[numel].item<double>());
        parameters = node.state.z();
      }
      node.inbox.erase(node.inbox.begin(),
                       node.inbox.lower_bound(static_cast<std::int64_t>(message.step)));
      node.late.clear();
      Resume resume = std::move(resume_[rank]);
      resume_[rank] = nullptr;
      resume(static_cast<std::int64_t>(message.step), parameters);
      return;
    }
    const auto step = static_cast<std::int64_t>(message.step);
    if (step < node.step || (step == node.step && !node.waiting && node.worker &&
                             node.worker->steps_done() > node.step)) {
      node.late.push_back(std::move(message));
      return;
    }
  }
  if (message.kind != kPush) {
    throw std::runtime_error("gossip: unexpected message kind " + std::to_string(message.kind));
  }
  node.inbox[static_cast<std::int64_t>(message.step)].push_back(std::move(message));
  try_mix(rank);
}

void PushSumGossip::try_mix(int rank) {
  Node& node = *nodes_[rank];
  if (!node.waiting) return;
  // With tau = 0 a node mixes the shares sent at its own step; with tau > 0 those of step
  // step - tau (none before step tau), which had tau steps' compute time to arrive.
  const std::int64_t mixed = faults_ ? node.step : node.step - options_.tau;
  auto it = node.inbox.find(mixed);
  if (faults_) {
    // Every live in-peer's share must be here (shares of gone peers may be, too).
    for (int q : live(graph_.in_peers(rank, node.step), node.step)) {
      if (it == node.inbox.end()) return;
      const auto& msgs = it->second;
      if (std::none_of(msgs.begin(), msgs.end(), [q](const Message& m) {
            return static_cast<int>(m.source) == q;
          })) {
        return;
      }
    }
  } else {
    const std::size_t expected = mixed < 0 ? 0 : graph_.in_peers(rank, mixed).size();
    const std::size_t have = it == node.inbox.end() ? 0 : it->second.size();
    if (have < expected) return;
  }
  {
    WallClockAccount::Charge charge(account_);
    const std::int64_t numel = node.state.x().numel();
    if (it != node.inbox.end()) {
      for (const Message& m : it->second) {
        at::Tensor packed = DenseCodec::decode_dense(m.payload);
        if (packed.numel() != numel + 1) throw DecodeError("gossip: parameter count mismatch");
        node.state.absorb(packed.narrow(0, 0, numel), packed[numel].item<double>());
      }
      node.inbox.erase(it);
    }
    for (const Message& m : node.late) {
      at::Tensor packed = DenseCodec::decode_dense(m.payload);
      if (packed.numel() != numel + 1) throw DecodeError("gossip: parameter count mismatch");
      node.state.absorb(packed.narrow(0, 0, numel), packed[numel].item<double>());
    }
    node.late.clear();
    node.worker->SetParameters(node.state.z());
  }
  node.waiting = false;
  node.worker->FinishStep();
}

std::vector<at::Tensor> PushSumGossip::live_models() const {
  std::vector<at::Tensor> out;
  for (std::size_t r = 0; r < nodes_.size(); ++r) {
    if (counts(static_cast<int>(r))) out.push_back(nodes_[r]->state.z());
  }
  return out;
}

at::Tensor PushSumGossip::evaluation_parameters() const { return mean_of(live_models()); }

double PushSumGossip::consensus_distance() const {
  return distance_to_consensus(live_models());
}

// --- faults ---------------------------------------------------------------------------------

void PushSumGossip::enable_faults(double timeout_s, FaultLog log) {
  faults_ = true;
  timeout_s_ = timeout_s;
  log_ = std::move(log);
  down_.assign(nodes_.size(), false);
  gone_.assign(nodes_.size(), false);
  rejoined_from_.assign(nodes_.size(), kNever);
  resume_.assign(nodes_.size(), nullptr);
}

bool PushSumGossip::live_at(int rank, std::int64_t step) const {
  return !faults_ || !gone_[rank] || step >= rejoined_from_[rank];
}

std::vector<int> PushSumGossip::live(std::vector<int> ranks, std::int64_t step) const {
  if (!faults_) return ranks;
  ranks.erase(std::remove_if(ranks.begin(), ranks.end(),
                             [&](int q) { return !live_at(q, step); }),
              ranks.end());
  return ranks;
}

bool PushSumGossip::counts(int rank) const {
  return !faults_ || (!down_[rank] && !resume_[rank]);
}

void PushSumGossip::leave(int rank) {
  Node& node = *nodes_.at(static_cast<std::size_t>(rank));
  down_[rank] = true;
  node.waiting = false;
  node.inbox.clear();
  node.late.clear();
  resume_[rank] = nullptr;
}

void PushSumGossip::rejoin(int rank, Resume resume) {
  down_[rank] = false;
  resume_[rank] = std::move(resume);
  for (int r = 0; r < static_cast<int>(nodes_.size()); ++r) {
    if (r == rank || down_[r] || resume_[r]) continue;
    Message m;
    m.kind = kJoin;
    messengers_[rank]->Send(static_cast<std::uint32_t>(r), std::move(m));
    return;
  }
}

void PushSumGossip::watch(int rank, std::int64_t step) {
  QuietWatchdog::start(
      timeout_s_,
      [this, rank, step] {
        Node& node = *nodes_[rank];
        if (down_[rank] || !node.waiting || node.step != step) return QuietWatchdog::Check::kDone;
        bool found = false;
        const auto it = node.inbox.find(step);
        for (int q : live(graph_.in_peers(rank, step), step)) {
          const bool have =
              it != node.inbox.end() &&
              std::any_of(it->second.begin(), it->second.end(),
                          [q](const Message& m) { return static_cast<int>(m.source) == q; });
          if (!have && down_[q]) {  // ping: no answer
            gone_[q] = true;
            found = true;
            if (log_) log_(FaultEvent{"detected", q, ns3::Simulator::Now().GetSeconds(), step});
          }
        }
        if (!found) return QuietWatchdog::Check::kQuiet;
        // Every waiting node re-checks: the notice reached everyone.
        for (int r = 0; r < static_cast<int>(nodes_.size()); ++r) {
          if (!down_[r]) try_mix(r);
        }
        if (!nodes_[rank]->waiting || nodes_[rank]->step != step) return QuietWatchdog::Check::kDone;
        return QuietWatchdog::Check::kAlive;
      },
      [rank, step] {
        return "gossip: node " + std::to_string(rank) + " stalled at step " +
               std::to_string(step) + " although its in-peers are up";
      });
}

void PushSumGossip::on_join(int donor, int newcomer) {
  if (!gone_[newcomer]) {
    gone_[newcomer] = true;  // it lost its state: whoever waits for it stops now
    if (log_) {
      log_(FaultEvent{"detected", newcomer, ns3::Simulator::Now().GetSeconds(),
                      nodes_[donor]->step});
    }
    for (int r = 0; r < static_cast<int>(nodes_.size()); ++r) {
      if (!down_[r] && r != newcomer) try_mix(r);
    }
  }
  // Simplification: the donor knows the highest step of any node (gossip nodes drift apart);
  // no node can have sent shares for s yet.
  std::int64_t highest = 0;
  for (std::size_t r = 0; r < nodes_.size(); ++r) {
    if (static_cast<int>(r) == newcomer || down_[r] || !nodes_[r]->worker) continue;
    highest = std::max(highest, nodes_[r]->worker->steps_done());
  }
  const std::int64_t s = highest + 2;
  rejoined_from_[newcomer] = s;
  Node& node = *nodes_[donor];
  Message m;
  m.kind = kJoinShare;
  m.step = static_cast<std::uint64_t>(s);
  {
    WallClockAccount::Charge charge(account_);
    node.state.keep_share(0.5);  // half of (x, w) moves: the sum of weights is unchanged
    m.payload = DenseCodec::encode_dense(
        at::cat({node.state.x(), at::full({1}, node.state.w(), at::kFloat)}));
  }
  messengers_[donor]->Send(static_cast<std::uint32_t>(newcomer), std::move(m));
}

double PushSumGossip::total_weight() const {
  double total = 0;
  for (const auto& node : nodes_) total += node->state.w();
  return total;
}

double PushSumGossip::unmixed_weight() const {
  const auto weight = [](const Message& m) {
    const at::Tensor packed = DenseCodec::decode_dense(m.payload);
    return packed[packed.numel() - 1].item<double>();
  };
  double total = 0;
  for (const auto& node : nodes_) {
    for (const auto& [step, shares] : node->inbox) {
      for (const Message& m : shares) total += weight(m);
    }
    for (const Message& m : node->late) total += weight(m);
  }
  return total;
}

}  // namespace gradwire
