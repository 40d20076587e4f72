#include "nodes/ParameterServer.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "codecs/DenseCodec.h"
#include "codecs/ExactEncoding.h"
#include "codecs/MultiRoundCodec.h"
#include "nodes/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t {
  kPush = 1,           // worker -> server: a gradient payload (or a kSum round's vector)
  kPull = 2,           // server -> worker: the aggregate (or a round's sum)
  kBroadcastUp = 3,    // root worker -> server: a kBroadcast round's payload
  kBroadcastDown = 4,  // server -> other workers: the relayed broadcast
  kPushReduce = 5,     // worker -> server: a kReduce round's payload
};
}  // namespace

struct ParameterServer::StepState {
  int received = 0;
  std::vector<bool> seen;
  Bytes compressed_sum;          // summable payloads: running sum in the compressed domain
  at::Tensor sum;                // other codecs: running sum of decoded tensors
  std::vector<Bytes> payloads;   // kReduce rounds: every worker's payload
};

struct ParameterServer::WorkerState {
  Done done;                      // set while a step is in flight
  std::int64_t step = -1;
  MultiRoundCodec* multi = nullptr;
  std::uint32_t round = 0;        // current exchange round
  bool awaiting_broadcast = false;
  // Replies that arrived before this worker reached their round, keyed by (step, round).
  std::map<std::pair<std::uint64_t, std::uint32_t>, Message> inbox;
};

ParameterServer::ParameterServer(std::vector<Endpoint*> workers, Endpoint* server,
                                 std::vector<Codec*> codecs, Codec* server_codec)
    : workers_(std::move(workers)),
      server_(server),
      codecs_(std::move(codecs)),
      server_codec_(server_codec),
      dense_(std::make_unique<DenseCodec>()) {
  if (workers_.empty() || workers_.size() != codecs_.size() || !server_ || !server_codec_) {
    throw std::invalid_argument("ParameterServer: need one messenger and codec per worker");
  }
  server_multi_ = dynamic_cast<MultiRoundCodec*>(server_codec_);
  server_->SetHandler([this](Message&& m) { on_push(std::move(m)); });
  for (std::size_t r = 0; r < workers_.size(); ++r) {
    states_.push_back(std::make_unique<WorkerState>());
    states_.back()->multi = dynamic_cast<MultiRoundCodec*>(codecs_[r]);
    if ((states_.back()->multi != nullptr) != (server_multi_ != nullptr)) {
      throw std::invalid_argument("ParameterServer: worker and server codecs differ in kind");
    }
    const int rank = static_cast<int>(r);
    workers_[r]->SetHandler([this, rank](Message&& m) { on_pull(rank, std::move(m)); });
  }
}

ParameterServer::~ParameterServer() = default;

