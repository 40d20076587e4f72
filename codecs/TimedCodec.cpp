#include "codecs/TimedCodec.h"

#include "codecs/TimedMultiRoundCodec.h"

namespace gradwire {

std::unique_ptr<Codec> time_codec(Codec& inner, CodecTimer& timer, const CodecTiming& timing) {
  if (auto* rounds = dynamic_cast<MultiRoundCodec*>(&inner)) {
    return std::make_unique<TimedMultiRoundCodec>(*rounds, timer, timing);
  }
  return std::make_unique<TimedCodec>(inner, timer, timing);
}

}  // namespace gradwire
