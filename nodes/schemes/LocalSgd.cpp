#include "nodes/schemes/LocalSgd.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

#include <ATen/ATen.h>

#include "nodes/schemes/ModelAverage.h"
#include "nodes/schemes/Collective.h"
#include "nodes/schemes/Participation.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/EndpointChannels.h"

namespace gradwire {

std::vector<GradientBucket> plan_fragments(const std::vector<std::int64_t>& parameter_numels,
                                           int fragments) {
  const int tensors = static_cast<int>(parameter_numels.size());
  if (fragments < 1 || fragments > tensors) {
    throw std::invalid_argument("plan_fragments: expected 1 to " + std::to_string(tensors) +
                                " fragments, got " + std::to_string(fragments));
  }
  const std::int64_t total =
      std::accumulate(parameter_numels.begin(), parameter_numels.end(), std::int64_t{0});
  std::vector<GradientBucket> out;
  std::int64_t offset = 0;
  int first = 0;
  for (int p = 0; p < fragments; ++p) {
    GradientBucket f;
    f.offset = offset;
    f.first_parameter = first;
    // Close the fragment once it reaches its share of the elements, leaving at least one
    // tensor for each fragment still to come.
    const std::int64_t target = total * (p + 1) / fragments;
    int last = first;
    std::int64_t end = offset + parameter_numels[static_cast<std::size_t>(first)];
    while (last + 1 < tensors - (fragments - 1 - p) && (end < target || p + 1 == fragments)) {
      ++last;
      end += parameter_numels[static_cast<std::size_t>(last)];
    }
    f.last_parameter = last;
    f.numel = end - offset;
    out.push_back(f);
    offset = end;
    first = last + 1;
  }
  return out;
}

std::vector<double> sample_weights(const std::vector<std::int64_t>& samples) {
  std::vector<double> out(samples.size(), 1.0);
  if (std::adjacent_find(samples.begin(), samples.end(), std::not_equal_to<>()) == samples.end()) {
    return out;
  }
  const double total =
      static_cast<double>(std::accumulate(samples.begin(), samples.end(), std::int64_t{0}));
  for (std::size_t k = 0; k < samples.size(); ++k) {
    out[k] = static_cast<double>(samples[k]) * static_cast<double>(samples.size()) / total;
  }
  return out;
}

struct LocalSgd::Node {
  Worker* worker = nullptr;
  std::vector<at::Tensor> start;      // per fragment: the global parameters the round began at
  std::vector<OuterOptimizer> outer;  // per fragment
  std::vector<at::Tensor> at_send;    // per fragment: the local parameters that were sent
  std::vector<bool> in_flight;        // per fragment
  std::vector<std::int64_t> rounds;   // per fragment: rounds sent so far
  std::vector<int> to_send;           // fragments due at the step in progress, not yet sent
  bool step_open = false;             // the step's gradient was applied, FinishStep pending
  bool last_step = false;
  bool advancing = false;
};

LocalSgd::LocalSgd(std::vector<GradientBucket> fragments,
                   std::vector<std::unique_ptr<EndpointChannels>> channels,
                   std::vector<std::unique_ptr<Collective>> collectives,
                   std::vector<std::int64_t> samples, LocalOptions options,
                   Participation* participation)
    : fragments_(std::move(fragments)),
      channels_(std::move(channels)),
      collectives_(std::move(collectives)),
      samples_(std::move(samples)),
      weights_(sample_weights(samples_)),
      participation_(participation),
      options_(std::move(options)) {
  const std::int64_t P = static_cast<std::int64_t>(fragments_.size());
  if (options_.local_steps < 1 || P < 1 || P > options_.local_steps ||
      collectives_.size() != fragments_.size()) {
    throw std::invalid_argument("LocalSgd: needs 1 <= fragments <= local_steps, one collective each");
  }
  for (std::int64_t p = 0; p < P; ++p) offsets_.push_back(p * options_.local_steps / P);
  const int n = collectives_.front()->workers();
  if (weights_.size() != static_cast<std::size_t>(n)) {
    throw std::invalid_argument("LocalSgd: one sample count per worker");
  }
  for (int r = 0; r < n; ++r) nodes_.push_back(std::make_unique<Node>());
  if (participation_) {
    if (P != 1 || options_.overlap || participation_->workers() != n) {
      throw std::invalid_argument(
          "LocalSgd: participation needs one fragment, no overlap and one entry per worker");
    }
    participation_->set_round_steps(options_.local_steps);
  }
}

LocalSgd::~LocalSgd() = default;

bool LocalSgd::due(int fragment, std::int64_t steps) const {
  const std::int64_t offset = offsets_.at(static_cast<std::size_t>(fragment));
  return steps > 0 && steps >= offset && (steps - offset) % options_.local_steps == 0;
}

void LocalSgd::on_start(Worker& worker) {
  if (!accounts_set_) {
    for (auto& c : collectives_) c->set_wall_account(account_);
    accounts_set_ = true;
  }
  Node& node = *nodes_.at(static_cast<std::size_t>(worker.rank()));
  node.worker = &worker;
  const at::Tensor x = worker.Parameters();
  const OuterOptimizerOptions outer{options_.outer_lr, options_.outer_momentum,
                                    options_.outer_nesterov};
  for (const GradientBucket& f : fragments_) {
    node.start.push_back(x.slice(0, f.offset, f.offset + f.numel).clone());
    node.outer.emplace_back(outer);
    node.at_send.emplace_back();
    node.in_flight.push_back(false);
    node.rounds.push_back(0);
  }
}

void LocalSgd::on_gradient(Worker& worker, const at::Tensor& gradient) {
  worker.ApplyGradient(gradient);  // the local step, with the scenario's optimizer
  Node& node = *nodes_.at(static_cast<std::size_t>(worker.rank()));
  const std::int64_t steps = worker.steps_done() + 1;
  for (int p = 0; p < static_cast<int>(fragments_.size()); ++p) {
    if (due(p, steps)) node.to_send.push_back(p);
  }
  node.step_open = true;
  node.last_step = steps == worker.total_steps();
  advance(worker.rank());
}

bool LocalSgd::computes(Worker& worker) {
  if (!participation_) return true;
  // The collective starts the round on its first question and samples its clients then.
  return collectives_.front()->takes_part(worker.rank(),
                                          participation_->round_of_step(worker.steps_done()));
}

void LocalSgd::on_sit_out(Worker& worker) {
  if (!participation_) TrainingScheme::on_sit_out(worker);
  Node& node = *nodes_.at(static_cast<std::size_t>(worker.rank()));
  const std::int64_t steps = worker.steps_done() + 1;
  if (!due(0, steps)) {
    // Nothing to compute, apply or wait for before the round's last step: the step ends now.
    worker.FinishIdleStep();
    return;
  }
  // The round's last step: wait for its result, as the clients that trained do.
  node.step_open = true;
  node.last_step = steps == worker.total_steps();
  node.in_flight[0] = true;
  const std::int64_t round = node.rounds[0]++;
  const int rank = worker.rank();
  collectives_.front()->sit_out(
      rank, round, [this, rank](const at::Tensor& aggregate) { arrive(rank, 0, aggregate); });
}

void LocalSgd::advance(int rank) {
  Node& node = *nodes_[static_cast<std::size_t>(rank)];
  // An aggregate that a collective delivers from inside contribute() comes back here; the
  // outer call sees its effect when contribute() returns.
  if (node.advancing) return;
  node.advancing = true;
  // A fragment is due again only once its previous round is back (its start is that round's
  // result).
  while (!node.to_send.empty() && !node.in_flight[static_cast<std::size_t>(node.to_send.front())]) {
    const int p = node.to_send.front();
    node.to_send.erase(node.to_send.begin());
    send(rank, p);
  }
  node.advancing = false;
  if (!node.step_open || !node.to_send.empty()) return;
  const bool waiting = std::any_of(node.in_flight.begin(), node.in_flight.end(),
                                   [](bool b) { return b; });
  // Without overlap a step ends when what it sent is back; with overlap only the last step
  // waits, so that training ends on the merged model.
  if (waiting && (!options_.overlap || node.last_step)) return;
  node.step_open = false;
  node.worker->FinishStep();
}

void LocalSgd::send(int rank, int p) {
  Node& node = *nodes_[static_cast<std::size_t>(rank)];
  const GradientBucket& f = fragments_[static_cast<std::size_t>(p)];
  at::Tensor delta;
  {
    WallClockAccount::Charge charge(account_);
    at::Tensor x = node.worker->Parameters().slice(0, f.offset, f.offset + f.numel);
    delta = node.start[static_cast<std::size_t>(p)] - x;
    // Without participation every worker takes part in every round: its weight is over all
    // of them; with it, over the round's sampled clients (exact FedAvg when all of them count).
    double w = weights_[static_cast<std::size_t>(rank)];
    if (participation_) {
      const std::vector<int>& clients =
          participation_->clients(node.rounds[static_cast<std::size_t>(p)]);
      std::vector<std::int64_t> sampled;
      std::size_t mine = 0;
      for (int c : clients) {
        if (c == rank) mine = sampled.size();
        sampled.push_back(samples_[static_cast<std::size_t>(c)]);
      }
      w = sample_weights(sampled).at(mine);
    }
    if (w != 1.0) delta.mul_(w);
    if (options_.overlap) node.at_send[static_cast<std::size_t>(p)] = x.clone();
  }
  node.in_flight[static_cast<std::size_t>(p)] = true;
  const std::int64_t round = node.rounds[static_cast<std::size_t>(p)]++;
  collectives_[static_cast<std::size_t>(p)]->contribute(
      rank, round, delta,
      [this, rank, p](const at::Tensor& aggregate) { arrive(rank, p, aggregate); });
}

void LocalSgd::arrive(int rank, int p, const at::Tensor& aggregate) {
  Node& node = *nodes_[static_cast<std::size_t>(rank)];
  const std::size_t i = static_cast<std::size_t>(p);
  const GradientBucket& f = fragments_[i];
  {
    WallClockAccount::Charge charge(account_);
    // A round that applied no update (partial participation) leaves the model as it was.
    const at::Tensor global =
        aggregate.defined() ? node.outer[i].step(node.start[i], aggregate) : node.start[i];
    node.start[i] = global;
    at::Tensor x = node.worker->Parameters();
    at::Tensor mine = x.slice(0, f.offset, f.offset + f.numel);
    if (options_.overlap) {
      mine.copy_(global + (mine - node.at_send[i]));
      node.at_send[i] = at::Tensor();
    } else {
      mine.copy_(global);
    }
    node.worker->SetParameters(x);
  }
  node.in_flight[i] = false;
  advance(rank);
}

at::Tensor LocalSgd::evaluation_parameters() const {
  const Node& node = *nodes_.front();
  return node.start.size() == 1 ? node.start.front() : at::cat(node.start);
}

double LocalSgd::consensus_distance() const {
  std::vector<at::Tensor> xs;
  for (const auto& node : nodes_) xs.push_back(node->worker->Parameters());
  return distance_to_consensus(xs);
}

}  // namespace gradwire
