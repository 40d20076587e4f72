#include "codecs/NaturalCompression.h"

#include <cstring>

#include <torch/types.h>

#include "codecs/BitPacking.h"
#include "codecs/GradientChecks.h"
#include "codecs/WireFormat.h"

namespace gradwire {

namespace {

// Stochastic rounding of every element's exponent (integer operations only: vectorises).
GRADWIRE_VECTOR_KERNEL void round_exponents(const float* x, std::uint64_t n, std::uint32_t key,
                                            std::uint8_t* exponents) {
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint32_t b;
    std::memcpy(&b, x + i, 4);
    const std::uint32_t e = (b >> 23) & 0xffu;
    const auto u23 = static_cast<std::int32_t>(quant::Dither::hash(key, quant::dither_index(i)) >> 9);
    const std::uint32_t up = static_cast<std::uint32_t>(u23 < static_cast<std::int32_t>(b & 0x7fffffu)) &
                             static_cast<std::uint32_t>(e != 255);
    exponents[i] = static_cast<std::uint8_t>(e + up);
  }
}

}  // namespace

NaturalCompression::NaturalCompression(std::uint64_t seed, int rank)
    : dither_(seed, rank, CodecId::kNatural), initial_dither_(dither_.state()) {}

Bytes NaturalCompression::encode(const torch::Tensor& grad) {
  check_gradient(grad, "natural encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const float* x = grad.data_ptr<float>();
  const std::uint32_t key = dither_.next_key();
  ByteWriter writer(payload_size(n));
  write_header(writer, CodecId::kNatural, kFormatVersion, n);
  std::uint8_t* exponents = writer.extend(n);
  std::uint8_t* signs = writer.extend((n + 7) / 8);
  // Normal t: |t| = 2^a (1 + m / 2^23); round up with P = m / 2^23. Subnormal (e = 0):
  // |t| = m 2^-149, between 0 and 2^-126 = 2^23 2^-149: rounding up to e = 1 with
  // P = m / 2^23 is again unbiased. A 23-bit uniform draw compared with m gives that P.
  // Infinity / NaN (e = 255) stay at 255; 2^127 rounding up overflows to infinity (255).
  round_exponents(x, n, key, exponents);
  for (std::uint64_t i = 0; i < n; i += 8) {
    unsigned byte = 0;
    for (unsigned j = 0; j < 8 && i + j < n; ++j) {
      std::uint32_t b;
      std::memcpy(&b, x + i + j, 4);
      byte |= (b >> 31) << j;
    }
    signs[i / 8] = static_cast<std::uint8_t>(byte);
  }
  return writer.take();
}

torch::Tensor NaturalCompression::decode(ByteSpan payload) const {
  ByteReader reader(payload, "natural payload");
  const std::uint64_t n = read_header(reader, CodecId::kNatural, "natural", kFormatVersion).numel;
  const std::uint8_t* exponents = reader.take(n, 1, "exponents");
  const std::uint8_t* signs = reader.take((n + 7) / 8, 1, "sign bits");
  reader.expect_end();
  if (!bits::padding_is_zero(signs, n, 1)) reader.fail("non-zero padding bits after the last sign");
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  for (std::uint64_t i = 0; i < n; ++i) {  // vectorises
    const std::uint32_t b = static_cast<std::uint32_t>(exponents[i]) << 23;
    std::memcpy(dst + i, &b, 4);
  }
  // Sign bits: bit i set means negative; XOR into the float's sign position.
  for (std::uint64_t i = 0; i < n; i += 8) {
    const std::uint32_t byte = signs[i / 8];
    for (unsigned j = 0; j < 8 && i + j < n; ++j) {
      std::uint32_t b;
      std::memcpy(&b, dst + i + j, 4);
      b |= ((byte >> j) & 1u) << 31;
      std::memcpy(dst + i + j, &b, 4);
    }
  }
  return out;
}

}  // namespace gradwire
