// A codec decorator that charges every codec operation to a simulated device (BytePS's
// decorator style, as ErrorFeedback): it forwards each call to an inner codec it does not own,
// so payloads, decodes and state are exactly the inner codec's, and tells a CodecTimer how
// long the call took in simulated seconds (CodecTiming: measured wall time x scale, or the
// codec's declared work on a device profile). The forwarding is TimedCodecBase's.
#pragma once

#include <memory>

#include "codecs/TimedCodecBase.h"

namespace gradwire {

class TimedCodec final : public TimedCodecBase<Codec> {
 public:
  /// `inner` and `timer` must outlive this object.
  TimedCodec(Codec& inner, CodecTimer& timer, const CodecTiming& timing)
      : TimedCodecBase<Codec>(inner, timer, timing) {}
};

/// Decorates `inner` with the right decorator: a TimedMultiRoundCodec when `inner` is a
/// MultiRoundCodec (so dynamic_cast<MultiRoundCodec*> on the result still finds the rounds),
/// a TimedCodec otherwise. `inner` and `timer` must outlive the result.
std::unique_ptr<Codec> time_codec(Codec& inner, CodecTimer& timer, const CodecTiming& timing);

}  // namespace gradwire
