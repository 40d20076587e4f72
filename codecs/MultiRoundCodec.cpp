#include "codecs/MultiRoundCodec.h"

#include <stdexcept>

namespace gradwire {

at::Tensor MultiRoundCodec::reduce_round(int round, const std::vector<ByteSpan>& /*payloads*/) {
  // A codec that asks for a kReduce round must say how its payloads combine.
  throw std::logic_error("codec '" + name() + "' asked for a reduce in round " +
                         std::to_string(round) + " but does not implement reduce_round");
}

}  // namespace gradwire
