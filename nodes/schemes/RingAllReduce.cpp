#include "nodes/schemes/RingAllReduce.h"

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
#include "nodes/schemes/DeviceStreams.h"
#include "nodes/schemes/ParameterDonation.h"
#include "nodes/schemes/QuietWatchdog.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

namespace {
// Message kinds: the phase in the low 4 bits, the codec's exchange round above them, so
// messages of different rounds of one step never meet in the inbox.
enum Phase : std::uint32_t { kReduceScatter = 1, kAllGather = 2, kBroadcastHop = 3 };
// Fault control messages (never tagged with an epoch).
enum Control : std::uint32_t {
  kJoin = 4,        // rejoining rank -> donor
  kRecover = 5,     // survivor that completed `step` -> survivor still in it: the aggregate
  kJoinParams = 6,  // donor -> newcomer: the parameters at the start of `step`
};
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
// What the current operation does with the slots.
enum class Operation { kChunkSum, kGather, kBroadcast };

int mod(int a, int n) { return ((a % n) + n) % n; }

// Phase in bits 0-3, the codec's exchange round in bits 4-15, the membership epoch above.
std::uint32_t kind_of(std::uint32_t phase, int exchange_round, std::uint32_t epoch = 0) {
  return phase | (static_cast<std::uint32_t>(exchange_round) << 4) | (epoch << 16);
}

std::vector<std::int64_t> chunk_bounds(std::int64_t numel, int n) {
  std::vector<std::int64_t> bounds(n + 1);
  for (int i = 0; i <= n; ++i) bounds[i] = numel * i / n;
  return bounds;
}
}  // namespace

struct RingAllReduce::RankState {
  bool active = false;        // contributed and not finished
  std::int64_t step = -1;
  MultiRoundCodec* multi = nullptr;  // set when the codec exchanges in rounds
  Codec* summing = nullptr;   // codec that accumulates/decodes the chunks of kChunkSum
  int exchange_round = 0;
  Operation op = Operation::kChunkSum;
  int root = 0;               // kBroadcast
  std::uint32_t phase = kReduceScatter;
  int hop = 0;                // next hop to receive in the current phase
  std::int64_t numel = 0;     // elements of what is being reduced
  std::vector<Bytes> slots;   // chunk payloads, payload per ring position, or the broadcast
  // kChunkSum: each fully reduced chunk, decoded as soon as it is final, so its bytes can be
  // forwarded without a copy.
  std::vector<at::Tensor> parts;
  // Pipelined encoding: the simulated instant each own chunk is encoded (empty: all are).
  std::vector<double> encoded_at;
  ns3::Time wake_at = ns3::Seconds(-1);  // an advance is scheduled then (pipelined encoding)
  Done done;
  // The ring of this step: members in order, this rank's position, their count, the epoch.
  std::vector<int> members;
  int pos = 0;
  int n = 0;
  std::uint32_t epoch = 0;
  // Faults only.
  at::Tensor own_dense;       // this rank's contribution, dense, to restart a summed step
  Bytes own_payload;          // ... or its payload, to restart a gathered step
  std::int64_t next_step = 0;       // the step this rank is in (contributed or computing)
  std::int64_t completed_step = -1;
  at::Tensor last_update;           // the aggregate of completed_step
  std::uint64_t progress = 0;       // messages consumed and restarts: what a timeout watches
  bool watching = false;
  std::vector<std::pair<int, std::int64_t>> donate;  // (newcomer, step) to send parameters to
  // Messages that arrived before this rank reached them, keyed by (step, kind, hop).
  std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, Message> inbox;
};

RingAllReduce::RingAllReduce(std::vector<Endpoint*> messengers, std::vector<Codec*> codecs)
    : messengers_(std::move(messengers)),
      codecs_(std::move(codecs)),
      dense_(std::make_unique<DenseCodec>()) {
  if (messengers_.size() != codecs_.size() || messengers_.empty()) {
    throw std::invalid_argument("RingAllReduce: need one messenger and one codec per worker");
  }
  for (std::size_t r = 0; r < messengers_.size(); ++r) {
    ranks_.push_back(std::make_unique<RankState>());
    ranks_.back()->multi = dynamic_cast<MultiRoundCodec*>(codecs_[r]);
    const int rank = static_cast<int>(r);
    messengers_[r]->SetHandler([this, rank](Message&& m) { on_message(rank, std::move(m)); });
  }
}

RingAllReduce::~RingAllReduce() = default;

