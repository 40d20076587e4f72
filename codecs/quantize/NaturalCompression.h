// `natural`: natural compression C_nat (Horvath, Ho, Horvath, Sahu, Canini, Richtarik,
// "Natural Compression for Distributed Deep Learning", 2019, Sec. 3). Each element t with
// 2^a <= |t| < 2^(a+1) becomes sign(t) 2^a or sign(t) 2^(a+1), rounding up with probability
// (|t| - 2^a) / 2^a -- exactly the float's mantissa fraction, so the rounding "ignores the
// mantissa" and is unbiased, with E|C(t)|^2 <= 9/8 |t|^2 (Theorem 1).
//
// Wire format: header, n exponent bytes (the float32 biased exponent after rounding: 0 for
// zero, 255 for infinity), then ceil(n / 8) sign bytes (bit i = 1 for negative). That is the
// paper's 9 bits per element (sign + 8-bit exponent). Subnormal inputs (|t| < 2^-126) round
// to 0 or 2^-126 with the probability that keeps them unbiased; NaN is sent as infinity.
// Every byte string of the right length decodes. Not summable.
#pragma once

#include <cstdint>
#include <string>

#include "codecs/Codec.h"
#include "codecs/quantize/QuantizerSupport.h"

namespace gradwire {

class NaturalCompression : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;

  NaturalCompression(std::uint64_t seed, int rank);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// Encode: one pass (4n bytes read, the payload written), a random number and 2 operations
  /// per element. Decode: payload read, 4n bytes written, one operation per element.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// State: the position of the dither stream (so `gradwire codec --state` keeps drawing
  /// fresh roundings across calls).
  Bytes save_state() const override { return dither_.save(name()); }
  void load_state(ByteSpan state) override { dither_.load(state, name(), initial_dither_); }

  static std::size_t payload_size(std::uint64_t n) { return 12 + n + (n + 7) / 8; }

 private:
  quant::Dither dither_;
  std::uint64_t initial_dither_ = 0;
};

}  // namespace gradwire