void ParameterServer::contribute(int rank, std::int64_t step, const at::Tensor& gradient,
                                 Done done) {
  WorkerState& w = *states_.at(static_cast<std::size_t>(rank));
  if (w.done) throw std::logic_error("ParameterServer: rank contributed twice");
  w.done = std::move(done);
  w.step = step;
  w.round = 0;
  reset_payload(rank);
  if (w.multi) {
    Round first;
    {
      WallClockAccount::Charge charge(account_);  // codec work is LibTorch's, not ns-3's
      first = w.multi->begin_exchange(gradient);
    }
    send_round(rank, std::move(first));
    return;
  }
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

void ParameterServer::send_round(int rank, Round&& round) {
  WorkerState& w = *states_[rank];
  Message m;
  m.step = static_cast<std::uint64_t>(w.step);
  m.round = w.round;
  switch (round.op) {
    case RoundOp::kSum:
      if (!round.values.defined() || round.values.dim() != 1) {
        throw std::logic_error("codec '" + codecs_[rank]->name() +
                               "': a kSum round needs a 1-D float tensor");
      }
      m.kind = kPush;
      {
        WallClockAccount::Charge charge(account_);
        m.payload = DenseCodec::encode_dense(round.values.contiguous());
      }
      break;
    case RoundOp::kReduce:
      m.kind = kPushReduce;
      m.payload = std::move(round.payload);
      break;
    case RoundOp::kBroadcast:
      if (round.root < 0 || round.root >= workers()) {
        throw std::logic_error("codec '" + codecs_[rank]->name() + "': broadcast root " +
                               std::to_string(round.root) + " is not a worker");
      }
      if (rank != round.root) {
        w.awaiting_broadcast = true;
        // The relay may already be here.
        auto it = w.inbox.find({m.step, m.round});
        if (it != w.inbox.end()) {
          Message early = std::move(it->second);
          w.inbox.erase(it);
          on_pull(rank, std::move(early));
        }
        return;
      }
      m.kind = kBroadcastUp;
      m.payload = round.payload;  // the root keeps its own copy as its outcome
      count_payload(rank, m.payload.size());
      workers_[rank]->Send(server_->self(), std::move(m));
      {
        RoundOutcome own;
        own.broadcast = std::move(round.payload);
        continue_exchange(rank, std::move(own));
      }
      return;
  }
  count_payload(rank, m.payload.size());
  workers_[rank]->Send(server_->self(), std::move(m));
  // A reply that overtook nothing cannot exist yet, but an early one is kept in the inbox.
  auto it = w.inbox.find({static_cast<std::uint64_t>(w.step), w.round});
  if (it != w.inbox.end()) {
    Message early = std::move(it->second);
    w.inbox.erase(it);
    on_pull(rank, std::move(early));
  }
}

void ParameterServer::add_to_sum(StepState& s, Bytes&& payload) const {
  // Multi-round codecs push kSum rounds as dense vectors; others push their own payloads.
  const Codec& codec = server_multi_ ? static_cast<const Codec&>(*dense_) : *server_codec_;
  if (codec.aggregation() == Aggregation::kSummable) {
    if (s.received == 0) {
      s.compressed_sum = std::move(payload);
    } else {
      codec.accumulate(s.compressed_sum, payload);
    }
    return;
  }
  at::Tensor g = codec.decode(payload);
  if (s.received == 0) {
    s.sum = g;
  } else {
    if (g.numel() != s.sum.numel()) throw DecodeError("parameter server: size mismatch");
    s.sum.add_(g);
  }
}

void ParameterServer::reply_all(std::uint64_t step, std::uint32_t round,
                                const at::Tensor& result) {
  Bytes downlink;
  {
    WallClockAccount::Charge charge(account_);
    downlink = encode_exact(result);
  }
  for (int r = 0; r < workers(); ++r) {
    Message out;
    out.kind = kPull;
    out.step = step;
    out.round = round;
    out.payload = downlink;
    server_->Send(static_cast<std::uint32_t>(r), std::move(out));
  }
}

void ParameterServer::on_push(Message&& message) {
  // Host indices of workers are their ranks (the engine places workers first).
  const auto rank = static_cast<int>(message.source);
  const bool known_kind = message.kind == kPush || message.kind == kBroadcastUp ||
                          message.kind == kPushReduce;
  if (!known_kind || rank < 0 || rank >= workers() ||
      (!server_multi_ && (message.kind != kPush || message.round != 0))) {
    throw std::runtime_error("parameter server: unexpected message from host " +
                             std::to_string(message.source));
  }
  if (message.kind == kBroadcastUp) {
    {
      WallClockAccount::Charge charge(account_);
      server_multi_->observe_broadcast(static_cast<int>(message.round), message.payload);
    }
    for (int r = 0; r < workers(); ++r) {
      if (r == rank) continue;
      Message out;
      out.kind = kBroadcastDown;
      out.step = message.step;
      out.round = message.round;
      out.payload = message.payload;
      server_->Send(static_cast<std::uint32_t>(r), std::move(out));
    }
    return;
  }
  const auto key = std::make_pair(message.step, message.round);
  auto& slot = steps_[key];
  if (!slot) {
    slot = std::make_unique<StepState>();
    slot->seen.assign(workers_.size(), false);
  }
  StepState& s = *slot;
  if (s.seen[rank]) throw std::runtime_error("parameter server: duplicate push");
  s.seen[rank] = true;
  {
    WallClockAccount::Charge charge(account_);  // codec work is LibTorch's, not ns-3's
    if (message.kind == kPushReduce) {
      if (s.payloads.empty()) s.payloads.resize(workers_.size());
      s.payloads[rank] = std::move(message.payload);
    } else {
      add_to_sum(s, std::move(message.payload));
    }
  }
  if (++s.received < workers()) return;

  at::Tensor result;
  {
    WallClockAccount::Charge charge(account_);
    if (message.kind == kPushReduce) {
      const std::vector<ByteSpan> spans(s.payloads.begin(), s.payloads.end());
      result = server_multi_->reduce_round(static_cast<int>(message.round), spans);
    } else if (server_multi_) {
      result = dense_->decode(s.compressed_sum);  // a kSum round: the plain sum
    } else {
      result = server_codec_->aggregation() == Aggregation::kSummable
                   ? server_codec_->decode(s.compressed_sum)
                   : s.sum;
      result = server_codec_->finalize(result, workers());
      server_codec_->observe_aggregate(result);
    }
  }
  steps_.erase(key);
  reply_all(key.first, key.second, result);
}

void ParameterServer::on_pull(int rank, Message&& message) {
  WorkerState& w = *states_[rank];
  const auto unexpected = [&] {
    return std::runtime_error("parameter server: unexpected reply (kind " +
                              std::to_string(message.kind) + ", step " +
                              std::to_string(message.step) + ") for worker " +
                              std::to_string(rank));
  };
  if (w.multi) {
    if (message.kind != kPull && message.kind != kBroadcastDown) throw unexpected();
    const bool current = w.done && static_cast<std::int64_t>(message.step) == w.step &&
                         message.round == w.round &&
                         (message.kind == kBroadcastDown) == w.awaiting_broadcast;
    if (!current) {
      // A relay for a round (or step) this worker has not reached yet: its root ran ahead.
      const auto here = std::make_pair(static_cast<std::uint64_t>(w.step), w.round);
      if (w.done && std::make_pair(message.step, message.round) <= here) throw unexpected();
      w.inbox.emplace(std::make_pair(message.step, message.round), std::move(message));
      return;
    }
  } else if (message.kind != kPull || !w.done ||
             static_cast<std::int64_t>(message.step) != w.step) {
    throw unexpected();
  }
  if (!w.multi) {
    at::Tensor mean;
    {
      WallClockAccount::Charge charge(account_);
      mean = decode_any(message.payload);
      codecs_[rank]->observe_aggregate(mean);
    }
    finish(rank, mean);
    return;
  }
  RoundOutcome outcome;
  if (message.kind == kBroadcastDown) {
    w.awaiting_broadcast = false;
    outcome.broadcast = std::move(message.payload);
  } else {
    WallClockAccount::Charge charge(account_);
    outcome.sum = decode_any(message.payload);
  }
  continue_exchange(rank, std::move(outcome));
}

void ParameterServer::continue_exchange(int rank, RoundOutcome&& outcome) {
  WorkerState& w = *states_[rank];
  std::optional<Round> next;
  at::Tensor update;
  {
    WallClockAccount::Charge charge(account_);
    next = w.multi->continue_exchange(static_cast<int>(w.round), std::move(outcome));
    if (!next) update = w.multi->exchange_result();
  }
  if (next) {
    ++w.round;
    send_round(rank, std::move(*next));
    return;
  }
  finish(rank, update);
}

void ParameterServer::finish(int rank, const at::Tensor& update) {
  WorkerState& w = *states_[rank];
  Done done = std::move(w.done);
  w.done = nullptr;
  done(update);
}

}  // namespace gradwire
