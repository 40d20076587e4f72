#include "codecs/wire/BitPacking.h"

#include "codecs/kernels/CpuFeatures.h"

#include <algorithm>
#include <cstring>

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12 warns inside its own AVX-512 headers (the _mm512_undefined_* placeholders of masked
// builtins are "maybe uninitialised"); the warning concerns the header, not us.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define GRADWIRE_SIGNS_AVX2 1
#endif

namespace gradwire {
namespace bits {

namespace {

// Widths that divide 8: plain loops with compile-time shifts, which the compiler vectorises.
template <unsigned W>
void pack_narrow(const std::uint32_t* codes, std::size_t count, std::uint8_t* dst) {
  constexpr unsigned kPerByte = 8 / W;
  const std::size_t whole = count / kPerByte;
  for (std::size_t k = 0; k < whole; ++k) {
    std::uint32_t byte = 0;
    for (unsigned j = 0; j < kPerByte; ++j) byte |= codes[k * kPerByte + j] << (j * W);
    dst[k] = static_cast<std::uint8_t>(byte);
  }
  if (whole * kPerByte < count) {
    std::uint32_t byte = 0;
    for (std::size_t i = whole * kPerByte; i < count; ++i) byte |= codes[i] << ((i - whole * kPerByte) * W);
    dst[whole] = static_cast<std::uint8_t>(byte);
  }
}

template <unsigned W>
void unpack_narrow(const std::uint8_t* src, std::size_t count, std::uint32_t* codes) {
  constexpr unsigned kPerByte = 8 / W;
  constexpr std::uint32_t kMask = (1u << W) - 1u;
  const std::size_t whole = count / kPerByte;
  for (std::size_t k = 0; k < whole; ++k) {
    const std::uint32_t byte = src[k];
    for (unsigned j = 0; j < kPerByte; ++j) codes[k * kPerByte + j] = (byte >> (j * W)) & kMask;
  }
  for (std::size_t i = whole * kPerByte; i < count; ++i) {
    codes[i] = (static_cast<std::uint32_t>(src[whole]) >> ((i - whole * kPerByte) * W)) & kMask;
  }
}

}  // namespace

void pack(const std::uint32_t* codes, std::size_t count, unsigned width, std::uint8_t* dst) {
  switch (width) {
    case 2: return pack_narrow<2>(codes, count, dst);
    case 4: return pack_narrow<4>(codes, count, dst);
    case 8: return pack_narrow<8>(codes, count, dst);
    default: pack_with(count, width, dst, [codes](std::size_t i) { return codes[i]; });
  }
}

void unpack(const std::uint8_t* src, std::size_t count, unsigned width, std::uint32_t* codes) {
  switch (width) {
    case 2: return unpack_narrow<2>(src, count, codes);
    case 4: return unpack_narrow<4>(src, count, codes);
    case 8: return unpack_narrow<8>(src, count, codes);
    default: unpack_with(src, count, width, [codes](std::size_t i, std::uint32_t c) { codes[i] = c; });
  }
}

void pack_at(const std::uint32_t* codes, std::size_t count, unsigned width, std::uint8_t* dst,
             std::uint64_t bit_offset) {
  if (bit_offset % 8 == 0) {
    pack(codes, count, width, dst + bit_offset / 8);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bit = bit_offset + static_cast<std::uint64_t>(i) * width;
    std::uint32_t code = codes[i];
    for (unsigned left = width; left > 0;) {
      const unsigned in_byte = static_cast<unsigned>(bit % 8);
      const unsigned take = std::min(left, 8 - in_byte);
      dst[bit / 8] = static_cast<std::uint8_t>(dst[bit / 8] | ((code & ((1u << take) - 1u)) << in_byte));
      code >>= take;
      bit += take;
      left -= take;
    }
  }
}

void unpack_at(const std::uint8_t* src, std::size_t count, unsigned width, std::uint64_t bit_offset,
               std::uint32_t* codes) {
  if (bit_offset % 8 == 0) {
    unpack(src + bit_offset / 8, count, width, codes);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bit = bit_offset + static_cast<std::uint64_t>(i) * width;
    std::uint32_t code = 0;
    for (unsigned got = 0; got < width;) {
      const unsigned in_byte = static_cast<unsigned>(bit % 8);
      const unsigned take = std::min(width - got, 8 - in_byte);
      code |= ((static_cast<std::uint32_t>(src[bit / 8]) >> in_byte) & ((1u << take) - 1u)) << got;
      bit += take;
      got += take;
    }
    codes[i] = code;
  }
}

namespace {

#ifdef GRADWIRE_SIGNS_AVX2
// pext / pdep move the low `width` bits of each of 8 bytes into 8 * width contiguous bits and
// back: a whole block of 8 codes in one instruction (CpuFeatures::fast_pext: not on AMD Zen
// 1/2, which run them in microcode).
inline std::uint64_t low_bits_of_each_byte(unsigned width) {
  return 0x0101010101010101ull * ((1u << width) - 1u);
}

// vpermb indices per width w: output byte t takes byte t % w of qword t / w (t < 8w).
struct QwordLowBytes {
  QwordLowBytes() {
    for (unsigned w = 1; w < 8; ++w) {
      for (unsigned t = 0; t < 64; ++t) table[w][t] = static_cast<std::uint8_t>(t < 8 * w ? (t / w) * 8 + t % w : 0);
    }
  }
  alignas(64) std::uint8_t table[8][64] = {};
};
const QwordLowBytes kQwordLowBytes;

// 64 byte codes of w <= 7 bits per iteration, in registers: vpmaddubsw merges byte pairs
// (b0 + b1 2^w: 2w bits per word), vpmaddwd word pairs (4w bits per dword), a shift and a
// bitwise select dword pairs (8w bits, i.e. w bytes, per qword), and vpermb gathers the w
// low bytes of the eight qwords into 8w contiguous bytes, stored under a byte mask. About
// six instructions per 64 codes, against three per 8 with pext. Returns the codes packed.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) std::size_t pack_bytes_vbmi(const std::uint8_t* codes,
                                                                                 std::size_t count, unsigned width,
                                                                                 std::uint8_t* dst) {
  const unsigned w = width;
  // Multipliers: unsigned bytes 1, 2^w (2^w <= 128); codes go in as the signed operand (< 128).
  const __m512i byte_pairs = _mm512_set1_epi16(static_cast<short>(1 | ((1u << w) << 8)));
  const __m512i word_pairs = _mm512_set1_epi32(static_cast<int>(1u | ((1u << (2 * w)) << 16)));
  const __m512i low4w = _mm512_set1_epi64(static_cast<long long>((std::uint64_t{1} << (4 * w)) - 1u));
  const __m128i dword_shift = _mm_cvtsi32_si128(static_cast<int>(32 - 4 * w));
  const __m512i gather = _mm512_load_si512(kQwordLowBytes.table[w]);
  const __mmask64 keep = (std::uint64_t{1} << (8 * w)) - 1u;
  const std::size_t stream = packed_size(count, w);
  std::size_t i = 0;
  for (; i + 64 <= count; i += 64) {
    const __m512i b = _mm512_loadu_si512(codes + i);
    const __m512i words = _mm512_maddubs_epi16(byte_pairs, b);
    const __m512i dwords = _mm512_madd_epi16(words, word_pairs);
    // 0xCA: mask ? first : second; the shifted copy's low bits (the lower dword's high bits)
    // are discarded by the mask.
    const __m512i qwords = _mm512_ternarylogic_epi64(low4w, dwords, _mm512_srl_epi64(dwords, dword_shift), 0xCA);
    const __m512i packed = _mm512_permutexvar_epi8(gather, qwords);
    // A whole 64-byte store while it stays inside the stream (the next block overwrites its
    // spare bytes); a masked store for the last blocks.
    if (i / 8 * w + 64 <= stream) {
      _mm512_storeu_si512(dst + i / 8 * w, packed);
    } else {
      _mm512_mask_storeu_epi8(dst + i / 8 * w, keep, packed);
    }
  }
  return i;
}

// Whole blocks of 8 codes: an 8-byte store while it stays inside the whole blocks' bytes (the
// spare bytes of one store are overwritten by the next block's), then the last blocks byte by
// byte; returns the codes packed (count rounded down to a multiple of 8).
__attribute__((target("bmi2"))) std::size_t pack_bytes_pext(const std::uint8_t* codes, std::size_t count,
                                                           unsigned width, std::uint8_t* dst) {
  const std::uint64_t mask = low_bits_of_each_byte(width);
  const std::size_t blocks = count / 8;
  std::size_t k = 0;
  for (; k * width + 8 <= blocks * width; ++k) {
    std::uint64_t word;
    std::memcpy(&word, codes + 8 * k, 8);
    const std::uint64_t packed = _pext_u64(word, mask);
    std::memcpy(dst + k * width, &packed, 8);
  }
  for (; k < blocks; ++k) {
    std::uint64_t word;
    std::memcpy(&word, codes + 8 * k, 8);
    const std::uint64_t packed = _pext_u64(word, mask);
    for (unsigned b = 0; b < width; ++b) dst[k * width + b] = static_cast<std::uint8_t>(packed >> (8 * b));
  }
  return 8 * k;
}

// Whole blocks whose 8-byte load stays inside the packed stream; returns the codes unpacked.
__attribute__((target("bmi2"))) std::size_t unpack_bytes_pdep(const std::uint8_t* src, std::size_t count,
                                                             unsigned width, std::uint8_t* codes) {
  const std::uint64_t mask = low_bits_of_each_byte(width);
  const std::size_t stream_bytes = packed_size(count, width);
  std::size_t k = 0;
  for (; 8 * (k + 1) <= count && k * width + 8 <= stream_bytes; ++k) {
    std::uint64_t word;
    std::memcpy(&word, src + k * width, 8);
    const std::uint64_t spread = _pdep_u64(word, mask);
    std::memcpy(codes + 8 * k, &spread, 8);
  }
  return 8 * k;
}
#endif

}  // namespace

void pack_bytes(const std::uint8_t* codes, std::size_t count, unsigned width, std::uint8_t* dst) {
  std::size_t done = 0;
#ifdef GRADWIRE_SIGNS_AVX2
  if (width < 8 && cpu_features().avx512vbmi) done = pack_bytes_vbmi(codes, count, width, dst);
  if (cpu_features().fast_pext) done += pack_bytes_pext(codes + done, count - done, width, dst + done / 8 * width);
#endif
  // done is a multiple of 8, so the rest starts on a whole byte of the stream.
  codes += done;
  pack_with(count - done, width, dst + done / 8 * width, [codes](std::size_t i) { return std::uint32_t{codes[i]}; });
}

void unpack_bytes(const std::uint8_t* src, std::size_t count, unsigned width, std::uint8_t* codes) {
  std::size_t done = 0;
#ifdef GRADWIRE_SIGNS_AVX2
  if (cpu_features().fast_pext) done = unpack_bytes_pdep(src, count, width, codes);
#endif
  codes += done;
  unpack_with(src + done / 8 * width, count - done, width,
              [codes](std::size_t i, std::uint32_t c) { codes[i] = static_cast<std::uint8_t>(c); });
}

bool padding_is_zero(const std::uint8_t* src, std::size_t count, unsigned width) {
  const std::uint64_t used = static_cast<std::uint64_t>(count) * width;
  const unsigned tail = static_cast<unsigned>(used % 8);
  if (tail == 0) return true;
  const std::uint8_t last = src[used / 8];
  return (last >> tail) == 0;
}

namespace {

#ifdef GRADWIRE_SIGNS_AVX2
// 32 signs at a time with vmovmskps (one instruction per 8 floats; the compiler does not find
// it for the portable loop). Returns how many elements it packed (a multiple of 32).
__attribute__((target("avx2"))) std::size_t pack_signs_avx2(const float* v, std::size_t count,
                                                          std::uint8_t* dst) {
  const std::size_t whole = count / 32;
  for (std::size_t k = 0; k < whole; ++k) {
    const float* p = v + 32 * k;
    const auto a = static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(p)));
    const auto b = static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(p + 8)));
    const auto c = static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(p + 16)));
    const auto d = static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_loadu_ps(p + 24)));
    // movemask gives the sign bits; ours are set for a clear sign bit. x86 is little-endian:
    // the u32's byte j holds elements 8j..8j+7.
    const std::uint32_t word = ~(a | (b << 8) | (c << 16) | (d << 24));
    std::memcpy(dst + 4 * k, &word, 4);
  }
  return whole * 32;
}

#endif

}  // namespace

void pack_signs(const float* values, std::size_t count, std::uint8_t* dst) {
  std::size_t done = 0;
#ifdef GRADWIRE_SIGNS_AVX2
  if (cpu_features().avx2) done = pack_signs_avx2(values, count, dst);
#endif
  values += done;
  dst += done / 8;
  count -= done;
  // Bit set when the float's sign bit is clear (integer operations: no float compare).
  const auto bit = [values](std::size_t i) {
    std::uint32_t b;
    std::memcpy(&b, values + i, 4);
    return (b >> 31) ^ 1u;
  };
  const std::size_t whole = count / 8;
  for (std::size_t k = 0; k < whole; ++k) {
    unsigned byte = 0;
    for (unsigned j = 0; j < 8; ++j) byte |= bit(8 * k + j) << j;
    dst[k] = static_cast<std::uint8_t>(byte);
  }
  if (whole * 8 < count) {
    unsigned byte = 0;
    for (std::size_t i = whole * 8; i < count; ++i) byte |= bit(i) << (i - whole * 8);
    dst[whole] = static_cast<std::uint8_t>(byte);
  }
}

}  // namespace bits
}  // namespace gradwire
