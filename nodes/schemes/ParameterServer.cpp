#include "nodes/schemes/ParameterServer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ns3/simulator.h>

#include "codecs/DenseCodec.h"
#include "codecs/ExactEncoding.h"
#include "codecs/GradientChecks.h"
#include "codecs/MultiRoundCodec.h"
#include "nodes/schemes/ParameterDonation.h"
#include "nodes/schemes/Participation.h"
#include "nodes/schemes/PhaseLedger.h"
#include "nodes/schemes/QuietWatchdog.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t {
  kPush = 1,           // worker -> server: a gradient payload (or a kSum round's vector)
  kPull = 2,           // server -> worker: the aggregate (or a round's sum)
  kBroadcastUp = 3,    // root worker -> server: a kBroadcast round's payload
  kBroadcastDown = 4,  // server -> other workers: the relayed broadcast
  kPushReduce = 5,     // worker -> server: a kReduce round's payload
  kJoin = 6,           // rejoining worker -> server
  kJoinAccept = 7,     // server -> donor: send your parameters to worker `round` at step `step`
  kJoinParams = 8,     // donor -> newcomer: the parameters at the start of step `step`
  kPullEmpty = 9,      // server -> worker: the round applied no update (participation)
};
}  // namespace

struct ParameterServer::StepState {
  int received = 0;
  int added = 0;       // contributions in the sum so far
  int next_rank = 0;   // in rank order: the rank whose contribution is added next
  std::map<int, Bytes> early_payloads;       // summable payloads of ranks ahead of next_rank
  std::map<int, at::Tensor> early_decoded;   // decoded tensors of ranks ahead of next_rank
  std::vector<bool> seen;
  Bytes compressed_sum;          // summable payloads: running sum in the compressed domain
  at::Tensor sum;                // other codecs: running sum of decoded tensors
  std::vector<Bytes> payloads;   // kReduce rounds: every worker's payload
};

struct ParameterServer::ExchangeClock {
  double first_push = std::numeric_limits<double>::infinity();
  double all_in = 0;    // when the server held every push (or the broadcast root's)
  int replies = -1;     // replies still to arrive; -1 until the server has sent them
};

struct ParameterServer::WorkerState {
  Done done;                      // set while a step is in flight
  std::int64_t step = -1;
  MultiRoundCodec* multi = nullptr;
  std::uint32_t round = 0;        // current exchange round
  bool awaiting_broadcast = false;
  std::vector<std::pair<int, std::int64_t>> donate;  // (newcomer, step) after a kJoinAccept
  // Replies that arrived before this worker reached their round, keyed by (step, round).
  std::map<std::pair<std::uint64_t, std::uint32_t>, Message> inbox;
};

