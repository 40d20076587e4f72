// `efsignsgd`: scaled sign with error feedback (Karimireddy, Rebjock, Stich, Jaggi, "Error
// Feedback Fixes SignSGD and other Gradient Compression Schemes", ICML 2019, Algorithm 1):
//   p = g + e;  send C(p) = (||p||_1 / d) sign(p);  e = p - C(p).
// The paper compensates lr * g; gradwire's codecs see gradients before the optimizer, so the
// residual lives in gradient units (identical for a constant learning rate; with a schedule
// the residual is not rescaled when lr changes). Error feedback is part of the method: the
// registry always wraps this codec in ErrorFeedback.
//
// The scale is computed per segment: per model layer by default (granularity "layer"), or one
// for the whole encoded tensor ("tensor", the paper's vector form). Wire format: header,
// u32 segment count, per segment (u64 length, f32 scale), then ceil(n / 8) sign bytes
// (bit i = 1 when p_i's sign bit is clear). Decode: +-scale of the element's segment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/quantize/QuantizerSupport.h"
#include "codecs/quantize/QuantizerTensorOps.h"

namespace gradwire {

class ScaledSignCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;

  ScaledSignCodec(bool per_layer, const CodecContext& ctx);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// encode()'s payload computed with tensor operations wherever grad lives (encode() uses
  /// it for a gradient on an accelerator): the same sign bits; each scale from a double sum
  /// (the host's adds float lanes), so equal to the host's to about 1e-7 relative.
  Bytes encode_with_tensor_ops(const at::Tensor& grad) const;
  /// Encode: an L1-norm pass per segment (4n bytes, 2 operations per element), then the sign
  /// pass (4n bytes, 1 operation), the payload written. Decode: +-scale per bit.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;

  static std::size_t payload_size(std::uint64_t n, std::size_t segments) {
    return 12 + 4 + 12 * segments + (n + 7) / 8;
  }

 private:
  /// Checks a payload and returns its segments as sign groups (+-scale).
  static quant::SignGroups read_groups(ByteSpan payload);
  std::vector<quant::Segment> segments(std::uint64_t n) const;
  /// The payload, from the host's one pass or from tensor operations.
  Bytes encode_payload(const at::Tensor& grad, bool tensor_ops) const;

  bool per_layer_;
  std::vector<LayerSlice> layers_;
};

}  // namespace gradwire
