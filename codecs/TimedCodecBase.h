// The forwarding and charging shared by TimedCodec and TimedMultiRoundCodec: the traits are the
// inner codec's, every virtual of Codec goes to the inner codec unchanged (same payloads, same
// state), and the operations that
// do codec work (encode, encode_chunks, decode, accumulate, finalize, observe_aggregate) are
// charged to the timer. A template over the base (Codec or MultiRoundCodec) so that the
// multi-round decorator is itself a MultiRoundCodec (dynamic_cast finds its rounds) without a
// second copy of the forwarding; defined in TimedCodecBase.cpp for those two bases only.
//
// The decorator does not own the inner codec: the caller keeps it (the run's codec objects
// stay where the training setup put them) and must keep it alive while the decorator is used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecTimer.h"
#include "common/WorkStopwatch.h"

namespace gradwire {

template <class Base>
class TimedCodecBase : public Base {
 public:
  /// `inner` and `timer` must outlive this object. Throws std::invalid_argument on a
  /// non-positive or non-finite scale (kMeasured) or device rate (kProfile).
  TimedCodecBase(Base& inner, CodecTimer& timer, const CodecTiming& timing);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  at::Tensor finalize(at::Tensor sum, int workers) const override;
  void accumulate(Bytes& acc, ByteSpan other) const override;
  /// Charged as one encode of the whole gradient, with the chunks' payload bytes summed.
  std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  void observe_aggregate(const at::Tensor& update) override;
  Bytes save_state() const override { return inner_.save_state(); }
  void load_state(ByteSpan state) override { inner_.load_state(state); }
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override {
    return inner_.work(op, numel, payload_bytes);
  }

  Base& inner() const { return inner_; }
  const CodecTiming& timing() const { return timing_; }

 protected:
  /// A stopwatch started now when the call is measured; none in profile mode, which does not
  /// read the clocks.
  std::optional<WorkStopwatch> start() const {
    if (timing_.mode != CodecTiming::Mode::kMeasured) return std::nullopt;
    return std::optional<WorkStopwatch>(std::in_place);
  }
  /// Charges `op`: the time on timing's clock since `start` x scale (kMeasured), or the seconds
  /// `declared` work takes on the device (kProfile). `declared` is called only in profile
  /// mode, so measured runs do not pay for the declaration.
  template <class Declared>
  void charge(CodecOp op, const std::optional<WorkStopwatch>& start, Declared declared) const {
    if (start) {
      timer_.charge(op, start->elapsed().on(timing_.clock) * timing_.scale);
    } else {
      timer_.charge(op, seconds_on(declared(), timing_.device));
    }
  }

  Base& inner_;
  CodecTimer& timer_;
  CodecTiming timing_;
};

}  // namespace gradwire
