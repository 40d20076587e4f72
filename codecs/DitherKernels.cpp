#include "codecs/DitherKernels.h"

#include "codecs/CpuFeatures.h"

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* placeholders of
// masked conversions are "maybe uninitialised"); the warning concerns the header, not us.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define GRADWIRE_DITHER_AVX512 1
#endif

namespace gradwire {
namespace quant {

#ifdef GRADWIRE_DITHER_AVX512

bool has_avx512_kernels() { return cpu_features().avx512; }

namespace {

#define GRADWIRE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// Dither::hash for 16 consecutive indices: `counter` holds index * 0x9E3779B9 + key per lane.
GRADWIRE_AVX512 inline __m512i hash16(__m512i counter) {
  __m512i x = counter;
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x7feb352d));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(0x846ca68bu)));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}

// Counters of indices first .. first + 15.
GRADWIRE_AVX512 inline __m512i first_counters(std::uint32_t first, std::uint32_t key) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first)), lanes);
  return _mm512_add_epi32(_mm512_mullo_epi32(index, _mm512_set1_epi32(static_cast<int>(0x9E3779B9u))),
                          _mm512_set1_epi32(static_cast<int>(key)));
}

// Dither::uniform from a hash: (h >> 8) * 2^-24, as float bits (non-negative: compared as int).
GRADWIRE_AVX512 inline __m512i uniform_bits(__m512i h) {
  return _mm512_castps_si512(
      _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(h, 8)), _mm512_set1_ps(0x1p-24f)));
}

// Runs a coder (16 codes per call, advancing its own dither counter) over m elements and
// stores the codes as bytes: 64 at a time narrowed by two pack instructions and one dword
// permute into a single 64-byte store (which the packer's 64-byte loads then forward from;
// four 16-byte stores would not forward to one 64-byte load), then 16 at a time.
template <typename Coder>
GRADWIRE_AVX512 inline std::uint32_t store_codes(Coder& coder, const float* x, std::uint32_t m, std::uint8_t* out) {
  // After packus_epi32 then packus_epi16, dword slot 4k + j holds codes 4k..4k+3 of input j
  // (the packs work within 128-bit lanes); output dword 4j + k must take slot 4k + j.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  std::uint32_t i = 0;
  for (; i + 64 <= m; i += 64) {
    const __m512i c0 = coder(x + i), c1 = coder(x + i + 16), c2 = coder(x + i + 32), c3 = coder(x + i + 48);
    // Codes are < 256: the saturating packs keep them.
    const __m512i bytes = _mm512_packus_epi16(_mm512_packus_epi32(c0, c1), _mm512_packus_epi32(c2, c3));
    _mm512_storeu_si512(out + i, _mm512_permutexvar_epi32(order, bytes));
  }
  for (; i + 16 <= m; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(coder(x + i)));
  }
  return i;
}

struct UniformCoder {
  GRADWIRE_AVX512 UniformCoder(std::uint32_t first, float scale, std::uint32_t key, std::uint32_t levels,
                               unsigned level_bits)
      : vscale(_mm512_set1_ps(scale)),
        vlevels(_mm512_set1_ps(static_cast<float>(levels))),
        sign_shift(_mm_cvtsi32_si128(static_cast<int>(31 - level_bits))),
        sign_bit(_mm512_set1_epi32(static_cast<int>(1u << level_bits))),
        counter(first_counters(first, key)) {}

  GRADWIRE_AVX512 inline __m512i operator()(const float* p) {
    const __m512i v = _mm512_loadu_si512(p);
    // t = min(|v| scale, s): vminps returns its second operand (s) when t is NaN, as the
    // portable clamp on bit patterns does.
    const __m512 t = _mm512_min_ps(
        _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(0x7fffffff))), vscale), vlevels);
    const __m512i floor_t = _mm512_cvttps_epi32(t);
    const __m512i frac = _mm512_castps_si512(_mm512_sub_ps(t, _mm512_cvtepi32_ps(floor_t)));
    const __mmask16 up = _mm512_cmplt_epi32_mask(uniform_bits(hash16(counter)), frac);
    const __m512i level = _mm512_mask_add_epi32(floor_t, up, floor_t, _mm512_set1_epi32(1));
    counter = _mm512_add_epi32(counter, _mm512_set1_epi32(static_cast<int>(16u * 0x9E3779B9u)));
    // level | sign bit moved to bit level_bits (0xF8: A | (B & C)).
    return _mm512_ternarylogic_epi32(level, _mm512_srl_epi32(v, sign_shift), sign_bit, 0xF8);
  }

  __m512 vscale, vlevels;
  __m128i sign_shift;
  __m512i sign_bit, counter;
};

struct PowerOfTwoCoder {
  GRADWIRE_AVX512 PowerOfTwoCoder(std::uint32_t first, float scale, std::uint32_t key, std::uint32_t levels,
                                  unsigned level_bits)
      : s(static_cast<std::int32_t>(levels)),
        // 2^(1-s) and 2^(s-1) from their exponent bits (s <= 64 keeps both normal).
        min_level(_mm512_set1_epi32((127 + 1 - s) << 23)),
        below_scale(_mm512_castsi512_ps(_mm512_set1_epi32((127 + s - 1) << 23))),
        vscale(_mm512_set1_ps(scale)),
        exponent_offset(_mm512_set1_epi32(s - 127)),
        sign_shift(_mm_cvtsi32_si128(static_cast<int>(31 - level_bits))),
        sign_bit(_mm512_set1_epi32(static_cast<int>(1u << level_bits))),
        counter(first_counters(first, key)) {}

