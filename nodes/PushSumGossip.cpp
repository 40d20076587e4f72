#include "nodes/PushSumGossip.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "codecs/DenseCodec.h"
#include "nodes/Endpoint.h"
#include "nodes/PushSumState.h"
#include "nodes/WallClockAccount.h"
#include "nodes/Worker.h"

namespace gradwire {

namespace {
constexpr std::uint32_t kPush = 1;
}

struct PushSumGossip::Node {
  Worker* worker = nullptr;
  PushSumState state;
  bool waiting = false; // pushed this step, waiting for the in-peers' messages
  std::int64_t step = 0;
  std::map<std::int64_t, std::vector<Message>> inbox;  // by step
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
  std::vector<int> peers = graph_.out_peers(rank, node.step);
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
  try_mix(rank);
}

void PushSumGossip::on_message(int rank, Message&& message) {
  if (message.kind != kPush) {
    throw std::runtime_error("gossip: unexpected message kind " + std::to_string(message.kind));
  }
  Node& node = *nodes_[rank];
  node.inbox[static_cast<std::int64_t>(message.step)].push_back(std::move(message));
  try_mix(rank);
}

void PushSumGossip::try_mix(int rank) {
  Node& node = *nodes_[rank];
  if (!node.waiting) return;
  auto it = node.inbox.find(node.step);
  const std::size_t expected = graph_.in_peers(rank, node.step).size();
  const std::size_t have = it == node.inbox.end() ? 0 : it->second.size();
  if (have < expected) return;
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
    node.worker->SetParameters(node.state.z());
  }
  node.waiting = false;
  node.worker->FinishStep();
}

at::Tensor PushSumGossip::evaluation_parameters() const {
  at::Tensor sum;
  for (const auto& node : nodes_) {
    at::Tensor z = node->state.z();
    sum = sum.defined() ? sum + z : z;
  }
  return sum / static_cast<double>(nodes_.size());
}

double PushSumGossip::consensus_distance() const {
  const at::Tensor mean = evaluation_parameters();
  double total = 0;
  for (const auto& node : nodes_) total += (node->state.z() - mean).pow(2).sum().item<double>();
  return total / static_cast<double>(nodes_.size());
}

double PushSumGossip::total_weight() const {
  double total = 0;
  for (const auto& node : nodes_) total += node->state.w();
  return total;
}

}  // namespace gradwire