void RingAllReduce::set_devices(std::vector<DeviceStreams*> devices) {
  if (devices.size() != messengers_.size()) {
    throw std::invalid_argument("RingAllReduce: need one device per worker");
  }
  devices_ = std::move(devices);
}

void RingAllReduce::join_ring(int rank) {
  RankState& s = *ranks_[rank];
  s.members.clear();
  for (int r = 0; r < workers(); ++r) {
    if (member(r, s.step)) s.members.push_back(r);
  }
  const auto it = std::find(s.members.begin(), s.members.end(), rank);
  if (it == s.members.end()) {
    throw std::logic_error("RingAllReduce: rank " + std::to_string(rank) +
                           " contributed to step " + std::to_string(s.step) +
                           " without being a member");
  }
  s.pos = static_cast<int>(it - s.members.begin());
  s.n = static_cast<int>(s.members.size());
  s.epoch = epoch(s.step);
}

void RingAllReduce::contribute(int rank, std::int64_t step, const at::Tensor& gradient,
                               Done done) {
  RankState& s = *ranks_.at(static_cast<std::size_t>(rank));
  if (s.active) throw std::logic_error("RingAllReduce: rank contributed twice");
  s.active = true;
  s.step = step;
  s.next_step = step;
  s.done = std::move(done);
  s.exchange_round = 0;
  join_ring(rank);
  const int n = s.n;
  reset_payload(rank);
  if (s.multi) {
    Round first;
    {
      WallClockAccount::Charge charge(account_);  // codec work is LibTorch's, not ns-3's
      first = s.multi->begin_exchange(codec_input(*s.multi, gradient));
    }
    start_round(rank, std::move(first));
  } else {
    WallClockAccount::Charge charge(account_);
    s.numel = gradient.numel();
    s.encoded_at.clear();
    if (codecs_[rank]->traits().aggregation == Aggregation::kSummable) {
      s.op = Operation::kChunkSum;
      s.summing = codecs_[rank];
      const bool pipelined = codecs_[rank]->traits().pipelines_chunks && !devices_.empty() &&
                             !faults_ && n > 1;
      const double start = pipelined ? devices_[rank]->encode_starts_at() : 0.0;
      s.slots = codecs_[rank]->encode_chunks(codec_input(*codecs_[rank], gradient),
                                             chunk_bounds(s.numel, n));
      if (pipelined) pipeline_chunks(rank, start);
      std::uint64_t bytes = 0;
      for (const Bytes& chunk : s.slots) bytes += chunk.size();
      count_payload(rank, bytes);
      if (faults_) {
        // What this rank contributes, as the codec encoded it, for a restart on a new ring.
        std::vector<at::Tensor> parts;
        for (const Bytes& chunk : s.slots) parts.push_back(s.summing->decode(chunk));
        s.own_dense = at::cat(parts);
      }
    } else {
      s.op = Operation::kGather;
      s.slots.assign(n, Bytes());
      s.slots[s.pos] = codecs_[rank]->encode(codec_input(*codecs_[rank], gradient));
      count_payload(rank, s.slots[s.pos].size());
      if (faults_) s.own_payload = s.slots[s.pos];
    }
    start_operation(rank);
  }
  if (faults_) watch(rank);
  advance(rank);
}

void RingAllReduce::start_round(int rank, Round&& round) {
  RankState& s = *ranks_[rank];
  const int n = s.n;
  switch (round.op) {
    case RoundOp::kSum: {
      if (!round.values.defined() || round.values.dim() != 1) {
        throw std::logic_error("codec '" + codecs_[rank]->name() +
                               "': a kSum round needs a 1-D float tensor");
      }
      s.op = Operation::kChunkSum;
      s.summing = dense_.get();
      s.numel = round.values.numel();
      WallClockAccount::Charge charge(account_);
      s.slots = dense_->encode_chunks(round.values.contiguous(), chunk_bounds(s.numel, n));
      std::uint64_t bytes = 0;
      for (const Bytes& chunk : s.slots) bytes += chunk.size();
      count_payload(rank, bytes);
      break;
    }
    case RoundOp::kReduce:
      s.op = Operation::kGather;
      s.slots.assign(n, Bytes());
      count_payload(rank, round.payload.size());
      s.slots[s.pos] = std::move(round.payload);
      break;
    case RoundOp::kBroadcast:
      if (round.root < 0 || round.root >= n) {
        throw std::logic_error("codec '" + codecs_[rank]->name() + "': broadcast root " +
                               std::to_string(round.root) + " is not a worker");
      }
      s.op = Operation::kBroadcast;
      s.root = round.root;  // multi-round codecs run without faults: positions are ranks
      s.slots.assign(1, Bytes());
      if (s.pos == round.root) {
        count_payload(rank, round.payload.size());
        s.slots[0] = std::move(round.payload);
      }
      break;
  }
  start_operation(rank);
}