  GRADWIRE_AVX512 inline __m512i operator()(const float* p) {
    const __m512i v = _mm512_loadu_si512(p);
    const __m512 raw = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(0x7fffffff))), vscale);
    const __m512i r = _mm512_castps_si512(_mm512_min_ps(raw, _mm512_set1_ps(1.0f)));  // NaN -> 1, as the clamp
    const __m512i below_p = _mm512_castps_si512(_mm512_mul_ps(raw, below_scale));
    const __m512i h = hash16(counter);
    counter = _mm512_add_epi32(counter, _mm512_set1_epi32(static_cast<int>(16u * 0x9E3779B9u)));
    // Above 2^(1-s): level a + s, +1 with probability f (the mantissa fraction). (The portable
    // loop's min(above, s) never binds: r < 1 has exponent <= -1, and r == 1 has a zero
    // mantissa, so never rounds up.)
    const __mmask16 up = _mm512_cmplt_epi32_mask(_mm512_srli_epi32(h, 9), _mm512_and_si512(r, _mm512_set1_epi32(0x7fffff)));
    __m512i above = _mm512_add_epi32(_mm512_srli_epi32(r, 23), exponent_offset);
    above = _mm512_mask_add_epi32(above, up, above, _mm512_set1_epi32(1));
    // Below: level 1 with probability r 2^(s-1), else 0.
    const __mmask16 below = _mm512_cmplt_epi32_mask(uniform_bits(h), below_p);
    const __mmask16 use_above = _mm512_cmpge_epi32_mask(r, min_level);
    const __m512i level = _mm512_mask_mov_epi32(_mm512_maskz_mov_epi32(below, _mm512_set1_epi32(1)), use_above, above);
    return _mm512_ternarylogic_epi32(level, _mm512_srl_epi32(v, sign_shift), sign_bit, 0xF8);
  }

  std::int32_t s;
  __m512i min_level;
  __m512 below_scale, vscale;
  __m512i exponent_offset;
  __m128i sign_shift;
  __m512i sign_bit, counter;
};

struct TernaryCoder {
  GRADWIRE_AVX512 TernaryCoder(std::uint32_t first, float bound, float inv, std::uint32_t key)
      : vbound(_mm512_set1_ps(bound)), vinv(_mm512_set1_ps(inv)), counter(first_counters(first, key)) {}

  GRADWIRE_AVX512 inline __m512i operator()(const float* p) {
    const __m512i v = _mm512_loadu_si512(p);
    // std::min(|v|, bound) returns |v| unless bound < |v| (a NaN |v| stays NaN): vminps with
    // |v| second.
    const __m512 a = _mm512_min_ps(vbound, _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(0x7fffffff))));
    const __m512i prob = _mm512_castps_si512(_mm512_mul_ps(a, vinv));
    const __mmask16 keep = _mm512_cmplt_epi32_mask(uniform_bits(hash16(counter)), prob);
    counter = _mm512_add_epi32(counter, _mm512_set1_epi32(static_cast<int>(16u * 0x9E3779B9u)));
    // keep * (1 + 2 sign): 01 for +1, 11 for -1.
    return _mm512_maskz_or_epi32(keep, _mm512_set1_epi32(1), _mm512_slli_epi32(_mm512_srli_epi32(v, 31), 1));
  }

  __m512 vbound, vinv;
  __m512i counter;
};

}  // namespace

GRADWIRE_AVX512 std::uint32_t uniform_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m,
                                                   float scale, std::uint32_t key, std::uint32_t levels,
                                                   unsigned level_bits, std::uint8_t* out) {
  UniformCoder coder(first, scale, key, levels, level_bits);
  return store_codes(coder, x, m, out);
}

GRADWIRE_AVX512 std::uint32_t power_of_two_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m,
                                                        float scale, std::uint32_t key, std::uint32_t levels,
                                                        unsigned level_bits, std::uint8_t* out) {
  PowerOfTwoCoder coder(first, scale, key, levels, level_bits);
  return store_codes(coder, x, m, out);
}

GRADWIRE_AVX512 std::uint32_t ternary_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m,
                                                   float bound, float inv, std::uint32_t key, std::uint8_t* out) {
  TernaryCoder coder(first, bound, inv, key);
  return store_codes(coder, x, m, out);
}

#else

bool has_avx512_kernels() { return false; }
std::uint32_t uniform_codes_avx512(const float*, std::uint32_t, std::uint32_t, float, std::uint32_t, std::uint32_t,
                                   unsigned, std::uint8_t*) {
  return 0;
}
std::uint32_t power_of_two_codes_avx512(const float*, std::uint32_t, std::uint32_t, float, std::uint32_t,
                                        std::uint32_t, unsigned, std::uint8_t*) {
  return 0;
}
std::uint32_t ternary_codes_avx512(const float*, std::uint32_t, std::uint32_t, float, float, std::uint32_t,
                                   std::uint8_t*) {
  return 0;
}

#endif

}  // namespace quant
}  // namespace gradwire
