#include "codecs/MultiRoundCodec.h"

#include <stdexcept>

namespace gradwire {

at::Tensor MultiRoundCodec::reduce_round(int round, const std::vector<ByteSpan>& /*payloads*/) {
  // A codec that asks for a kReduce round must say how its payloads combine.
  throw std::logic_error("codec '" + name() + "' asked for a reduce in round " +
                         std::to_string(round) + " but does not implement reduce_round");
}

CodecWork MultiRoundCodec::round_work(int /*call*/, std::int64_t numel) const {
  return work(CodecOp::kRound, numel, 0);
}

CodecWork MultiRoundCodec::reduce_work(int /*round*/, std::int64_t numel, std::size_t payloads,
                                       std::uint64_t payload_bytes) const {
  if (payloads == 0) return {};
  const double count = static_cast<double>(payloads);
  const double n = static_cast<double>(numel);
  CodecWork w = work(CodecOp::kDecode, numel,
                     static_cast<std::uint64_t>(static_cast<double>(payload_bytes) / count)) * count;
  w += (CodecWork::memory(12 * n) + CodecWork::compute(n)) * (count - 1);
  return w;
}

}  // namespace gradwire