ParameterServer::ParameterServer(std::vector<Endpoint*> workers, Endpoint* server,
                                 std::vector<Codec*> codecs, Codec* server_codec,
                                 Participation* participation, PhaseLedger* phases)
    : workers_(std::move(workers)),
      server_(server),
      codecs_(std::move(codecs)),
      server_codec_(server_codec),
      dense_(std::make_unique<DenseCodec>()),
      participation_(participation),
      phases_(phases) {
  if (workers_.empty() || workers_.size() != codecs_.size() || !server_ || !server_codec_) {
    throw std::invalid_argument("ParameterServer: need one messenger and codec per worker");
  }
  server_multi_ = dynamic_cast<MultiRoundCodec*>(server_codec_);
  if (participation_ && (server_multi_ || participation_->workers() != static_cast<int>(workers_.size()))) {
    throw std::invalid_argument(
        "ParameterServer: participation needs a single-round codec and one entry per worker");
  }
  server_->SetHandler([this](Message&& m) { on_push(std::move(m)); });
  for (std::size_t r = 0; r < workers_.size(); ++r) {
    states_.push_back(std::make_unique<WorkerState>());
    states_.back()->multi = dynamic_cast<MultiRoundCodec*>(codecs_[r]);
    if ((states_.back()->multi != nullptr) != (server_multi_ != nullptr)) {
      throw std::invalid_argument("ParameterServer: worker and server codecs differ in kind");
    }
    const int rank = static_cast<int>(r);
    workers_[r]->SetHandler([this, rank](Message&& m) {
      clock_reply(m);
      on_pull(rank, std::move(m));
    });
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
  if (participation_) {
    // The round closed while this worker computed: its update would come too late.
    if (take_early_reply(rank)) return;
    // A client that went away since the round started sends nothing; it takes the round's
    // result when the round closes.
    if (!participation_->still_available(step, rank, ns3::Simulator::Now().GetSeconds())) return;
  }
  if (w.multi) {
    Round first;
    {
      WallClockAccount::Charge charge(account_);  // codec work is LibTorch's, not ns-3's
      first = w.multi->begin_exchange(codec_input(*w.multi, gradient));
    }
    send_round(rank, std::move(first));
    return;
  }
  Message m;
  m.kind = kPush;
  m.step = static_cast<std::uint64_t>(step);
  {
    WallClockAccount::Charge charge(account_);  // encoding is LibTorch work, not ns-3's
    m.payload = codecs_[rank]->encode(codec_input(*codecs_[rank], gradient));
  }
  m.loss = codecs_[rank]->traits().loss_tolerance;  // what a udp transport may lose of it
  count_payload(rank, m.payload.size());
  clock_push(m.step, 0);
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
      clock_push(m.step, m.round);
      workers_[rank]->Send(server_->self(), std::move(m));
      {
        RoundOutcome own;
        own.broadcast = std::move(round.payload);
        continue_exchange(rank, std::move(own));
      }
      return;
  }
  count_payload(rank, m.payload.size());
  clock_push(m.step, m.round);
  workers_[rank]->Send(server_->self(), std::move(m));
  // A reply that overtook nothing cannot exist yet, but an early one is kept in the inbox.
  auto it = w.inbox.find({static_cast<std::uint64_t>(w.step), w.round});
  if (it != w.inbox.end()) {
    Message early = std::move(it->second);
    w.inbox.erase(it);
    on_pull(rank, std::move(early));
  }
}

const Codec& ParameterServer::summing_codec() const {
  // Multi-round codecs push kSum rounds as dense vectors; others push their own payloads.
  return server_multi_ ? static_cast<const Codec&>(*dense_) : *server_codec_;
}

void ParameterServer::add_to_sum(StepState& s, Bytes&& payload) const {
  const Codec& codec = summing_codec();
  if (codec.traits().aggregation == Aggregation::kSummable) {
    if (s.added == 0) {
      s.compressed_sum = std::move(payload);
    } else {
      codec.accumulate(s.compressed_sum, payload);
    }
    ++s.added;
    return;
  }
  add_decoded(s, codec.decode(payload));
}

void ParameterServer::add_decoded(StepState& s, const at::Tensor& g) const {
  if (s.added == 0) {
    s.sum = g;
  } else {
    if (g.numel() != s.sum.numel()) throw DecodeError("parameter server: size mismatch");
    s.sum.add_(g);
  }
  ++s.added;
}

void ParameterServer::add_in_rank_order(StepState& s, int rank, Bytes&& payload) const {
  const bool summable = summing_codec().traits().aggregation == Aggregation::kSummable;
  if (summable) {
    if (rank != s.next_rank) {
      s.early_payloads.emplace(rank, std::move(payload));
      return;
    }
    add_to_sum(s, std::move(payload));
  } else {
    // Decoded on arrival, as a server would; only the addition waits for its turn.
    at::Tensor g = summing_codec().decode(payload);
    if (rank != s.next_rank) {
      s.early_decoded.emplace(rank, std::move(g));
      return;
    }
    add_decoded(s, g);
  }
  for (++s.next_rank;; ++s.next_rank) {
    if (summable) {
      const auto it = s.early_payloads.find(s.next_rank);
      if (it == s.early_payloads.end()) return;
      add_to_sum(s, std::move(it->second));
      s.early_payloads.erase(it);
    } else {
      const auto it = s.early_decoded.find(s.next_rank);
      if (it == s.early_decoded.end()) return;
      add_decoded(s, it->second);
      s.early_decoded.erase(it);
    }
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
    // A lost part of a single-round aggregate is lost gradient; a multi-round codec's round
    // results (factors, bases) must arrive whole.
    if (!server_multi_) out.loss = exact_loss_tolerance(downlink);
    server_->Send(static_cast<std::uint32_t>(r), std::move(out));
  }
}

