#include "codecs/ReplayCodec.h"

#include <algorithm>

#include <torch/types.h>

#include "codecs/ReplayMultiRoundCodec.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

const char* kind_name(CodecCall::Kind kind) {
  switch (kind) {
    case CodecCall::Kind::kEncode: return "encode";
    case CodecCall::Kind::kEncodeChunks: return "encode_chunks";
    case CodecCall::Kind::kRound: return "exchange round";
    case CodecCall::Kind::kReduce: return "reduce_round";
    case CodecCall::Kind::kObserve: return "observe_aggregate";
    case CodecCall::Kind::kFinalize: return "finalize";
  }
  return "call";
}

at::Tensor zeros(std::int64_t numel, const c10::Device& device = c10::Device(c10::kCPU)) {
  return torch::zeros({numel}, at::TensorOptions().dtype(torch::kFloat32).device(device));
}

}  // namespace

template <class Base>
const CodecCall& ReplayCodecBase<Base>::next(CodecCall::Kind kind) const {
  if (cursor_ >= log_.calls.size()) {
    throw ReplayMismatch(std::string("codec ") + inner_.name() + ": the run asks a " +
                         kind_name(kind) + " after the " + std::to_string(log_.calls.size()) +
                         " calls the trace holds");
  }
  const CodecCall& call = log_.calls[cursor_];
  if (call.kind != kind) {
    throw ReplayMismatch(std::string("codec ") + inner_.name() + ": call " +
                         std::to_string(cursor_) + " was a " + kind_name(call.kind) +
                         " in the trace, the run asks a " + kind_name(kind));
  }
  ++cursor_;
  latest_[static_cast<int>(kind)] = &call;
  return call;
}

template <class Base>
at::Tensor ReplayCodecBase<Base>::with_nonzero(std::int64_t numel, std::int64_t nonzero,
                                                  const c10::Device& device) {
  at::Tensor out = zeros(numel, device);
  if (nonzero > 0) out.narrow(0, 0, std::min(nonzero, numel)).fill_(1.0f);
  return out;
}

template <class Base>
CodecWork ReplayCodecBase<Base>::replayed_work(CodecCall::Kind kind) const {
  const CodecCall* call = latest_[static_cast<int>(kind)];
  if (kind == CodecCall::Kind::kEncode) {
    const CodecCall* chunks = latest_[static_cast<int>(CodecCall::Kind::kEncodeChunks)];
    // The later of the two is the call that asks.
    if (!call || (chunks && chunks > call)) call = chunks;
  }
  if (!call || !call->has_work) {
    throw ReplayMismatch(std::string("codec ") + inner_.name() +
                         ": the trace holds no declared work for a " + kind_name(kind) +
                         " (recorded without codec time)");
  }
  return call->work;
}

template <class Base>
Bytes ReplayCodecBase<Base>::encode(const at::Tensor& /*grad*/) {
  const CodecCall& call = next(CodecCall::Kind::kEncode);
  if (call.payloads.size() != 1) throw ReplayMismatch("codec call log: an encode without its payload");
  this->set_last_density(call.density);
  this->set_last_tensor_sends(call.tensor_sends);
  return call.payloads.front().materialise();
}

template <class Base>
std::vector<Bytes> ReplayCodecBase<Base>::encode_chunks(const at::Tensor& /*grad*/,
                                                        const std::vector<std::int64_t>& bounds) {
  const CodecCall& call = next(CodecCall::Kind::kEncodeChunks);
  if (call.payloads.size() + 1 != bounds.size()) {
    throw ReplayMismatch("codec " + inner_.name() + ": " + std::to_string(call.payloads.size()) +
                         " chunks in the trace, the run asks " + std::to_string(bounds.size() - 1));
  }
  this->set_last_density(call.density);
  this->set_last_tensor_sends(call.tensor_sends);
  std::vector<Bytes> out;
  for (const PayloadShape& p : call.payloads) out.push_back(p.materialise());
  return out;
}

template <class Base>
at::Tensor ReplayCodecBase<Base>::decode(ByteSpan payload) const {
  return zeros(log_.decoded(payload));
}

template <class Base>
at::Tensor ReplayCodecBase<Base>::decode_to(ByteSpan payload, const c10::Device& device) const {
  return zeros(log_.decoded(payload), device);
}

