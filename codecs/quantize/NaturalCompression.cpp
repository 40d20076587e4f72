#include "codecs/quantize/NaturalCompression.h"

#include <algorithm>
#include <cstring>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

// Stochastic rounding of every element's exponent (integer operations only: vectorises).
// x[0..n) are elements first, first + 1, ... of the gradient (their dither indices).
GRADWIRE_VECTOR_KERNEL void round_exponents(const float* x, std::uint32_t first, std::uint32_t n,
                                            std::uint32_t key, std::uint8_t* exponents) {
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t b;
    std::memcpy(&b, x + i, 4);
    const std::uint32_t e = (b >> 23) & 0xffu;
    const auto u23 = static_cast<std::int32_t>(quant::Dither::hash(key, first + i) >> 9);
    const std::uint32_t up = static_cast<std::uint32_t>(u23 < static_cast<std::int32_t>(b & 0x7fffffu)) &
                             static_cast<std::uint32_t>(e != 255);
    exponents[i] = static_cast<std::uint8_t>(e + up);
  }
}

}  // namespace

NaturalCompression::NaturalCompression(std::uint64_t seed, int rank)
    : Codec(CodecTraits{"natural"}),
      dither_(seed, rank, CodecId::kNatural), initial_dither_(dither_.state()) {}

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
  // One pass, in chunks that stay in L1 between the exponents and the sign bits, split over
  // threads on large tensors (pieces start on multiples of 64 elements: whole sign bytes).
  quant::parallel_ranges(n, 64, n, [&](std::uint64_t begin, std::uint64_t end) {
    constexpr std::uint64_t kChunk = 4096;
    for (std::uint64_t c = begin; c < end; c += kChunk) {
      const std::uint64_t m = std::min(kChunk, end - c);
      round_exponents(x + c, quant::dither_index(c), static_cast<std::uint32_t>(m), key, exponents + c);
      // Our sign bytes are 1 for negative values: the complement of bits::pack_signs, with
      // the padding bits after the last element kept zero.
      std::uint8_t* s = signs + c / 8;
      bits::pack_signs(x + c, m, s);
      const std::uint64_t bytes = (m + 7) / 8;
      for (std::uint64_t k = 0; k < bytes; ++k) s[k] = static_cast<std::uint8_t>(~s[k]);
      if (m % 8 != 0) s[bytes - 1] = static_cast<std::uint8_t>(s[bytes - 1] & ((1u << (m % 8)) - 1u));
    }
  });
  return writer.take();
}

namespace {

// Values of n elements: exponent byte e -> 2^(e - 127) (the float with those exponent bits), and
// sign bit i set -> negative. Two simple loops, which the AVX2 and AVX-512 builds vectorise
// (one loop doing both does not): the exponents, then eight sign bits per byte ORed in as
// one vector (broadcast, per-lane shift, mask).
GRADWIRE_VECTOR_KERNEL void natural_values(const std::uint8_t* __restrict exponents,
                                           const std::uint8_t* __restrict signs, std::uint64_t n,
                                           float* __restrict dst) {
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint32_t b = static_cast<std::uint32_t>(exponents[i]) << 23;
    std::memcpy(dst + i, &b, 4);
  }
  const std::uint64_t whole = n / 8;
  for (std::uint64_t k = 0; k < whole; ++k) {
    const std::uint32_t byte = signs[k];
    for (unsigned j = 0; j < 8; ++j) {
      std::uint32_t b;
      std::memcpy(&b, dst + 8 * k + j, 4);
      b |= ((byte >> j) & 1u) << 31;
      std::memcpy(dst + 8 * k + j, &b, 4);
    }
  }
  for (std::uint64_t i = 8 * whole; i < n; ++i) {
    std::uint32_t b;
    std::memcpy(&b, dst + i, 4);
    b |= ((signs[i / 8] >> (i % 8)) & 1u) << 31;
    std::memcpy(dst + i, &b, 4);
  }
}

}  // namespace

torch::Tensor NaturalCompression::decode(ByteSpan payload) const {
  ByteReader reader(payload, "natural payload");
  const std::uint64_t n = read_header(reader, CodecId::kNatural, "natural", kFormatVersion).numel;
  const std::uint8_t* exponents = reader.take(n, 1, "exponents");
  const std::uint8_t* signs = reader.take((n + 7) / 8, 1, "sign bits");
  reader.expect_end();
  if (!bits::padding_is_zero(signs, n, 1)) reader.fail("non-zero padding bits after the last sign");
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  natural_values(exponents, signs, n, out.data_ptr<float>());
  return out;
}

CodecWork NaturalCompression::work(CodecOp op, std::int64_t numel,
                                   std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode:
      return CodecWork::memory(4 * n + bytes) + CodecWork::compute(n * (2 + kFlopsPerRandomNumber));
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::compute(n);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
