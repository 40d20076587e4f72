#include "codecs/RecordingCodec.h"

#include <stdexcept>

#include <torch/types.h>

#include "codecs/MultiRoundCodec.h"
#include "codecs/RecordingMultiRoundCodec.h"

namespace gradwire {

/// Elements whose bit pattern is not +0.0: what decides the size of a payload that carries a
/// finalised update exactly (codecs/ExactEncoding.h picks sparse or dense by this count).
std::int64_t nonzero_bits(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return 0;
  if (t.scalar_type() == at::kFloat) {
    return t.contiguous().view(at::kInt).ne(0).sum().item<std::int64_t>();
  }
  return t.ne(0).sum().item<std::int64_t>();
}

template <class Base>
CodecCall& RecordingCodecBase<Base>::log_call(CodecCall::Kind kind) const {
  log_.calls.emplace_back();
  log_.calls.back().kind = kind;
  return log_.calls.back();
}

template <class Base>
void RecordingCodecBase<Base>::attach_work(CodecCall::Kind kind, const CodecWork& work) const {
  for (auto it = log_.calls.rbegin(); it != log_.calls.rend(); ++it) {
    if (it->kind == kind || (kind == CodecCall::Kind::kEncode &&
                             it->kind == CodecCall::Kind::kEncodeChunks)) {
      it->has_work = true;
      it->work = work;
      return;
    }
  }
  throw std::logic_error("codec call log: work declared for a call that was not made");
}

template <class Base>
at::Tensor RecordingCodecBase<Base>::decode(ByteSpan payload) const {
  at::Tensor out = inner_.decode(payload);
  log_.add_decoded(payload, out.numel());
  return out;
}

template <class Base>
at::Tensor RecordingCodecBase<Base>::decode_to(ByteSpan payload, const c10::Device& device) const {
  at::Tensor out = inner_.decode_to(payload, device);
  log_.add_decoded(payload, out.numel());
  return out;
}

template <class Base>
Bytes RecordingCodecBase<Base>::encode(const at::Tensor& grad) {
  Bytes payload = inner_.encode(grad);
  CodecCall& call = log_call(CodecCall::Kind::kEncode);
  call.payloads.push_back(PayloadShape::of(payload));
  call.density = inner_.last_density();
  call.tensor_sends = inner_.last_tensor_sends();
  return payload;
}

template <class Base>
std::vector<Bytes> RecordingCodecBase<Base>::encode_chunks(
    const at::Tensor& grad, const std::vector<std::int64_t>& bounds) {
  std::vector<Bytes> payloads = inner_.encode_chunks(grad, bounds);
  CodecCall& call = log_call(CodecCall::Kind::kEncodeChunks);
  for (const Bytes& p : payloads) call.payloads.push_back(PayloadShape::of(p));
  call.density = inner_.last_density();
  call.tensor_sends = inner_.last_tensor_sends();
  return payloads;
}

template <class Base>
at::Tensor RecordingCodecBase<Base>::finalize(at::Tensor sum, int workers) const {
  at::Tensor out = inner_.finalize(std::move(sum), workers);
  CodecCall& call = log_call(CodecCall::Kind::kFinalize);
  call.values = out.numel();
  call.nonzero = nonzero_bits(out);
  return out;
}

template <class Base>
void RecordingCodecBase<Base>::observe_aggregate(const at::Tensor& update) {
  inner_.observe_aggregate(update);
  log_call(CodecCall::Kind::kObserve).values = update.numel();
}

template <class Base>
CodecWork RecordingCodecBase<Base>::work(CodecOp op, std::int64_t numel,
                                         std::uint64_t payload_bytes) const {
  const CodecWork w = inner_.work(op, numel, payload_bytes);
  switch (op) {
    case CodecOp::kEncode: attach_work(CodecCall::Kind::kEncode, w); break;
    case CodecOp::kFinalize: attach_work(CodecCall::Kind::kFinalize, w); break;
    case CodecOp::kObserve: attach_work(CodecCall::Kind::kObserve, w); break;
    case CodecOp::kDecode:
    case CodecOp::kAccumulate: log_.add_stateless_work(op, numel, payload_bytes, w); break;
    case CodecOp::kRound: break;  // declared through round_work / reduce_work
  }
  return w;
}

template class RecordingCodecBase<Codec>;
template class RecordingCodecBase<MultiRoundCodec>;

void RecordingMultiRoundCodec::log_round(const std::optional<Round>& round) {
  CodecCall& call = log_call(CodecCall::Kind::kRound);
  call.density = inner_.last_density();
  if (!round) {
    call.last = true;
    return;
  }
  call.round_op = static_cast<std::uint8_t>(round->op);
  call.root = round->root;
  call.values = round->values.defined() ? round->values.numel() : 0;
  if (!round->payload.empty()) call.payloads.push_back(PayloadShape::of(round->payload));
}

Round RecordingMultiRoundCodec::begin_exchange(const at::Tensor& grad) {
  Round round = inner_.begin_exchange(grad);
  log_round(round);
  return round;
}

std::optional<Round> RecordingMultiRoundCodec::continue_exchange(int round, RoundOutcome&& outcome) {
  const std::int64_t received = nonzero_bits(outcome.sum);
  std::optional<Round> next = inner_.continue_exchange(round, std::move(outcome));
  log_round(next);
  log_.calls.back().nonzero = received;
  return next;
}

at::Tensor RecordingMultiRoundCodec::reduce_round(int round, const std::vector<ByteSpan>& payloads) {
  at::Tensor out = inner_.reduce_round(round, payloads);
  CodecCall& call = log_call(CodecCall::Kind::kReduce);
  call.values = out.numel();
  call.nonzero = nonzero_bits(out);
  return out;
}

CodecWork RecordingMultiRoundCodec::round_work(int call, std::int64_t numel) const {
  const CodecWork w = inner_.round_work(call, numel);
  attach_work(CodecCall::Kind::kRound, w);
  return w;
}

CodecWork RecordingMultiRoundCodec::reduce_work(int round, std::int64_t numel,
                                                std::size_t payloads,
                                                std::uint64_t payload_bytes) const {
  const CodecWork w = inner_.reduce_work(round, numel, payloads, payload_bytes);
  attach_work(CodecCall::Kind::kReduce, w);
  return w;
}

std::unique_ptr<Codec> record_codec(Codec& inner, CodecCallLog& log) {
  if (auto* rounds = dynamic_cast<MultiRoundCodec*>(&inner)) {
    return std::make_unique<RecordingMultiRoundCodec>(*rounds, log);
  }
  return std::make_unique<RecordingCodecBase<Codec>>(inner, log);
}

}  // namespace gradwire
