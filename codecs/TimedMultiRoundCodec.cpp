#include "codecs/TimedMultiRoundCodec.h"

#include <utility>

namespace gradwire {

Round TimedMultiRoundCodec::begin_exchange(const at::Tensor& grad) {
  const auto started = start();
  Round round = inner_.begin_exchange(grad);
  numel_ = grad.numel();
  charge(CodecOp::kRound, started, [&] { return inner_.round_work(0, numel_); });
  return round;
}

std::optional<Round> TimedMultiRoundCodec::continue_exchange(int round, RoundOutcome&& outcome) {
  const auto started = start();
  std::optional<Round> next = inner_.continue_exchange(round, std::move(outcome));
  charge(CodecOp::kRound, started, [&] { return inner_.round_work(round + 1, numel_); });
  return next;
}

at::Tensor TimedMultiRoundCodec::reduce_round(int round, const std::vector<ByteSpan>& payloads) {
  const auto started = start();
  at::Tensor out = inner_.reduce_round(round, payloads);
  charge(CodecOp::kRound, started, [&] {
    std::uint64_t bytes = 0;
    for (const ByteSpan& p : payloads) bytes += p.size;
    return inner_.reduce_work(round, out.numel(), payloads.size(), bytes);
  });
  return out;
}

}  // namespace gradwire
