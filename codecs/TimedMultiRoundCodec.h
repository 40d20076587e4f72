// TimedCodec for multi-round codecs (codecs/MultiRoundCodec.h): a MultiRoundCodec itself, so
// the collectives find its rounds with dynamic_cast and drive them through it. Each call of
// the exchange (begin_exchange, continue_exchange, reduce_round) is charged as CodecOp::kRound:
// its wall time x scale, or in profile mode the inner codec's round_work(call, numel) for the
// call's number in the step (0 for begin_exchange, r + 1 for continue_exchange(r)) and
// reduce_work for reduce_round. exchange_result() and observe_broadcast() are forwarded: the
// first hands over what the last call computed; the second only keeps side information (LGC's
// weights), declared with the call that uses it.
#pragma once

#include "codecs/MultiRoundCodec.h"
#include "codecs/TimedCodecBase.h"

namespace gradwire {

class TimedMultiRoundCodec final : public TimedCodecBase<MultiRoundCodec> {
 public:
  /// `inner` and `timer` must outlive this object.
  TimedMultiRoundCodec(MultiRoundCodec& inner, CodecTimer& timer, const CodecTiming& timing)
      : TimedCodecBase<MultiRoundCodec>(inner, timer, timing) {}

  Round begin_exchange(const at::Tensor& grad) override;
  std::optional<Round> continue_exchange(int round, RoundOutcome&& outcome) override;
  at::Tensor exchange_result() override { return inner_.exchange_result(); }
  at::Tensor reduce_round(int round, const std::vector<ByteSpan>& payloads) override;
  void observe_broadcast(int round, ByteSpan payload) override {
    inner_.observe_broadcast(round, payload);
  }
  CodecWork round_work(int call, std::int64_t numel) const override {
    return inner_.round_work(call, numel);
  }
  CodecWork reduce_work(int round, std::int64_t numel, std::size_t payloads,
                        std::uint64_t payload_bytes) const override {
    return inner_.reduce_work(round, numel, payloads, payload_bytes);
  }

 private:
  std::int64_t numel_ = 0;  ///< this step's gradient length, for the calls after the first
};

}  // namespace gradwire
