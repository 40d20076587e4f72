// Bit packing shared by the quantisation codecs (QSGD, natural dithering, TernGrad, 1-bit SGD,
// signSGD, EF-signSGD, natural compression, compose).
//
// Layout: element i of a stream of w-bit codes occupies bits [i*w, (i+1)*w) of the byte
// stream, least significant bit first (bit b of the stream is bit b % 8 of byte b / 8). So a
// 1-bit stream has element i in bit i % 8 of byte i / 8, and 8 codes of w bits fill exactly w
// bytes. Bits past the last code in the last byte are padding and must be zero: decoders
// reject non-zero padding, so every payload has exactly one valid byte representation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradwire {
namespace bits {

/// Bytes needed for `count` codes of `width` bits: ceil(count * width / 8). The caller keeps
/// count * width within size_t (gradients are far below 2^58 elements).
inline std::size_t packed_size(std::uint64_t count, unsigned width) {
  return static_cast<std::size_t>((count * width + 7) / 8);
}

/// Smallest number of bits that holds every value in [0, max_value] (1 for max_value 0).
inline unsigned width_for(std::uint64_t max_value) {
  unsigned w = 1;
  while (w < 64 && (max_value >> w) != 0) ++w;
  return w;
}

/// Packs `count` codes (each < 2^width, width in [1, 32]) into `dst`, which has room for
/// packed_size(count, width) bytes; padding bits are written as zero.
void pack(const std::uint32_t* codes, std::size_t count, unsigned width, std::uint8_t* dst);

/// Unpacks `count` codes of `width` bits from `src` (packed_size(count, width) readable bytes).
void unpack(const std::uint8_t* src, std::size_t count, unsigned width, std::uint32_t* codes);

/// ORs `count` codes of `width` bits into `dst` starting at stream bit `bit_offset` (the
/// destination bits must be zero). For streams whose pieces do not start on byte boundaries.
void pack_at(const std::uint32_t* codes, std::size_t count, unsigned width, std::uint8_t* dst,
             std::uint64_t bit_offset);

/// Unpacks `count` codes of `width` bits starting at stream bit `bit_offset`.
void unpack_at(const std::uint8_t* src, std::size_t count, unsigned width, std::uint64_t bit_offset,
               std::uint32_t* codes);

/// pack() for codes held one per byte (width in [1, 8]): the form the quantisers' kernels
/// produce, which lets 8 codes be packed at once with BMI2's pext where the CPU has it.
/// Writes exactly packed_size(count, width) bytes (padding zero).
void pack_bytes(const std::uint8_t* codes, std::size_t count, unsigned width, std::uint8_t* dst);

/// unpack() into one code per byte (width in [1, 8]); pdep where the CPU has BMI2.
void unpack_bytes(const std::uint8_t* src, std::size_t count, unsigned width, std::uint8_t* codes);

/// True when the padding bits after `count` codes of `width` bits are all zero.
bool padding_is_zero(const std::uint8_t* src, std::size_t count, unsigned width);

/// Sign bits: bit i = 1 when the sign bit of values[i] is clear (+0.0 and positive values,
/// and NaNs without the sign bit), 0 for negative values and -0.0.
void pack_signs(const float* values, std::size_t count, std::uint8_t* dst);

/// Writes `count` codes of `width` bits produced by `code(i)` straight into `dst` without a
/// temporary array: blocks of 8 codes form exactly `width` bytes. For width <= 8 a block is
/// assembled in one 64-bit word, which keeps the per-element work branch-free.
template <typename CodeFn>
void pack_with(std::size_t count, unsigned width, std::uint8_t* dst, CodeFn&& code) {
  std::size_t i = 0;
  if (width <= 8) {
    for (; i + 8 <= count; i += 8) {
      std::uint64_t block = 0;
      for (unsigned j = 0; j < 8; ++j) {
        block |= static_cast<std::uint64_t>(code(i + j)) << (j * width);
      }
      for (unsigned b = 0; b < width; ++b) dst[b] = static_cast<std::uint8_t>(block >> (8 * b));
      dst += width;
    }
  }
  // Tail (and widths above 8): a 64-bit bit accumulator.
  std::uint64_t acc = 0;
  unsigned filled = 0;
  for (; i < count; ++i) {
    acc |= static_cast<std::uint64_t>(code(i)) << filled;
    filled += width;
    while (filled >= 8) {
      *dst++ = static_cast<std::uint8_t>(acc);
      acc >>= 8;
      filled -= 8;
    }
  }
  if (filled > 0) *dst = static_cast<std::uint8_t>(acc);
}

/// Reads `count` codes of `width` bits from `src` and hands each to `sink(i, code)`.
template <typename SinkFn>
void unpack_with(const std::uint8_t* src, std::size_t count, unsigned width, SinkFn&& sink) {
  std::size_t i = 0;
  if (width <= 8) {
    const std::uint32_t mask = (1u << width) - 1u;
    for (; i + 8 <= count; i += 8) {
      std::uint64_t block = 0;
      for (unsigned b = 0; b < width; ++b) block |= static_cast<std::uint64_t>(src[b]) << (8 * b);
      for (unsigned j = 0; j < 8; ++j) {
        sink(i + j, static_cast<std::uint32_t>(block >> (j * width)) & mask);
      }
      src += width;
    }
  }
  const std::uint64_t mask = (std::uint64_t{1} << width) - 1u;
  std::uint64_t acc = 0;
  unsigned filled = 0;
  for (; i < count; ++i) {
    while (filled < width) {
      acc |= static_cast<std::uint64_t>(*src++) << filled;
      filled += 8;
    }
    sink(i, static_cast<std::uint32_t>(acc & mask));
    acc >>= width;
    filled -= width;
  }
}

}  // namespace bits
}  // namespace gradwire
