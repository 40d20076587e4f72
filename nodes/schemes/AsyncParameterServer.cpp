#include "nodes/schemes/AsyncParameterServer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ns3/simulator.h>

#include "codecs/DenseCodec.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t { kPush = 1, kParameters = 2 };
}

struct AsyncParameterServer::State {
  at::Tensor x;         // the server's parameters
  at::Tensor momentum;  // server-side momentum buffer
  std::vector<Worker*> workers;
  std::vector<std::uint64_t> pulled_version;  // version each worker computes on
  std::vector<std::int64_t> updates;          // updates applied per worker
  std::vector<int> buckets_in;                // buckets of the current push applied, per worker
  std::vector<int> waiting;                   // ranks whose reply is due
  bool release_scheduled = false;
  double staleness_sum = 0;
  std::uint64_t staleness_count = 0;
};

AsyncParameterServer::AsyncParameterServer(std::vector<Endpoint*> workers, Endpoint* server,
                                           std::vector<GradientBucket> buckets,
                                           std::vector<std::vector<Codec*>> codecs,
                                           std::vector<Codec*> server_codecs,
                                           AsyncServerOptions options,
                                           std::function<void(const StalenessEvent&)> on_update)
    : workers_(std::move(workers)),
      server_(server),
      buckets_(std::move(buckets)),
      codecs_(std::move(codecs)),
      server_codecs_(std::move(server_codecs)),
      options_(options),
      on_update_(std::move(on_update)),
      state_(std::make_unique<State>()) {
  if (workers_.empty() || !server_ || buckets_.empty() || codecs_.size() != buckets_.size() ||
      server_codecs_.size() != buckets_.size()) {
    throw std::invalid_argument("AsyncParameterServer: need a codec per bucket and worker");
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (codecs_[b].size() != workers_.size() || !server_codecs_[b]) {
      throw std::invalid_argument("AsyncParameterServer: need a codec per bucket and worker");
    }
  }
  const std::size_t n = workers_.size();
  state_->workers.assign(n, nullptr);
  state_->pulled_version.assign(n, 0);
  state_->updates.assign(n, 0);
  state_->buckets_in.assign(n, 0);
  server_->SetHandler([this](Message&& m) { on_push(std::move(m)); });
  for (std::size_t r = 0; r < n; ++r) {
    const int rank = static_cast<int>(r);
    workers_[r]->SetHandler([this, rank](Message&& m) { on_pull(rank, std::move(m)); });
  }
}

AsyncParameterServer::~AsyncParameterServer() = default;

void AsyncParameterServer::on_start(Worker& worker) {
  state_->workers.at(static_cast<std::size_t>(worker.rank())) = &worker;
  // Replicas start identical (same seed), so the server starts from any worker's parameters.
  if (!state_->x.defined()) {
    state_->x = worker.Parameters();
    state_->momentum = at::zeros_like(state_->x);
  }
}

void AsyncParameterServer::on_gradient(Worker& worker, const at::Tensor& gradient) {
  on_bucket(worker, 0, gradient);
}

void AsyncParameterServer::on_bucket(Worker& worker, int bucket, const at::Tensor& slice) {
  const int rank = worker.rank();
  Codec* codec = codecs_.at(static_cast<std::size_t>(bucket))[static_cast<std::size_t>(rank)];
  Message m;
  m.kind = kPush;
  m.round = static_cast<std::uint32_t>(bucket);
  m.step = state_->pulled_version[rank];  // the version this gradient was computed from
  {
    WallClockAccount::Charge charge(account_);
    m.payload = codec->encode(slice);
  }
  m.loss = codec->traits().loss_tolerance;  // what a udp transport may lose of it
  workers_[rank]->Send(server_->self(), std::move(m));
}

