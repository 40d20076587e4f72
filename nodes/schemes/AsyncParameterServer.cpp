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
  std::vector<int> waiting;                   // ranks whose reply is due
  bool release_scheduled = false;
  double staleness_sum = 0;
  std::uint64_t staleness_count = 0;
};

AsyncParameterServer::AsyncParameterServer(std::vector<Endpoint*> workers, Endpoint* server,
                                           std::vector<Codec*> codecs, Codec* server_codec,
                                           AsyncServerOptions options,
                                           std::function<void(const StalenessEvent&)> on_update)
    : workers_(std::move(workers)),
      server_(server),
      codecs_(std::move(codecs)),
      server_codec_(server_codec),
      options_(options),
      on_update_(std::move(on_update)),
      state_(std::make_unique<State>()) {
  if (workers_.empty() || workers_.size() != codecs_.size() || !server_ || !server_codec_) {
    throw std::invalid_argument("AsyncParameterServer: need one messenger and codec per worker");
  }
  const std::size_t n = workers_.size();
  state_->workers.assign(n, nullptr);
  state_->pulled_version.assign(n, 0);
  state_->updates.assign(n, 0);
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
  const int rank = worker.rank();
  Message m;
  m.kind = kPush;
  m.step = state_->pulled_version[rank];  // the version this gradient was computed from
  {
    WallClockAccount::Charge charge(account_);
    m.payload = codecs_[rank]->encode(gradient);
  }
  m.loss = codecs_[rank]->loss_tolerance();  // what a udp transport may lose of it
  workers_[rank]->Send(server_->self(), std::move(m));
}

void AsyncParameterServer::on_push(Message&& message) {
  const auto rank = static_cast<int>(message.source);
  if (message.kind != kPush || rank < 0 || rank >= static_cast<int>(workers_.size())) {
    throw std::runtime_error("async parameter server: unexpected message from host " +
                             std::to_string(message.source));
  }
  State& s = *state_;
  const std::uint64_t computed_on = message.step;
  {
    WallClockAccount::Charge charge(account_);
    at::Tensor g = server_codec_->decode(message.payload);
    if (g.numel() != s.x.numel()) throw DecodeError("async parameter server: size mismatch");
    g = server_codec_->finalize(g, 1);  // majority-vote codecs: sign of one vote
    if (options_.weight_decay > 0) g = g + options_.weight_decay * s.x;
    at::Tensor direction = g;
    if (options_.momentum > 0) {
      s.momentum.mul_(options_.momentum).add_(g);
      direction = options_.nesterov ? g + options_.momentum * s.momentum : s.momentum;
    }
    const double n = static_cast<double>(workers_.size());
    const auto global_step = static_cast<std::int64_t>(version_ / workers_.size());
    s.x.sub_(direction, options_.lr.at(global_step) / n);
  }
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
