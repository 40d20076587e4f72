// RecordingCodecBase for multi-round codecs (codecs/MultiRoundCodec.h): logs the shape of every
// round the exchange returns (its operation, root, values' length and payload) and the element
// count of every reduce_round result, with the work declared for each call.
#pragma once

#include "codecs/MultiRoundCodec.h"
#include "codecs/RecordingCodec.h"

namespace gradwire {

class RecordingMultiRoundCodec final : public RecordingCodecBase<MultiRoundCodec> {
 public:
  /// `inner` and `log` must outlive this object.
  RecordingMultiRoundCodec(MultiRoundCodec& inner, CodecCallLog& log)
      : RecordingCodecBase<MultiRoundCodec>(inner, log) {}

  Round begin_exchange(const at::Tensor& grad) override;
  std::optional<Round> continue_exchange(int round, RoundOutcome&& outcome) override;
  at::Tensor exchange_result() override { return inner_.exchange_result(); }
  at::Tensor reduce_round(int round, const std::vector<ByteSpan>& payloads) override;
  void observe_broadcast(int round, ByteSpan payload) override {
    inner_.observe_broadcast(round, payload);
  }
  CodecWork round_work(int call, std::int64_t numel) const override;
  CodecWork reduce_work(int round, std::int64_t numel, std::size_t payloads,
                        std::uint64_t payload_bytes) const override;

 private:
  void log_round(const std::optional<Round>& round);
};

}  // namespace gradwire
