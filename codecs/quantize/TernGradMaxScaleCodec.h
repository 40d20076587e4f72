// `terngrad` with the paper's scaler sharing (Wen et al., NeurIPS 2017, Sec. 3.1): every
// worker ternarises with the maximum of all workers' per-layer scales, agreed in an extra
// multi-round exchange (codecs/MultiRoundCodec.h). The payload formats and the ternarisation
// itself are TernGradCodec's; see codecs/quantize/TernGradCodec.h for the rounds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codecs/CodecRegistry.h"
#include "codecs/MultiRoundCodec.h"
#include "codecs/quantize/TernGradCodec.h"

namespace gradwire {

/// `terngrad` with `"scaler_sharing": true` and no configured `shared_scale`: every worker uses
/// the maximum of all workers' per-layer scales, agreed in an extra round (see the file
/// comment). The collectives drive the two kReduce rounds (ring: all-gather, then each worker
/// reduces; parameter server: the server reduces). `encode` / `decode` are the single-worker
/// form (asynchronous server, gossip, `gradwire codec`): local per-layer scales, payloads
/// decoded then summed.
class TernGradMaxScaleCodec : public MultiRoundCodec {
 public:
  TernGradMaxScaleCodec(double clip, const CodecContext& ctx);

  Bytes encode(const at::Tensor& grad) override { return local_.encode(grad); }
  at::Tensor decode(ByteSpan payload) const override { return local_.decode(payload); }
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override {
    return local_.work(op, numel, payload_bytes);
  }
  /// Call 0: the moments pass that proposes the scales (4n bytes, 3 operations per element);
  /// call 1: the ternarising pass with the agreed scales (4n bytes read, n / 4 written, a
  /// random number and 4 operations per element); call 2: the mean (read and write 4n).
  CodecWork round_work(int call, std::int64_t numel) const override;
  /// Round 0: the proposals read; round 1: every payload added into one (accumulate) and the
  /// sum decoded once.
  CodecWork reduce_work(int round, std::int64_t numel, std::size_t payloads,
                        std::uint64_t payload_bytes) const override;
  Bytes save_state() const override { return local_.save_state(); }
  void load_state(ByteSpan state) override { local_.load_state(state); }

  /// Round 0: kReduce of this worker's scale proposal.
  Round begin_exchange(const at::Tensor& grad) override;
  /// After round 0: kReduce of the codes with the agreed scales; after round 1: done.
  std::optional<Round> continue_exchange(int round, RoundOutcome&& outcome) override;
  /// The mean of the workers' ternarised gradients.
  at::Tensor exchange_result() override { return result_; }
  /// Round 0: the per-segment maximum scales (a float tensor, one per segment); round 1: the
  /// sum of the payloads, added in the compressed domain and decoded once.
  at::Tensor reduce_round(int round, const std::vector<ByteSpan>& payloads) override;

 private:
  TernGradCodec local_;
  int workers_;
  at::Tensor grad_;    ///< this step's gradient, between the rounds
  at::Tensor result_;
};

}  // namespace gradwire
