#include "codecs/TimedCodecBase.h"

#include <cmath>
#include <stdexcept>

#include <torch/types.h>

#include "codecs/MultiRoundCodec.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

bool positive_finite(double x) { return x > 0.0 && std::isfinite(x); }

std::uint64_t total_bytes(const std::vector<Bytes>& payloads) {
  std::uint64_t total = 0;
  for (const Bytes& p : payloads) total += p.size();
  return total;
}

}  // namespace

template <class Base>
TimedCodecBase<Base>::TimedCodecBase(Base& inner, CodecTimer& timer, const CodecTiming& timing)
    : Base(inner.traits(), inner), inner_(inner), timer_(timer), timing_(timing) {
  if (timing.mode == CodecTiming::Mode::kMeasured) {
    if (!positive_finite(timing.scale)) {
      throw std::invalid_argument("codec timing: scale must be positive and finite, got " +
                                  std::to_string(timing.scale));
    }
  } else {
    // seconds_on checks the rates too, but only at the first charge; say so at construction.
    seconds_on(CodecWork{}, timing.device);
  }
}

template <class Base>
Bytes TimedCodecBase<Base>::encode(const torch::Tensor& grad) {
  const auto started = start();
  Bytes payload = inner_.encode(grad);
  charge(CodecOp::kEncode, started,
         [&] { return inner_.work(CodecOp::kEncode, grad.numel(), payload.size()); });
  return payload;
}

template <class Base>
std::vector<Bytes> TimedCodecBase<Base>::encode_chunks(const torch::Tensor& grad,
                                                       const std::vector<std::int64_t>& bounds) {
  const auto started = start();
  std::vector<Bytes> payloads = inner_.encode_chunks(grad, bounds);
  charge(CodecOp::kEncode, started,
         [&] { return inner_.work(CodecOp::kEncode, grad.numel(), total_bytes(payloads)); });
  return payloads;
}

template <class Base>
torch::Tensor TimedCodecBase<Base>::decode(ByteSpan payload) const {
  const auto started = start();
  torch::Tensor out = inner_.decode(payload);
  charge(CodecOp::kDecode, started,
         [&] { return inner_.work(CodecOp::kDecode, out.numel(), payload.size); });
  return out;
}

template <class Base>
torch::Tensor TimedCodecBase<Base>::decode_to(ByteSpan payload, const c10::Device& device) const {
  const auto started = start();
  torch::Tensor out = inner_.decode_to(payload, device);
  charge(CodecOp::kDecode, started,
         [&] { return inner_.work(CodecOp::kDecode, out.numel(), payload.size); });
  return out;
}

template <class Base>
void TimedCodecBase<Base>::accumulate(Bytes& acc, ByteSpan other) const {
  const auto started = start();
  inner_.accumulate(acc, other);
  charge(CodecOp::kAccumulate, started, [&] {
    // The inner codec has validated `other` by now, so its header states the element count.
    const std::uint64_t numel = peek_header(other).numel;
    return inner_.work(CodecOp::kAccumulate, static_cast<std::int64_t>(numel), other.size);
  });
}

template <class Base>
torch::Tensor TimedCodecBase<Base>::finalize(torch::Tensor sum, int workers) const {
  const auto started = start();
  const std::int64_t numel = sum.numel();
  torch::Tensor out = inner_.finalize(std::move(sum), workers);
  charge(CodecOp::kFinalize, started, [&] { return inner_.work(CodecOp::kFinalize, numel, 0); });
  return out;
}

template <class Base>
void TimedCodecBase<Base>::observe_aggregate(const torch::Tensor& update) {
  const auto started = start();
  inner_.observe_aggregate(update);
  charge(CodecOp::kObserve, started,
         [&] { return inner_.work(CodecOp::kObserve, update.numel(), 0); });
}

template class TimedCodecBase<Codec>;
template class TimedCodecBase<MultiRoundCodec>;

}  // namespace gradwire
