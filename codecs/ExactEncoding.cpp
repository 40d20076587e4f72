#include "codecs/ExactEncoding.h"

#include <torch/types.h>

#include "codecs/DenseCodec.h"
#include "codecs/GradientChecks.h"
#include "codecs/sparsify/TopKCodec.h"

namespace gradwire {

Bytes encode_exact(const torch::Tensor& values) {
  check_gradient(values, "encode_exact");
  const auto n = static_cast<std::uint64_t>(values.numel());
  if (n > (std::uint64_t{1} << 32)) return DenseCodec::encode_dense(values);
  // Compare bit patterns, not values: `!= 0` would drop -0.0 and the round trip would not be
  // bit-exact. A float32 viewed as int32 is zero only for +0.0.
  const torch::Tensor nonzero = values.view(torch::kInt).ne(0);
  const auto nnz = static_cast<std::uint64_t>(nonzero.sum().item<std::int64_t>());
  if (TopKCodec::payload_size(nnz) < DenseCodec::payload_size(n)) {
    // nonzero() returns positions in ascending order, as the topk format requires.
    return TopKCodec::encode_selected(values, torch::nonzero(nonzero).view({-1}));
  }
  return DenseCodec::encode_dense(values);
}

torch::Tensor decode_any(ByteSpan payload, std::uint64_t max_elements) {
  const PayloadHeader h = peek_header(payload);
  switch (h.codec) {
    case CodecId::kDense:
      return DenseCodec::decode_dense(payload);
    case CodecId::kTopK:
      return TopKCodec::decode_sparse(payload, max_elements);
    default:
      break;
  }
  throw DecodeError("payload: codec id " + std::to_string(static_cast<int>(h.codec)) +
                    " is neither none (1) nor topk (2)");
}

LossTolerance exact_loss_tolerance(ByteSpan payload) {
  if (payload.size < kPayloadHeaderSize) return {};
  try {
    if (peek_header(payload).codec == CodecId::kDense) return DenseCodec().traits().loss_tolerance;
  } catch (const DecodeError&) {
  }
  return {};
}

}  // namespace gradwire