void ParameterServer::on_push(Message&& message) {
  if (participation_) {
    on_round_push(std::move(message));
    return;
  }
  // Host indices of workers are their ranks (the engine places workers first).
  const auto rank = static_cast<int>(message.source);
  if (faults_ && message.kind == kJoin && rank >= 0 && rank < workers()) {
    on_join(rank);
    return;
  }
  if (faults_ && static_cast<std::int64_t>(message.step) <= last_completed_) {
    return;  // a push of an excluded worker that arrived after its step was aggregated
  }
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
    clock_all_in(message.step, message.round, workers() - 1);
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
    if (faults_) watch(message.step);
  }
  if (faults_) max_pushed_ = std::max(max_pushed_, static_cast<std::int64_t>(message.step));
  StepState& s = *slot;
  if (s.seen[rank]) throw std::runtime_error("parameter server: duplicate push");
  s.seen[rank] = true;
  {
    WallClockAccount::Charge charge(account_);  // codec work is LibTorch's, not ns-3's
    if (message.kind == kPushReduce) {
      if (s.payloads.empty()) s.payloads.resize(workers_.size());
      s.payloads[rank] = std::move(message.payload);
    } else if (faults_) {
      add_to_sum(s, std::move(message.payload));  // who contributes is known only at the end
    } else {
      add_in_rank_order(s, rank, std::move(message.payload));
    }
  }
  ++s.received;
  if (faults_) {
    complete_ready_steps();
    return;
  }
  if (s.received < workers()) return;

  at::Tensor result;
  {
    WallClockAccount::Charge charge(account_);
    if (message.kind == kPushReduce) {
      const std::vector<ByteSpan> spans(s.payloads.begin(), s.payloads.end());
      result = server_multi_->reduce_round(static_cast<int>(message.round), spans);
    } else if (server_multi_) {
      result = dense_->decode(s.compressed_sum);  // a kSum round: the plain sum
    } else {
      result = server_codec_->traits().aggregation == Aggregation::kSummable
                   ? server_codec_->decode(s.compressed_sum)
                   : s.sum;
      result = server_codec_->finalize(result, workers());
      server_codec_->observe_aggregate(result);
    }
  }
  steps_.erase(key);
  clock_all_in(key.first, key.second, workers());
  reply_all(key.first, key.second, result);
}

void ParameterServer::on_pull(int rank, Message&& message) {
  WorkerState& w = *states_[rank];
  if (participation_) {
    if (message.kind != kPull && message.kind != kPullEmpty) {
      throw std::runtime_error("parameter server: unexpected reply (kind " +
                               std::to_string(message.kind) + ") for worker " +
                               std::to_string(rank));
    }
    if (!w.done || static_cast<std::int64_t>(message.step) != w.step) {
      // The round closed before this worker was done computing it: kept until it is.
      const auto key = std::make_pair(message.step, std::uint32_t{0});
      if (!w.inbox.emplace(key, std::move(message)).second) {
        throw std::runtime_error("parameter server: two replies for one round");
      }
      return;
    }
    at::Tensor update;  // undefined: the round applied nothing
    if (message.kind == kPull) {
      WallClockAccount::Charge charge(account_);
      update = decode_any(message.payload);
      codecs_[rank]->observe_aggregate(update);
    }
    finish(rank, update);
    return;
  }
  if (faults_) {
    if (down_[rank]) return;  // the host is gone: what reaches it is lost
    if (message.kind == kJoinAccept) {
      w.donate.emplace_back(static_cast<int>(message.round),
                            static_cast<std::int64_t>(message.step));
      return;
    }
    if (message.kind == kJoinParams) {
      if (!resume_[rank]) return;
      at::Tensor parameters;
      {
        WallClockAccount::Charge charge(account_);
        parameters = DenseCodec::decode_dense(message.payload);
      }
      Resume resume = std::move(resume_[rank]);
      resume_[rank] = nullptr;
      resume(static_cast<std::int64_t>(message.step), parameters);
      return;
    }
    if (!w.done) return;  // a reply for a step this worker abandoned when it left
  }
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
  const std::int64_t next = w.step + 1;
  done(update);
  if (!faults_ || w.donate.empty()) return;
  // The replica now holds the parameters of step `next`: hand them to newcomers admitted then.
  donate_parameters(*workers_[rank], w.donate, next, kJoinParams,
                    [&] { return parameters_of_(rank); }, account_);
}

