#include "nodes/RingAllReduce.h"

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "nodes/Endpoint.h"

namespace gradwire {

namespace {
enum Kind : std::uint32_t { kReduceScatter = 1, kAllGather = 2 };

int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

struct RingAllReduce::RankState {
  bool active = false;      // contributed and not finished
  std::int64_t step = -1;
  bool summable = false;
  int phase = kReduceScatter;
  int hop = 0;              // next hop to receive in the current phase
  std::int64_t numel = 0;
  std::vector<Bytes> slots;  // summable: chunk payloads; otherwise: payload per origin rank
  Done done;
  // Messages that arrived before this rank reached them, keyed by (step, kind, hop).
  std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, Message> inbox;
};

RingAllReduce::RingAllReduce(std::vector<Endpoint*> messengers, std::vector<Codec*> codecs)
    : messengers_(std::move(messengers)), codecs_(std::move(codecs)) {
  if (messengers_.size() != codecs_.size() || messengers_.empty()) {
    throw std::invalid_argument("RingAllReduce: need one messenger and one codec per worker");
  }
  for (std::size_t r = 0; r < messengers_.size(); ++r) {
    ranks_.push_back(std::make_unique<RankState>());
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
  s.numel = gradient.numel();
  s.summable = codecs_[rank]->aggregation() == Aggregation::kSummable;
  s.phase = kReduceScatter;
  s.hop = 0;
  if (s.summable) {
    WallClockAccount::Charge charge(account_);  // encoding is LibTorch work, not ns-3's
    std::vector<std::int64_t> bounds(n + 1);
    for (int i = 0; i <= n; ++i) bounds[i] = s.numel * i / n;
    s.slots = codecs_[rank]->encode_chunks(gradient, bounds);
    std::uint64_t bytes = 0;
    for (const Bytes& chunk : s.slots) bytes += chunk.size();
    count_payload(rank, bytes);
  } else {
    WallClockAccount::Charge charge(account_);
    s.slots.assign(n, Bytes());
    s.slots[rank] = codecs_[rank]->encode(gradient);
    count_payload(rank, s.slots[rank].size());
    s.phase = kAllGather;
  }
  if (n == 1) {
    finish(rank);
    return;
  }
  // First hop: reduce-scatter sends chunk `rank`; all-gather sends our own payload.
  Message m;
  m.kind = static_cast<std::uint32_t>(s.phase);
  m.round = 0;
  m.step = static_cast<std::uint64_t>(step);
  m.payload = s.slots[rank];
  messengers_[rank]->Send(static_cast<std::uint32_t>(mod(rank + 1, n)), std::move(m));
  advance(rank);
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
                                           static_cast<std::uint32_t>(s.phase),
                                           static_cast<std::uint32_t>(s.hop)));
    if (it == s.inbox.end()) return;
    Message m = std::move(it->second);
    s.inbox.erase(it);
    // Predecessor's hop h carries the chunk (or origin payload) with index (rank - 1 - h).
    const int index = s.phase == kReduceScatter ? mod(rank - 1 - s.hop, n)
                      : s.summable              ? mod(rank - s.hop, n)
                                                : mod(rank - 1 - s.hop, n);
    if (s.phase == kReduceScatter) {
      WallClockAccount::Charge charge(account_);
      codecs_[rank]->accumulate(s.slots[index], m.payload);
    } else {
      s.slots[index] = std::move(m.payload);
    }
    ++s.hop;
    const bool phase_over = s.hop == n - 1;
    if (phase_over && s.phase == kAllGather) {
      finish(rank);
      return;
    }
    Message out;
    out.step = static_cast<std::uint64_t>(s.step);
    if (phase_over) {
      // Reduce-scatter done: this rank owns the fully reduced chunk (rank + 1); start the
      // all-gather by sending it on.
      s.phase = kAllGather;
      s.hop = 0;
      out.kind = kAllGather;
      out.round = 0;
      out.payload = s.slots[mod(rank + 1, n)];
    } else {
      out.kind = static_cast<std::uint32_t>(s.phase);
      out.round = static_cast<std::uint32_t>(s.hop);
      out.payload = s.slots[index];  // forward what we just reduced / received
    }
    messengers_[rank]->Send(static_cast<std::uint32_t>(mod(rank + 1, n)), std::move(out));
  }
}

void RingAllReduce::finish(int rank) {
  RankState& s = *ranks_[rank];
  const int n = workers();
  at::Tensor total;
  {
  WallClockAccount::Charge charge(account_);
  if (s.summable) {
    std::vector<at::Tensor> parts;
    parts.reserve(s.slots.size());
    for (const Bytes& chunk : s.slots) parts.push_back(codecs_[rank]->decode(chunk));
    total = at::cat(parts);
  } else {
    total = at::zeros({s.numel}, at::kFloat);
    for (const Bytes& payload : s.slots) total.add_(codecs_[rank]->decode(payload));
  }
  if (total.numel() != s.numel) {
    throw DecodeError("ring all-reduce: aggregate has " + std::to_string(total.numel()) +
                      " elements, expected " + std::to_string(s.numel));
  }
  total = codecs_[rank]->finalize(total, n);
  }
  s.active = false;
  s.slots.clear();
  Done done = std::move(s.done);
  s.done = nullptr;
  done(total);
}

}  // namespace gradwire
