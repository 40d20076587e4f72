// The forwarding and charging shared by TimedCodec and TimedMultiRoundCodec: every virtual of
// Codec goes to the inner codec unchanged (same payloads, same state), and the operations that
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

  std::string name() const override { return inner_.name(); }
  Bytes encode(const torch::Tensor& grad) override;
  torch::Tensor decode(ByteSpan payload) const override;
  bool encodes_on_device() const override { return inner_.encodes_on_device(); }
  torch::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  Aggregation aggregation() const override { return inner_.aggregation(); }
  torch::Tensor finalize(torch::Tensor sum, int workers) const override;
  double last_density() const override { return inner_.last_density(); }
  bool applies_momentum() const override { return inner_.applies_momentum(); }
  LossTolerance loss_tolerance() const override { return inner_.loss_tolerance(); }
  void accumulate(Bytes& acc, ByteSpan other) const override;
  /// Charged as one encode of the whole gradient, with the chunks' payload bytes summed.
  std::vector<Bytes> encode_chunks(const torch::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  void observe_aggregate(const torch::Tensor& update) override;
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
