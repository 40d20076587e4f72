// ReplayCodecBase for multi-round codecs: every round returned has the recorded operation,
// root, payload shape and (zero) values of the recorded length; reduce_round and
// exchange_result return zeros of the recorded and the gradient's length.
#pragma once

#include "codecs/MultiRoundCodec.h"
#include "codecs/ReplayCodec.h"

namespace gradwire {

class ReplayMultiRoundCodec final : public ReplayCodecBase<MultiRoundCodec> {
 public:
  /// `inner` and `log` must outlive this object.
  /// `lead`: see replay_codec.
  ReplayMultiRoundCodec(MultiRoundCodec& inner, const CodecCallLog& log, bool lead)
      : ReplayCodecBase<MultiRoundCodec>(inner, log), lead_(lead) {}

  Round begin_exchange(const at::Tensor& grad) override;
  std::optional<Round> continue_exchange(int round, RoundOutcome&& outcome) override;
  at::Tensor exchange_result() override;
  at::Tensor reduce_round(int round, const std::vector<ByteSpan>& payloads) override;
  void observe_broadcast(int /*round*/, ByteSpan /*payload*/) override {}
  CodecWork round_work(int call, std::int64_t numel) const override;
  CodecWork reduce_work(int round, std::int64_t numel, std::size_t payloads,
                        std::uint64_t payload_bytes) const override;

 private:
  std::optional<Round> replay_round();
  std::int64_t numel_ = 0;  ///< this step's gradient length
  bool lead_ = false;
};

}  // namespace gradwire
