// A codec that replays a CodecCallLog (codecs/CodecCallLog.h) instead of encoding: every call
// the log holds in sequence returns what the recorded call returned as far as a collective and
// the network can tell (payloads of the recorded sizes and headers with zero bodies, the
// recorded density, declared work and round shapes), and every decode returns zeros of the
// element count its payload's header states. Only the traits (name, aggregation, loss
// tolerance, momentum) come from the real codec it wraps, which never encodes. A call the log does not hold in that place raises ReplayMismatch.
//
// Exact only for a run whose codec calls do not depend on the values they carry beyond what the
// log holds; the engine allows replay only for such runs (sim/engine/ReplaySafety.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecCallLog.h"

namespace gradwire {

template <class Base>
class ReplayCodecBase : public Base {
 public:
  /// `inner` (the real codec, for its capabilities) and `log` must outlive this object.
  ReplayCodecBase(Base& inner, const CodecCallLog& log)
      : Base(replayed_traits(inner.traits())), inner_(inner), log_(log) {}

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Zeros but for the recorded count of non-zero elements (ones), so that an exact encoding
  /// of the update has the recorded size.
  at::Tensor finalize(at::Tensor sum, int workers) const override;
  /// Leaves `acc` as it is: summable payloads keep their size when added.
  void accumulate(Bytes& acc, ByteSpan other) const override;
  std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  void observe_aggregate(const at::Tensor& update) override;
  Bytes save_state() const override { return {}; }
  void load_state(ByteSpan /*state*/) override {}
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;

 protected:
  /// The next call of the log, which must be of `kind`.
  const CodecCall& next(CodecCall::Kind kind) const;
  /// The recorded codec's traits; a replay reads no gradient, so it encodes nothing on a device.
  static CodecTraits replayed_traits(CodecTraits traits) {
    traits.encodes_on_device = false;
    return traits;
  }
  /// Zeros of `numel` elements but the first `nonzero`, which are ones.
  static at::Tensor with_nonzero(std::int64_t numel, std::int64_t nonzero,
                                    const c10::Device& device);
  /// The work of the latest replayed call of `kind`.
  CodecWork replayed_work(CodecCall::Kind kind) const;

  Base& inner_;
  const CodecCallLog& log_;
  mutable std::size_t cursor_ = 0;
  mutable const CodecCall* latest_[8] = {};  // per CodecCall::Kind
};

/// Wraps `inner` (a MultiRoundCodec keeps its rounds) to replay `log`. The `lead` worker's
/// (rank 0's) kSum rounds carry the recorded count of non-zero elements of the round's sum, so
/// that an aggregator that sends the sum exactly sends the recorded bytes.
std::unique_ptr<Codec> replay_codec(Codec& inner, const CodecCallLog& log, bool lead);

}  // namespace gradwire