void RingAllReduce::send_next(int rank, std::uint32_t phase, std::uint32_t hop,
                              Bytes payload) {
  RankState& s = *ranks_[rank];
  Message m;
  m.kind = kind_of(phase, s.exchange_round, s.epoch);
  m.round = hop;
  m.step = static_cast<std::uint64_t>(s.step);
  m.payload = std::move(payload);
  // Single-round chunks are codec payloads; a udp transport may lose what the codec allows.
  // Multi-round exchanges (factors, bases, broadcasts) must arrive whole.
  if (!s.multi) m.loss = codecs_[rank]->traits().loss_tolerance;
  messengers_[rank]->Send(static_cast<std::uint32_t>(s.members[mod(s.pos + 1, s.n)]),
                          std::move(m));
}

void RingAllReduce::start_operation(int rank) {
  RankState& s = *ranks_[rank];
  const int n = s.n;
  s.hop = 0;
  s.parts.assign(s.op == Operation::kChunkSum ? s.slots.size() : 0, at::Tensor());
  if (s.op == Operation::kChunkSum) {
    s.phase = kReduceScatter;
  } else if (s.op == Operation::kGather) {
    s.phase = kAllGather;
  } else {
    s.phase = kBroadcastHop;
    // The root's message reaches this rank on hop (distance from the root - 1).
    s.hop = mod(s.pos - s.root, n) - 1;
  }
  if (n == 1) {
    complete_operation(rank);
    return;
  }
  if (s.op == Operation::kBroadcast) {
    if (s.pos != s.root) return;  // wait for the predecessor
    send_next(rank, kBroadcastHop, 0, s.slots[0]);
    complete_operation(rank);    // the root has its own payload already
    return;
  }
  // First hop: reduce-scatter sends chunk `pos`; all-gather sends our own payload, which the
  // operation still needs.
  Bytes& first = s.slots[s.pos];
  send_next(rank, s.phase, 0, s.phase == kReduceScatter ? std::move(first) : first);
}

void RingAllReduce::on_message(int rank, Message&& message) {
  RankState& s = *ranks_.at(static_cast<std::size_t>(rank));
  if (faults_) {
    if (down_[rank]) return;  // the host is gone: what reaches it is lost
    const std::uint32_t phase = message.kind & 0xF;
    if (phase == kJoin || phase == kRecover || phase == kJoinParams) {
      on_control(rank, std::move(message));
      return;
    }
    // A message of an older ring of its step: the step was restarted without its sender.
    if ((message.kind >> 16) < epoch(static_cast<std::int64_t>(message.step))) return;
    if (static_cast<std::int64_t>(message.step) <= s.completed_step) return;
  }
  s.inbox.emplace(std::make_tuple(message.step, message.kind, message.round), std::move(message));
  advance(rank);
}

void RingAllReduce::advance(int rank) {
  RankState& s = *ranks_[rank];
  while (s.active) {
    const int n = s.n;
    auto it = s.inbox.find(std::make_tuple(static_cast<std::uint64_t>(s.step),
                                           kind_of(s.phase, s.exchange_round, s.epoch),
                                           static_cast<std::uint32_t>(s.hop)));
    if (it == s.inbox.end()) return;
    if (s.phase == kReduceScatter && awaits_encode(rank, mod(s.pos - 1 - s.hop, n))) return;
    Message m = std::move(it->second);
    s.inbox.erase(it);
    ++s.progress;
    if (s.phase == kBroadcastHop) {
      s.slots[0] = std::move(m.payload);
      // Forward along the ring until the root's predecessor has it.
      if (mod(s.pos + 1, n) != s.root) send_next(rank, kBroadcastHop, s.hop + 1, s.slots[0]);
      if (complete_operation(rank)) return;
      continue;
    }
    const bool summing = s.op == Operation::kChunkSum;
    const int pos = s.pos;
    // Predecessor's hop h carries the chunk (or origin payload) with index (pos - 1 - h).
    const int index = s.phase == kReduceScatter ? mod(pos - 1 - s.hop, n)
                      : summing                 ? mod(pos - s.hop, n)
                                                : mod(pos - 1 - s.hop, n);
    if (s.phase == kReduceScatter) {
      WallClockAccount::Charge charge(account_);
      s.summing->accumulate(s.slots[index], m.payload);
    } else {
      s.slots[index] = std::move(m.payload);
      if (summing) decode_part(rank, index);
    }
    ++s.hop;
    const bool phase_over = s.hop == n - 1;
    if (phase_over && s.phase == kAllGather) {
      if (complete_operation(rank)) return;
      continue;
    }
    if (phase_over) {
      // Reduce-scatter done: this rank owns the fully reduced chunk (pos + 1); start the
      // all-gather by sending it on.
      s.phase = kAllGather;
      s.hop = 0;
      const int own = mod(pos + 1, n);
      if (summing) decode_part(rank, own);
      send_next(rank, kAllGather, 0, summing ? std::move(s.slots[own]) : s.slots[own]);
    } else if (s.phase == kReduceScatter || summing) {
      // A reduce-scatter partial sum moves on; so does a reduced chunk, decoded already.
      send_next(rank, s.phase, static_cast<std::uint32_t>(s.hop), std::move(s.slots[index]));
    } else {
      send_next(rank, s.phase, static_cast<std::uint32_t>(s.hop), s.slots[index]);
    }
  }
}

