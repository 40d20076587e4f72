// `fp16` and `bf16`: the gradient cast to a 16-bit float, round to nearest even (IEEE 754
// binary16: 5-bit exponent, 10-bit mantissa, overflow above 65504 to infinity; bfloat16: the
// top half of a float32, 8-bit exponent, 7-bit mantissa). Summable: accumulate adds two
// payloads element by element in float32 and rounds the sum back to 16 bits, so a ring
// all-reduce reduces them hop by hop without decoding (each hop rounds once).
//
// Wire format: header + 2n bytes (little-endian 16-bit values). Every byte string of the right
// length decodes.
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/ScalarType.h>

#include "codecs/Codec.h"

namespace gradwire {

class HalfPrecisionCodec : public Codec {
 public:
  enum class Format { kFp16, kBf16 };
  static constexpr std::uint8_t kFormatVersion = 1;

  /// Named "fp16" or "bf16"; summable, encodes on the device, and lost values read as +0 in
  /// both formats (the header must arrive).
  explicit HalfPrecisionCodec(Format format);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// encode()'s payload, rounded with tensor operations wherever grad lives (encode() uses it
  /// for a gradient on an accelerator), so only the 16-bit values cross to the host. NaN
  /// becomes the host encoder's quiet NaN (its payload bits are not kept).
  Bytes encode_with_tensor_ops(const at::Tensor& grad) const;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Encode and decode: one conversion pass (1 operation per element). Accumulate: two
  /// payloads read, one written; widen both, add, round back (4 operations per element).
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  void accumulate(Bytes& acc, ByteSpan other) const override;

  static std::size_t payload_size(std::uint64_t n) { return 12 + 2 * n; }

 private:
  c10::ScalarType torch_type() const;
  CodecId id() const { return format_ == Format::kFp16 ? CodecId::kFp16 : CodecId::kBf16; }
  /// Validates a payload and returns its element count and where its values start.
  std::uint64_t read(ByteSpan payload, const std::uint8_t** values) const;

  Format format_;
};

}  // namespace gradwire
