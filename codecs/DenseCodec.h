// `none`: the uncompressed baseline. The payload is the gradient as raw little-endian float32
// after the common header, so payloads of different workers add element by element without
// decoding (Aggregation::kSummable): ring all-reduce reduces them hop by hop.
#pragma once

#include <cstdint>
#include <string>

#include "codecs/Codec.h"

namespace gradwire {

class DenseCodec : public Codec {
 public:
  /// Payload format version written in the header (codecs/README.md).
  static constexpr std::uint8_t kFormatVersion = 1;

  /// Named "none", summable, encodes on the device; lost values read as 0.0f (the header must
  /// arrive, the values may not).
  DenseCodec();

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// acc := acc + other, float by float, after validating both payloads and equal sizes.
  void accumulate(Bytes& acc, ByteSpan other) const override;

  /// Stateless forms, shared with ExactEncoding (the server's downlink).
  static Bytes encode_dense(const at::Tensor& grad);
  static at::Tensor decode_dense(ByteSpan payload);
  /// Exact size of a dense payload of `numel` elements.
  static std::size_t payload_size(std::uint64_t numel) { return 12 + 4 * numel; }
};

}  // namespace gradwire