void RingAllReduce::pipeline_chunks(int rank, double start) {
  RankState& s = *ranks_[rank];
  DeviceStreams& device = *devices_[static_cast<std::size_t>(rank)];
  const double end = device.encode_starts_at();  // the charged encode ends here
  std::uint64_t total = 0;
  for (const Bytes& chunk : s.slots) total += chunk.size();
  if (end <= start || total == 0) return;
  // Reduce-scatter sends chunk pos at hop 0 and adds its own chunk pos - 1 - h to what hop h
  // brings: the encode makes them in that order.
  s.encoded_at.assign(static_cast<std::size_t>(s.n), end);
  std::uint64_t done = 0;
  for (int h = 0; h + 1 < s.n; ++h) {
    const auto index = static_cast<std::size_t>(mod(s.pos - h, s.n));
    done += s.slots[index].size();
    s.encoded_at[index] = start + (end - start) * static_cast<double>(done) / static_cast<double>(total);
  }
  device.release_sends_at(s.encoded_at[static_cast<std::size_t>(s.pos)]);
}

bool RingAllReduce::awaits_encode(int rank, int index) {
  RankState& s = *ranks_[rank];
  if (s.encoded_at.empty()) return false;
  // In ns-3's time units, so the scheduled advance finds the chunk encoded.
  const ns3::Time ready = ns3::Seconds(s.encoded_at[static_cast<std::size_t>(index)]);
  const ns3::Time now = ns3::Simulator::Now();
  if (ready <= now) return false;
  if (s.wake_at != ready) {
    s.wake_at = ready;
    ns3::Simulator::Schedule(ready - now, [this, rank]() { advance(rank); });
  }
  return true;
}

void RingAllReduce::decode_part(int rank, int index) {
  RankState& s = *ranks_[rank];
  WallClockAccount::Charge charge(account_);  // decoding is LibTorch work, not ns-3's
  s.parts[static_cast<std::size_t>(index)] =
      s.summing->decode(s.slots[static_cast<std::size_t>(index)]);
}