void AsyncParameterServer::on_push(Message&& message) {
  const auto rank = static_cast<int>(message.source);
  if (message.kind != kPush || rank < 0 || rank >= static_cast<int>(workers_.size()) ||
      message.round >= buckets_.size()) {
    throw std::runtime_error("async parameter server: unexpected message from host " +
                             std::to_string(message.source));
  }
  State& s = *state_;
  const std::size_t b = message.round;
  const GradientBucket& bucket = buckets_[b];
  Codec* codec = server_codecs_[b];
  {
    WallClockAccount::Charge charge(account_);
    at::Tensor g = codec->decode(message.payload);
    if (g.numel() != bucket.numel) throw DecodeError("async parameter server: size mismatch");
    g = codec->finalize(g, 1);  // majority-vote codecs: sign of one vote
    // This bucket's slice of the parameters and of the momentum buffer.
    at::Tensor x = s.x.slice(0, bucket.offset, bucket.offset + bucket.numel);
    at::Tensor momentum = s.momentum.slice(0, bucket.offset, bucket.offset + bucket.numel);
    if (options_.weight_decay > 0) g = g + options_.weight_decay * x;
    at::Tensor direction = g;
    if (options_.momentum > 0) {
      momentum.mul_(options_.momentum).add_(g);
      direction = options_.nesterov ? g + options_.momentum * momentum : momentum;
    }
    const double n = static_cast<double>(workers_.size());
    const auto global_step = static_cast<std::int64_t>(version_ / workers_.size());
    x.sub_(direction, options_.lr.at(global_step) / n);
  }
  if (++s.buckets_in[rank] < static_cast<int>(buckets_.size())) return;
  s.buckets_in[rank] = 0;
  complete_update(rank, message.step);
}

void AsyncParameterServer::complete_update(int rank, std::uint64_t computed_on) {
  State& s = *state_;
  StalenessEvent event;
  event.rank = rank;
  event.staleness = version_ - computed_on;
  ++version_;
  event.version = version_;
  event.sim_time_s = ns3::Simulator::Now().GetSeconds();
  s.staleness_sum += static_cast<double>(event.staleness);
  ++s.staleness_count;
  ++s.updates[rank];
  if (on_update_) on_update_(event);

  s.waiting.push_back(rank);
  if (!s.release_scheduled) {
    // End of this instant: gradients arriving at the same time are all applied first.
    s.release_scheduled = true;
    ns3::Simulator::ScheduleNow(&AsyncParameterServer::release_replies, this);
  }
}

void AsyncParameterServer::release_replies() {
  State& s = *state_;
  s.release_scheduled = false;
  // Workers that finished all their steps no longer hold the others back.
  std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
  for (std::size_t r = 0; r < s.updates.size(); ++r) {
    const bool done = s.workers[r] && s.updates[r] >= s.workers[r]->total_steps();
    if (!done) slowest = std::min(slowest, s.updates[r]);
  }
  std::vector<int> still_waiting;
  Bytes parameters;
  for (int rank : s.waiting) {
    if (options_.max_staleness >= 0 && slowest != std::numeric_limits<std::int64_t>::max() &&
        s.updates[rank] - slowest > options_.max_staleness) {
      still_waiting.push_back(rank);  // too far ahead: held until the slowest catches up
      continue;
    }
    if (parameters.empty()) {
      WallClockAccount::Charge charge(account_);
      parameters = DenseCodec::encode_dense(s.x);
    }
    Message out;
    out.kind = kParameters;
    out.step = version_;
    out.payload = parameters;
    server_->Send(static_cast<std::uint32_t>(rank), std::move(out));
  }
  s.waiting = std::move(still_waiting);
}

void AsyncParameterServer::on_pull(int rank, Message&& message) {
  Worker* worker = state_->workers.at(static_cast<std::size_t>(rank));
  if (message.kind != kParameters || !worker) {
    throw std::runtime_error("async parameter server: unexpected reply to worker " +
                             std::to_string(rank));
  }
  {
    WallClockAccount::Charge charge(account_);
    worker->SetParameters(DenseCodec::decode_dense(message.payload));
  }
  state_->pulled_version[rank] = message.step;
  worker->FinishStep();
}

at::Tensor AsyncParameterServer::evaluation_parameters() const { return state_->x.clone(); }

double AsyncParameterServer::mean_staleness() const {
  return state_->staleness_count ? state_->staleness_sum / static_cast<double>(state_->staleness_count)
                                 : 0.0;
}

}  // namespace gradwire