// --- phases ---------------------------------------------------------------------------------

void ParameterServer::clock_push(std::uint64_t step, std::uint32_t round) {
  if (!timing_phases()) return;
  ExchangeClock& c = clocks_[{step, round}];
  c.first_push = std::min(c.first_push, ns3::Simulator::Now().GetSeconds());
}

void ParameterServer::clock_all_in(std::uint64_t step, std::uint32_t round, int replies) {
  if (!timing_phases()) return;
  const auto it = clocks_.find({step, round});
  if (it == clocks_.end()) return;
  ExchangeClock& c = it->second;
  c.all_in = ns3::Simulator::Now().GetSeconds();
  c.replies = replies;
  phases_->add_push(static_cast<std::int64_t>(step), c.all_in - c.first_push);
  if (replies == 0) clocks_.erase(it);
}

void ParameterServer::clock_reply(const Message& message) {
  if (!timing_phases() || (message.kind != kPull && message.kind != kBroadcastDown)) return;
  const auto it = clocks_.find({message.step, message.round});
  if (it == clocks_.end() || it->second.replies <= 0) return;
  if (--it->second.replies > 0) return;
  phases_->add_pull(static_cast<std::int64_t>(message.step),
                    ns3::Simulator::Now().GetSeconds() - it->second.all_in);
  clocks_.erase(it);
}

// --- faults ---------------------------------------------------------------------------------

void ParameterServer::enable_faults(double timeout_s, FaultLog log) {
  if (server_multi_) {
    throw std::invalid_argument("ParameterServer: faults need a single-round codec");
  }
  faults_ = true;
  timeout_s_ = timeout_s;
  log_ = std::move(log);
  down_.assign(workers_.size(), false);
  live_.assign(workers_.size(), true);
  member_from_.assign(workers_.size(), 0);
  resume_.assign(workers_.size(), nullptr);
}

void ParameterServer::leave(int rank) {
  WorkerState& w = *states_.at(static_cast<std::size_t>(rank));
  down_[rank] = true;
  w.done = nullptr;
  w.inbox.clear();
  w.donate.clear();
  resume_[rank] = nullptr;
}

void ParameterServer::rejoin(int rank, Resume resume) {
  down_[rank] = false;
  resume_[rank] = std::move(resume);
  Message m;
  m.kind = kJoin;
  workers_[rank]->Send(server_->self(), std::move(m));
}

bool ParameterServer::expected(int rank, std::uint64_t step) const {
  return live_[rank] && member_from_[rank] <= static_cast<std::int64_t>(step);
}

bool ParameterServer::step_complete(const StepState& s, std::uint64_t step) const {
  if (s.received == 0) return false;
  for (int r = 0; r < workers(); ++r) {
    if (expected(r, step) && !s.seen[r]) return false;
  }
  return true;
}

void ParameterServer::complete_ready_steps() {
  // Steps complete in order: a worker pushes step k + 1 only after step k's reply.
  while (!steps_.empty()) {
    const auto it = steps_.begin();
    const std::uint64_t step = it->first.first;
    if (static_cast<std::int64_t>(step) != last_completed_ + 1 ||
        !step_complete(*it->second, step)) {
      return;
    }
    complete_step(step);
  }
}