bool RingAllReduce::complete_operation(int rank) {
  RankState& s = *ranks_[rank];
  const int n = s.n;
  at::Tensor update;
  std::optional<Round> next;
  {
    WallClockAccount::Charge charge(account_);  // decoding is LibTorch work, not ns-3's
    at::Tensor total;
    if (s.op == Operation::kChunkSum) {
      for (std::size_t i = 0; i < s.slots.size(); ++i) {
        if (!s.parts[i].defined()) s.parts[i] = s.summing->decode(s.slots[i]);
      }
      total = at::cat(s.parts);
      if (total.numel() != s.numel) {
        throw DecodeError("ring all-reduce: aggregate has " + std::to_string(total.numel()) +
                          " elements, expected " + std::to_string(s.numel));
      }
    } else if (s.op == Operation::kGather && !s.multi) {
      total = at::zeros({s.numel}, at::kFloat);
      for (const Bytes& payload : s.slots) {
        at::Tensor part = codecs_[rank]->decode(payload);
        if (part.numel() != s.numel) {
          throw DecodeError("ring all-reduce: a payload decodes to " +
                            std::to_string(part.numel()) + " elements, expected " +
                            std::to_string(s.numel));
        }
        total.add_(part);
      }
    }
    if (s.multi) {
      RoundOutcome outcome;
      if (s.op == Operation::kChunkSum) {
        outcome.sum = total;
      } else if (s.op == Operation::kGather) {
        const std::vector<ByteSpan> spans(s.slots.begin(), s.slots.end());
        outcome.sum = s.multi->reduce_round(s.exchange_round, spans);
      } else {
        outcome.broadcast = std::move(s.slots[0]);
      }
      next = s.multi->continue_exchange(s.exchange_round, std::move(outcome));
      if (!next) update = s.multi->exchange_result();
    } else {
      update = codecs_[rank]->finalize(total, n);  // the mean over this ring's members
      codecs_[rank]->observe_aggregate(update);
    }
  }
  if (next) {
    ++s.exchange_round;
    start_round(rank, std::move(*next));
    return !s.active;
  }
  s.active = false;
  s.slots.clear();
  s.parts.clear();
  if (faults_) {
    s.completed_step = s.step;
    s.next_step = s.step + 1;
    s.last_update = update.clone();
    s.own_dense = at::Tensor();
    s.own_payload.clear();
  }
  Done done = std::move(s.done);
  s.done = nullptr;
  done(update);
  if (faults_ && !s.donate.empty()) {
    // The replica now holds the parameters of step + 1: hand them to newcomers admitted then.
    donate_parameters(*messengers_[rank], s.donate, s.completed_step + 1, kJoinParams,
                      [&] { return parameters_of_(rank); }, account_);
  }
  return true;
}

// --- faults ---------------------------------------------------------------------------------

void RingAllReduce::enable_faults(double timeout_s, FaultLog log) {
  for (const auto& s : ranks_) {
    if (s->multi) throw std::invalid_argument("RingAllReduce: faults need a single-round codec");
  }
  faults_ = true;
  timeout_s_ = timeout_s;
  log_ = std::move(log);
  down_.assign(ranks_.size(), false);
  excluded_from_.assign(ranks_.size(), kNever);
  rejoined_from_.assign(ranks_.size(), kNever);
  resume_.assign(ranks_.size(), nullptr);
}

bool RingAllReduce::member(int rank, std::int64_t step) const {
  if (!faults_) return true;
  return step < excluded_from_[rank] || step >= rejoined_from_[rank];
}

std::uint32_t RingAllReduce::epoch(std::int64_t step) const {
  if (!faults_) return 0;
  std::uint32_t e = 0;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    e += (excluded_from_[r] <= step) + (rejoined_from_[r] <= step);
  }
  return e;
}

std::int64_t RingAllReduce::current_step(int rank) const {
  const RankState& s = *ranks_[rank];
  return s.active ? s.step : s.next_step;
}

void RingAllReduce::leave(int rank) {
  RankState& s = *ranks_.at(static_cast<std::size_t>(rank));
  down_[rank] = true;
  s.active = false;
  s.done = nullptr;
  s.slots.clear();
  s.parts.clear();
  s.inbox.clear();
  s.donate.clear();
  resume_[rank] = nullptr;
}

void RingAllReduce::rejoin(int rank, Resume resume) {
  down_[rank] = false;
  resume_[rank] = std::move(resume);
  // The newcomer knows a contact: the lowest rank that is up.
  for (int r = 0; r < workers(); ++r) {
    if (r == rank || down_[r]) continue;
    Message m;
    m.kind = kJoin;
    messengers_[rank]->Send(static_cast<std::uint32_t>(r), std::move(m));
    return;
  }
}

void RingAllReduce::watch(int rank) {
  RankState& s = *ranks_[rank];
  if (s.watching) return;
  s.watching = true;
  QuietWatchdog::start(
      timeout_s_,
      [this, rank, last = s.progress]() mutable {
        RankState& r = *ranks_[rank];
        if (!r.active || down_[rank]) {
          r.watching = false;
          return QuietWatchdog::Check::kDone;
        }
        QuietWatchdog::Check found = QuietWatchdog::Check::kAlive;
        if (r.progress == last) {
          // No message for `timeout`: ping the ring's members.
          std::vector<int> gone;
          for (int m : r.members) {
            if (down_[m] && member(m, r.step)) gone.push_back(m);
          }
          if (gone.empty()) {
            found = QuietWatchdog::Check::kQuiet;
          } else {
            exclude(gone);
          }
        }
        if (!r.active) {
          r.watching = false;
          return QuietWatchdog::Check::kDone;
        }
        last = r.progress;
        return found;
      },
      [rank] {
        return "ring all-reduce: rank " + std::to_string(rank) +
               " stalled although every member is up";
      });
}

