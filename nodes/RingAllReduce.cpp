#include "nodes/RingAllReduce.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "codecs/DenseCodec.h"
#include "codecs/MultiRoundCodec.h"
#include "nodes/Endpoint.h"

namespace gradwire {

namespace {
// Message kinds: the phase in the low 4 bits, the codec's exchange round above them, so
// messages of different rounds of one step never meet in the inbox.
enum Phase : std::uint32_t { kReduceScatter = 1, kAllGather = 2, kBroadcastHop = 3 };
// What the current operation does with the slots.
enum class Operation { kChunkSum, kGather, kBroadcast };

int mod(int a, int n) { return ((a % n) + n) % n; }

std::uint32_t kind_of(std::uint32_t phase, int exchange_round) {
  return phase | (static_cast<std::uint32_t>(exchange_round) << 4);
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
  std::vector<Bytes> slots;   // chunk payloads, payload per origin rank, or the broadcast
  Done done;
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

void RingAllReduce::contribute(int rank, std::int64_t step, const at::Tensor& gradient,
                               Done done) {
  RankState& s = *ranks_.at(static_cast<std::size_t>(rank));
  if (s.active) throw std::logic_error("RingAllReduce: rank contributed twice");
  const int n = workers();
  s.active = true;
  s.step = step;
  s.done = std::move(done);
  s.exchange_round = 0;
  reset_payload(rank);
  if (s.multi) {
    Round first;
    {
      WallClockAccount::Charge charge(account_);  // codec work is LibTorch's, not ns-3's
      first = s.multi->begin_exchange(gradient);
    }
    start_round(rank, std::move(first));
  } else {
    WallClockAccount::Charge charge(account_);
    s.numel = gradient.numel();
    if (codecs_[rank]->aggregation() == Aggregation::kSummable) {
      s.op = Operation::kChunkSum;
      s.summing = codecs_[rank];
      s.slots = codecs_[rank]->encode_chunks(gradient, chunk_bounds(s.numel, n));
      std::uint64_t bytes = 0;
      for (const Bytes& chunk : s.slots) bytes += chunk.size();
      count_payload(rank, bytes);
    } else {
      s.op = Operation::kGather;
      s.slots.assign(n, Bytes());
      s.slots[rank] = codecs_[rank]->encode(gradient);
      count_payload(rank, s.slots[rank].size());
    }
    start_operation(rank);
  }
  advance(rank);
}

void RingAllReduce::start_round(int rank, Round&& round) {
  RankState& s = *ranks_[rank];
  const int n = workers();
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
      s.slots[rank] = std::move(round.payload);
      break;
    case RoundOp::kBroadcast:
      if (round.root < 0 || round.root >= n) {
        throw std::logic_error("codec '" + codecs_[rank]->name() + "': broadcast root " +
                               std::to_string(round.root) + " is not a worker");
      }
      s.op = Operation::kBroadcast;
      s.root = round.root;
      s.slots.assign(1, Bytes());
      if (rank == round.root) {
        count_payload(rank, round.payload.size());
        s.slots[0] = std::move(round.payload);
      }
      break;
  }
  start_operation(rank);
}

void RingAllReduce::send_next(int rank, std::uint32_t phase, std::uint32_t hop,
                              const Bytes& payload) {
  RankState& s = *ranks_[rank];
  Message m;
  m.kind = kind_of(phase, s.exchange_round);
  m.round = hop;
  m.step = static_cast<std::uint64_t>(s.step);
  m.payload = payload;
  messengers_[rank]->Send(static_cast<std::uint32_t>(mod(rank + 1, workers())), std::move(m));
}

void RingAllReduce::start_operation(int rank) {
  RankState& s = *ranks_[rank];
  const int n = workers();
  s.hop = 0;
  if (s.op == Operation::kChunkSum) {
    s.phase = kReduceScatter;
  } else if (s.op == Operation::kGather) {
    s.phase = kAllGather;
  } else {
    s.phase = kBroadcastHop;
    // The root's message reaches this rank on hop (distance from the root - 1).
    s.hop = mod(rank - s.root, n) - 1;
  }
  if (n == 1) {
    complete_operation(rank);
    return;
  }
  if (s.op == Operation::kBroadcast) {
    if (rank != s.root) return;  // wait for the predecessor
    send_next(rank, kBroadcastHop, 0, s.slots[0]);
    complete_operation(rank);    // the root has its own payload already
    return;
  }
  // First hop: reduce-scatter sends chunk `rank`; all-gather sends our own payload.
  send_next(rank, s.phase, 0, s.slots[rank]);
}

void RingAllReduce::on_message(int rank, Message&& message) {
  RankState& s = *ranks_.at(static_cast<std::size_t>(rank));
  s.inbox.emplace(std::make_tuple(message.step, message.kind, message.round), std::move(message));
  advance(rank);
}

void RingAllReduce::advance(int rank) {
  RankState& s = *ranks_[rank];
  const int n = workers();
  while (s.active) {
    auto it = s.inbox.find(std::make_tuple(static_cast<std::uint64_t>(s.step),
                                           kind_of(s.phase, s.exchange_round),
                                           static_cast<std::uint32_t>(s.hop)));
    if (it == s.inbox.end()) return;
    Message m = std::move(it->second);
    s.inbox.erase(it);
    if (s.phase == kBroadcastHop) {
      s.slots[0] = std::move(m.payload);
      // Forward along the ring until the root's predecessor has it.
      if (mod(rank + 1, n) != s.root) send_next(rank, kBroadcastHop, s.hop + 1, s.slots[0]);
      if (complete_operation(rank)) return;
      continue;
    }
    const bool summing = s.op == Operation::kChunkSum;
    // Predecessor's hop h carries the chunk (or origin payload) with index (rank - 1 - h).
    const int index = s.phase == kReduceScatter ? mod(rank - 1 - s.hop, n)
                      : summing                 ? mod(rank - s.hop, n)
                                                : mod(rank - 1 - s.hop, n);
    if (s.phase == kReduceScatter) {
      WallClockAccount::Charge charge(account_);
      s.summing->accumulate(s.slots[index], m.payload);
    } else {
      s.slots[index] = std::move(m.payload);
    }
    ++s.hop;
    const bool phase_over = s.hop == n - 1;
    if (phase_over && s.phase == kAllGather) {
      if (complete_operation(rank)) return;
      continue;
    }
    if (phase_over) {
      // Reduce-scatter done: this rank owns the fully reduced chunk (rank + 1); start the
      // all-gather by sending it on.
      s.phase = kAllGather;
      s.hop = 0;
      send_next(rank, kAllGather, 0, s.slots[mod(rank + 1, n)]);
    } else {
      send_next(rank, s.phase, static_cast<std::uint32_t>(s.hop), s.slots[index]);
    }
  }
}

bool RingAllReduce::complete_operation(int rank) {
  RankState& s = *ranks_[rank];
  const int n = workers();
  at::Tensor update;
  std::optional<Round> next;
  {
    WallClockAccount::Charge charge(account_);  // decoding is LibTorch work, not ns-3's
    at::Tensor total;
    if (s.op == Operation::kChunkSum) {
      std::vector<at::Tensor> parts;
      parts.reserve(s.slots.size());
      for (const Bytes& chunk : s.slots) parts.push_back(s.summing->decode(chunk));
      total = at::cat(parts);
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
      update = codecs_[rank]->finalize(total, n);
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
  Done done = std::move(s.done);
  s.done = nullptr;
  done(update);
  return true;
}

}  // namespace gradwire