void ParameterServer::complete_step(std::uint64_t step) {
  const auto key = std::make_pair(step, std::uint32_t{0});
  StepState& s = *steps_.at(key);
  at::Tensor result;
  {
    WallClockAccount::Charge charge(account_);
    result = server_codec_->traits().aggregation == Aggregation::kSummable
                 ? server_codec_->decode(s.compressed_sum)
                 : s.sum;
    result = server_codec_->finalize(result, s.received);  // mean over the contributors
    server_codec_->observe_aggregate(result);
  }
  const std::vector<bool> seen = s.seen;
  steps_.erase(key);
  last_completed_ = static_cast<std::int64_t>(step);
  Bytes downlink;
  {
    WallClockAccount::Charge charge(account_);
    downlink = encode_exact(result);
  }
  // Newcomers admitted from the next step get the parameters from a contributor that is
  // live; the request goes first on the same connection as the donor's reply.
  const auto joins = joins_.find(static_cast<std::int64_t>(step) + 1);
  if (joins != joins_.end()) {
    for (int newcomer : joins->second) {
      for (int r = 0; r < workers(); ++r) {
        if (r == newcomer || !seen[r] || !expected(r, step)) continue;
        Message accept;
        accept.kind = kJoinAccept;
        accept.step = step + 1;
        accept.round = static_cast<std::uint32_t>(newcomer);
        server_->Send(static_cast<std::uint32_t>(r), std::move(accept));
        break;
      }
    }
    joins_.erase(joins);
  }
  for (int r = 0; r < workers(); ++r) {
    if (!seen[r] || !expected(r, step)) continue;
    Message out;
    out.kind = kPull;
    out.step = step;
    out.payload = downlink;
    out.loss = exact_loss_tolerance(downlink);
    server_->Send(static_cast<std::uint32_t>(r), std::move(out));
  }
}

void ParameterServer::exclude(int rank, std::uint64_t step) {
  live_[rank] = false;
  if (log_) {
    log_(FaultEvent{"detected", rank, ns3::Simulator::Now().GetSeconds(),
                    static_cast<std::int64_t>(step)});
  }
}

void ParameterServer::watch(std::uint64_t step) {
  QuietWatchdog::start(
      timeout_s_,
      [this, step] {
        const auto it = steps_.find({step, 0});
        if (it == steps_.end()) return QuietWatchdog::Check::kDone;  // aggregated meanwhile
        bool excluded = false;
        for (int r = 0; r < workers(); ++r) {
          // Ping the missing: exclude those whose host is down.
          if (expected(r, step) && !it->second->seen[r] && down_[r]) {
            exclude(r, step);
            excluded = true;
          }
        }
        if (!excluded) return QuietWatchdog::Check::kQuiet;
        complete_ready_steps();
        return QuietWatchdog::Check::kDone;
      },
      [step] {
        return "parameter server: step " + std::to_string(step) +
               " stalled although every missing worker is up";
      });
}

void ParameterServer::on_join(int rank) {
  // A worker that comes back before anyone missed it lost its step all the same.
  if (live_[rank]) {
    exclude(rank, static_cast<std::uint64_t>(last_completed_ + 1));
    complete_ready_steps();
  }
  // No worker can have pushed max_pushed_ + 2 yet (each is at most one step past the highest
  // push), and step s - 1 will be aggregated without the newcomer.
  const std::int64_t s = std::max(max_pushed_ + 2, last_completed_ + 2);
  live_[rank] = true;
  member_from_[rank] = s;
  joins_[s].push_back(rank);
}

// --- partial participation ------------------------------------------------------------------

bool ParameterServer::takes_part(int rank, std::int64_t step) {
  if (!participation_) return true;
  begin_round(step);
  return participation_->sampled(step, rank);
}

void ParameterServer::sit_out(int rank, std::int64_t step, Done done) {
  if (!participation_) Collective::sit_out(rank, step, std::move(done));
  WorkerState& w = *states_.at(static_cast<std::size_t>(rank));
  if (w.done) throw std::logic_error("ParameterServer: rank sat out during a step");
  w.done = std::move(done);
  w.step = step;
  w.round = 0;
  reset_payload(rank);
  take_early_reply(rank);
}