void RingAllReduce::exclude(const std::vector<int>& gone) {
  // The oldest step a survivor is in, and whether some survivor already completed it.
  std::int64_t oldest = kNever;
  std::vector<int> survivors;
  for (int r = 0; r < workers(); ++r) {
    if (down_[r] || !member(r, current_step(r))) continue;
    survivors.push_back(r);
    oldest = std::min(oldest, current_step(r));
  }
  int donor = -1;
  for (int r : survivors) {
    if (ranks_[r]->completed_step >= oldest) {
      donor = r;
      break;
    }
  }
  const std::int64_t from = donor >= 0 ? oldest + 1 : oldest;
  for (int r : gone) {
    excluded_from_[r] = std::max<std::int64_t>(from, 0);
    if (log_) log_(FaultEvent{"detected", r, ns3::Simulator::Now().GetSeconds(), from});
  }
  for (int r : survivors) {
    RankState& s = *ranks_[r];
    if (!s.active) continue;
    if (s.step >= from) {
      restart(r);
    } else if (donor >= 0) {
      // Still in the step the donor completed: it sends the aggregate over the network.
      Message m;
      m.kind = kRecover;
      m.step = static_cast<std::uint64_t>(s.step);
      {
        WallClockAccount::Charge charge(account_);
        m.payload = encode_exact(ranks_[donor]->last_update);
      }
      messengers_[donor]->Send(static_cast<std::uint32_t>(r), std::move(m));
    }
  }
}

void RingAllReduce::restart(int rank) {
  RankState& s = *ranks_[rank];
  // Drop what the old ring of this step delivered early.
  for (auto it = s.inbox.begin(); it != s.inbox.end();) {
    const auto step = static_cast<std::int64_t>(std::get<0>(it->first));
    if ((std::get<1>(it->first) >> 16) < epoch(step)) {
      it = s.inbox.erase(it);
    } else {
      ++it;
    }
  }
  join_ring(rank);
  ++s.progress;
  if (s.op == Operation::kChunkSum) {
    WallClockAccount::Charge charge(account_);
    s.summing = dense_.get();
    s.slots = dense_->encode_chunks(s.own_dense, chunk_bounds(s.numel, s.n));
  } else {
    s.slots.assign(static_cast<std::size_t>(s.n), Bytes());
    s.slots[s.pos] = s.own_payload;
  }
  start_operation(rank);
  advance(rank);
}

void RingAllReduce::on_control(int rank, Message&& message) {
  RankState& s = *ranks_[rank];
  const std::uint32_t phase = message.kind & 0xF;
  const auto source = static_cast<int>(message.source);
  if (phase == kRecover) {
    if (!s.active || static_cast<std::int64_t>(message.step) != s.step) return;
    at::Tensor update;
    {
      WallClockAccount::Charge charge(account_);
      update = decode_any(message.payload);
      codecs_[rank]->observe_aggregate(update);
    }
    s.active = false;
    s.slots.clear();
    s.parts.clear();
    s.completed_step = s.step;
    s.next_step = s.step + 1;
    s.last_update = update.clone();
    ++s.progress;
    Done done = std::move(s.done);
    s.done = nullptr;
    done(update);
    return;
  }
  if (phase == kJoin) {
    // A newcomer lost its state: if nobody missed it yet, it is excluded now.
    if (member(source, current_step(source)) && excluded_from_[source] == kNever) {
      exclude({source});
    }
    // No survivor is past our step + 1 (a ring step needs everyone), so s is still ahead of
    // all of them; step s - 1 runs without the newcomer.
    const std::int64_t excluded = std::min(excluded_from_[source], current_step(rank));
    const std::int64_t s_join = std::max(current_step(rank) + 2, excluded + 1);
    rejoined_from_[source] = s_join;
    s.donate.emplace_back(source, s_join);
    return;
  }
  // kJoinParams: this rank is the newcomer.
  if (!resume_[rank]) return;
  at::Tensor parameters;
  {
    WallClockAccount::Charge charge(account_);
    parameters = DenseCodec::decode_dense(message.payload);
  }
  RankState& me = *ranks_[rank];
  me.inbox.clear();
  me.completed_step = static_cast<std::int64_t>(message.step) - 1;
  me.next_step = static_cast<std::int64_t>(message.step);
  Resume resume = std::move(resume_[rank]);
  resume_[rank] = nullptr;
  resume(static_cast<std::int64_t>(message.step), parameters);
}

}  // namespace gradwire
