#include "codecs/Codec.h"

#include <stdexcept>

#include <torch/types.h>

#include "codecs/GradientChecks.h"

namespace gradwire {

void Codec::accumulate(Bytes& /*acc*/, ByteSpan /*other*/) const {
  // Reaching here means a collective chose in-network reduction for a codec that declared
  // Aggregation::kDecodeThenSum: a wiring bug, not bad data.
  throw std::logic_error("codec '" + name() +
                         "' is not summable: decode payloads and add the tensors instead");
}

torch::Tensor Codec::decode_to(ByteSpan payload, const c10::Device& device) const {
  return decode(payload).to(device);
}

torch::Tensor Codec::finalize(torch::Tensor sum, int workers) const {
  return sum.div_(static_cast<double>(workers));
}

std::vector<Bytes> Codec::encode_chunks(const torch::Tensor& grad,
                                        const std::vector<std::int64_t>& bounds) {
  check_gradient(grad, name() + " encode_chunks", traits().encodes_on_device);
  check_chunk_bounds(grad.numel(), bounds);
  std::vector<Bytes> out;
  out.reserve(bounds.size() - 1);
  // narrow() of a contiguous 1-D tensor is a contiguous view: no copies.
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    out.push_back(encode(grad.narrow(0, bounds[i], bounds[i + 1] - bounds[i])));
  }
  return out;
}

CodecWork Codec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode: return CodecWork::memory(4 * n + bytes);
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n);
    case CodecOp::kAccumulate: return CodecWork::memory(3 * bytes) + CodecWork::compute(n);
    case CodecOp::kFinalize: return CodecWork::memory(8 * n) + CodecWork::compute(n);
    case CodecOp::kRound:
    case CodecOp::kObserve: return {};
  }
  return {};
}

}  // namespace gradwire