bool ParameterServer::take_early_reply(int rank) {
  WorkerState& w = *states_[rank];
  const auto it = w.inbox.find({static_cast<std::uint64_t>(w.step), 0});
  if (it == w.inbox.end()) return false;
  Message reply = std::move(it->second);
  w.inbox.erase(it);
  // In an event of its own: the worker's step ends after the call that began it returns.
  ns3::Simulator::ScheduleNow([this, rank, reply = std::move(reply)]() mutable {
    on_pull(rank, std::move(reply));
  });
  return true;
}

void ParameterServer::begin_round(std::int64_t round) {
  if (participation_->started(round)) return;
  const std::vector<int>& clients =
      participation_->participants(round, ns3::Simulator::Now().GetSeconds());
  auto& slot = steps_[{static_cast<std::uint64_t>(round), 0}];
  slot = std::make_unique<StepState>();
  slot->seen.assign(workers_.size(), false);
  if (participation_->has_deadline()) {
    ns3::Simulator::Schedule(ns3::Seconds(participation_->options().deadline_s),
                             [this, round] { close_round(round); });
  } else if (clients.empty()) {
    ns3::Simulator::ScheduleNow([this, round] { close_round(round); });
  }
}

void ParameterServer::on_round_push(Message&& message) {
  const auto rank = static_cast<int>(message.source);
  const auto round = static_cast<std::int64_t>(message.step);
  if (message.kind != kPush || message.round != 0 || rank < 0 || rank >= workers()) {
    throw std::runtime_error("parameter server: unexpected message from host " +
                             std::to_string(message.source));
  }
  if (round <= closed_) return;  // after the deadline: the round was aggregated without it
  // A client that went away after sending is dropped from the round all the same.
  if (!participation_->counts(round, rank, ns3::Simulator::Now().GetSeconds())) return;
  const auto it = steps_.find({message.step, 0});
  if (it == steps_.end()) throw std::logic_error("parameter server: push for a round not started");
  StepState& s = *it->second;
  if (s.seen[rank]) throw std::runtime_error("parameter server: duplicate push");
  s.seen[rank] = true;
  {
    WallClockAccount::Charge charge(account_);
    add_to_sum(s, std::move(message.payload));
  }
  ++s.received;
  const auto sampled = participation_->clients(round).size();
  if (static_cast<std::size_t>(s.received) == sampled) close_round(round);
}

void ParameterServer::close_round(std::int64_t round) {
  if (round <= closed_) return;  // every client arrived before the deadline
  closed_ = round;
  const auto key = std::make_pair(static_cast<std::uint64_t>(round), std::uint32_t{0});
  const auto it = steps_.find(key);
  if (it == steps_.end()) throw std::logic_error("parameter server: closing a round not started");
  StepState& s = *it->second;
  std::vector<int> applied;
  for (int r = 0; r < workers(); ++r) {
    if (s.seen[r]) applied.push_back(r);
  }
  at::Tensor result;
  if (s.received > 0) {
    WallClockAccount::Charge charge(account_);
    result = server_codec_->traits().aggregation == Aggregation::kSummable
                 ? server_codec_->decode(s.compressed_sum)
                 : s.sum;
    result = server_codec_->finalize(result, s.received);  // mean over the arrivals
    server_codec_->observe_aggregate(result);
  }
  steps_.erase(it);
  participation_->record_outcome(round, std::move(applied), ns3::Simulator::Now().GetSeconds());
  begin_round(round + 1);  // the next round starts as this one's result leaves
  if (result.defined()) {
    reply_all(static_cast<std::uint64_t>(round), 0, result);
    return;
  }
  for (int r = 0; r < workers(); ++r) {
    Message out;
    out.kind = kPullEmpty;
    out.step = static_cast<std::uint64_t>(round);
    server_->Send(static_cast<std::uint32_t>(r), std::move(out));
  }
}

}  // namespace gradwire