template <class Base>
at::Tensor ReplayCodecBase<Base>::finalize(at::Tensor sum, int /*workers*/) const {
  const CodecCall& call = next(CodecCall::Kind::kFinalize);
  if (call.values != sum.numel()) {
    throw ReplayMismatch("codec " + inner_.name() + ": finalize of " +
                         std::to_string(sum.numel()) + " elements, " +
                         std::to_string(call.values) + " in the trace");
  }
  return with_nonzero(call.values, call.nonzero, sum.device());
}

template <class Base>
void ReplayCodecBase<Base>::accumulate(Bytes& acc, ByteSpan other) const {
  if (acc.size() != other.size) {
    throw ReplayMismatch("codec " + inner_.name() + ": summable payloads of " +
                         std::to_string(acc.size()) + " and " + std::to_string(other.size) +
                         " bytes");
  }
}

template <class Base>
void ReplayCodecBase<Base>::observe_aggregate(const at::Tensor& /*update*/) {
  next(CodecCall::Kind::kObserve);
}

template <class Base>
CodecWork ReplayCodecBase<Base>::work(CodecOp op, std::int64_t numel,
                                      std::uint64_t payload_bytes) const {
  switch (op) {
    case CodecOp::kEncode: return replayed_work(CodecCall::Kind::kEncode);
    case CodecOp::kFinalize: return replayed_work(CodecCall::Kind::kFinalize);
    case CodecOp::kObserve: return replayed_work(CodecCall::Kind::kObserve);
    case CodecOp::kDecode:
    case CodecOp::kAccumulate:
      if (log_.ambiguous_work) {
        throw ReplayMismatch("codec " + inner_.name() +
                             ": its recorded decode work depends on more than the payload's "
                             "size, so its time cannot be replayed");
      }
      return log_.stateless(op, numel, payload_bytes);
    case CodecOp::kRound: break;
  }
  return inner_.work(op, numel, payload_bytes);
}

template class ReplayCodecBase<Codec>;
template class ReplayCodecBase<MultiRoundCodec>;

std::optional<Round> ReplayMultiRoundCodec::replay_round() {
  const CodecCall& call = next(CodecCall::Kind::kRound);
  this->set_last_density(call.density);
  if (call.last) return std::nullopt;
  Round round;
  round.op = static_cast<RoundOp>(call.round_op);
  round.root = call.root;
  if (round.op == RoundOp::kSum) {
    // The sum of this round reaches the next call of the exchange, whose record says how many
    // of its elements were not zero.
    std::int64_t nonzero = 0;
    if (lead_ && cursor_ < log_.calls.size() && log_.calls[cursor_].kind == CodecCall::Kind::kRound) {
      nonzero = log_.calls[cursor_].nonzero;
    }
    round.values = with_nonzero(call.values, nonzero, c10::Device(c10::kCPU));
  }
  if (!call.payloads.empty()) round.payload = call.payloads.front().materialise();
  return round;
}

Round ReplayMultiRoundCodec::begin_exchange(const at::Tensor& grad) {
  numel_ = grad.numel();
  std::optional<Round> round = replay_round();
  if (!round) throw ReplayMismatch("codec " + inner_.name() + ": an exchange without a round");
  return std::move(*round);
}

std::optional<Round> ReplayMultiRoundCodec::continue_exchange(int /*round*/,
                                                              RoundOutcome&& /*outcome*/) {
  return replay_round();
}

at::Tensor ReplayMultiRoundCodec::exchange_result() { return zeros(numel_); }

at::Tensor ReplayMultiRoundCodec::reduce_round(int /*round*/,
                                               const std::vector<ByteSpan>& /*payloads*/) {
  const CodecCall& call = next(CodecCall::Kind::kReduce);
  return with_nonzero(call.values, call.nonzero, c10::Device(c10::kCPU));
}

CodecWork ReplayMultiRoundCodec::round_work(int /*call*/, std::int64_t /*numel*/) const {
  return replayed_work(CodecCall::Kind::kRound);
}

CodecWork ReplayMultiRoundCodec::reduce_work(int /*round*/, std::int64_t /*numel*/,
                                             std::size_t /*payloads*/,
                                             std::uint64_t /*payload_bytes*/) const {
  return replayed_work(CodecCall::Kind::kReduce);
}

std::unique_ptr<Codec> replay_codec(Codec& inner, const CodecCallLog& log, bool lead) {
  if (auto* rounds = dynamic_cast<MultiRoundCodec*>(&inner)) {
    return std::make_unique<ReplayMultiRoundCodec>(*rounds, log, lead);
  }
  return std::make_unique<ReplayCodecBase<Codec>>(inner, log);
}

}  // namespace gradwire
