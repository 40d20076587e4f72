#include "nodes/ParameterServer.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "codecs/ExactEncoding.h"
#include "nodes/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t { kPush = 1, kPull = 2 };
}

struct ParameterServer::StepState {
  int received = 0;
  std::vector<bool> seen;
  Bytes compressed_sum;  // summable codecs: running sum in the compressed domain
  at::Tensor sum;        // other codecs: running sum of decoded tensors
};

ParameterServer::ParameterServer(std::vector<Endpoint*> workers, Endpoint* server,
                                 std::vector<Codec*> codecs, Codec* server_codec)
    : workers_(std::move(workers)),
      server_(server),
      codecs_(std::move(codecs)),
      server_codec_(server_codec),
      pending_(workers_.size()),
      pending_step_(workers_.size(), -1) {
  if (workers_.empty() || workers_.size() != codecs_.size() || !server_ || !server_codec_) {
    throw std::invalid_argument("ParameterServer: need one messenger and codec per worker");
  }
  server_->SetHandler([this](Message&& m) { on_push(std::move(m)); });
  for (std::size_t r = 0; r < workers_.size(); ++r) {
    const int rank = static_cast<int>(r);
    workers_[r]->SetHandler([this, rank](Message&& m) { on_pull(rank, std::move(m)); });
  }
}

ParameterServer::~ParameterServer() = default;

void ParameterServer::contribute(int rank, std::int64_t step, const at::Tensor& gradient,
                                 Done done) {
  if (pending_.at(static_cast<std::size_t>(rank))) {
    throw std::logic_error("ParameterServer: rank contributed twice");
  }
  pending_[rank] = std::move(done);
  pending_step_[rank] = step;
  Message m;
  m.kind = kPush;
  m.step = static_cast<std::uint64_t>(step);
  {
    WallClockAccount::Charge charge(account_);  // encoding is LibTorch work, not ns-3's
    m.payload = codecs_[rank]->encode(gradient);
  }
  count_payload(rank, m.payload.size());
  workers_[rank]->Send(server_->self(), std::move(m));
}

void ParameterServer::add_to_sum(StepState& s, Bytes&& payload) const {
  if (server_codec_->aggregation() == Aggregation::kSummable) {
    if (s.received == 0) {
      s.compressed_sum = std::move(payload);
    } else {
      server_codec_->accumulate(s.compressed_sum, payload);
    }
    return;
  }
  at::Tensor g = server_codec_->decode(payload);
  if (s.received == 0) {
    s.sum = g;
  } else {
    if (g.numel() != s.sum.numel()) throw DecodeError("parameter server: size mismatch");
    s.sum.add_(g);
  }
}

void ParameterServer::on_push(Message&& message) {
  // Host indices of workers are their ranks (the engine places workers first).
  const auto rank = static_cast<int>(message.source);
  if (message.kind != kPush || rank < 0 || rank >= workers()) {
    throw std::runtime_error("parameter server: unexpected message from host " +
                             std::to_string(message.source));
  }
  auto& slot = steps_[message.step];
  if (!slot) {
    slot = std::make_unique<StepState>();
    slot->seen.assign(workers_.size(), false);
  }
  StepState& s = *slot;
  if (s.seen[rank]) throw std::runtime_error("parameter server: duplicate push");
  s.seen[rank] = true;
  {
    WallClockAccount::Charge charge(account_);  // codec work is LibTorch's, not ns-3's
    add_to_sum(s, std::move(message.payload));
  }
  if (++s.received < workers()) return;

  Bytes downlink;
  {
    WallClockAccount::Charge charge(account_);
    at::Tensor mean = server_codec_->aggregation() == Aggregation::kSummable
                          ? server_codec_->decode(s.compressed_sum)
                          : s.sum;
    mean = server_codec_->finalize(mean, workers());
    downlink = encode_exact(mean);
  }
  const std::uint64_t step = message.step;
  steps_.erase(step);
  for (int r = 0; r < workers(); ++r) {
    Message out;
    out.kind = kPull;
    out.step = step;
    out.payload = downlink;
    server_->Send(static_cast<std::uint32_t>(r), std::move(out));
  }
}

void ParameterServer::on_pull(int rank, Message&& message) {
  if (message.kind != kPull || !pending_[rank] ||
      static_cast<std::int64_t>(message.step) != pending_step_[rank]) {
    throw std::runtime_error("parameter server: unexpected pull for worker " +
                             std::to_string(rank));
  }
  at::Tensor mean;
  {
    WallClockAccount::Charge charge(account_);
    mean = decode_any(message.payload);
  }
  Done done = std::move(pending_[rank]);
  pending_[rank] = nullptr;
  done(mean);
}

}  // namespace gradwire
