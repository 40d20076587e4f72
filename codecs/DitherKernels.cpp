#include "codecs/DitherKernels.h"

#include "codecs/CpuFeatures.h"

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* placeholders of
// masked conversions are "maybe uninitialised"); the warning concerns the header, not us.
// Below: the AVX-512 coders, then the AVX2 ones, then the entry points that pick one.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define GRADWIRE_DITHER_SIMD 1
#endif

namespace gradwire {
namespace quant {

#ifdef GRADWIRE_DITHER_SIMD

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
// stores the codes as bytes: 64 at a time, narrowed by two pack instructions and one dword
// permute into a single 64-byte store (fewer instructions than four vpmovdb and stores),
// then 16 at a time.
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

// ---- AVX2: the same coders, 8 lanes; comparisons give all-ones lanes instead of masks ----

#define GRADWIRE_AVX2 __attribute__((target("avx2")))

GRADWIRE_AVX2 inline __m256i hash8(__m256i counter) {
  __m256i x = counter;
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x7feb352d));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0x846ca68bu)));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

GRADWIRE_AVX2 inline __m256i first_counters8(std::uint32_t first, std::uint32_t key) {
  const __m256i index = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  return _mm256_add_epi32(_mm256_mullo_epi32(index, _mm256_set1_epi32(static_cast<int>(0x9E3779B9u))),
                          _mm256_set1_epi32(static_cast<int>(key)));
}

GRADWIRE_AVX2 inline __m256i uniform_bits8(__m256i h) {
  return _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(h, 8)), _mm256_set1_ps(0x1p-24f)));
}

GRADWIRE_AVX2 inline __m256i abs_bits8(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi32(0x7fffffff)); }

// As store_codes: 32 codes narrowed by two packs and a dword permute into one 32-byte store,
// then 8 at a time.
template <typename Coder>
GRADWIRE_AVX2 inline std::uint32_t store_codes8(Coder& coder, const float* x, std::uint32_t m, std::uint8_t* out) {
  // After the packs, dword slot 4l + j holds codes 4l..4l+3 of input j (l: 128-bit lane).
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  std::uint32_t i = 0;
  for (; i + 32 <= m; i += 32) {
    const __m256i c0 = coder(x + i), c1 = coder(x + i + 8), c2 = coder(x + i + 16), c3 = coder(x + i + 24);
    const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  for (; i + 8 <= m; i += 8) {
    const __m256i c = coder(x + i);
    const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(c, c), _mm256_setzero_si256());
    // Slots 0 and 4 hold codes 0..3 and 4..7.
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i),
                     _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bytes, order)));
  }
  return i;
}

struct UniformCoder8 {
  GRADWIRE_AVX2 UniformCoder8(std::uint32_t first, float scale, std::uint32_t key, std::uint32_t levels,
                              unsigned level_bits)
      : vscale(_mm256_set1_ps(scale)),
        vlevels(_mm256_set1_ps(static_cast<float>(levels))),
        sign_shift(_mm_cvtsi32_si128(static_cast<int>(31 - level_bits))),
        sign_bit(_mm256_set1_epi32(static_cast<int>(1u << level_bits))),
        counter(first_counters8(first, key)) {}

  GRADWIRE_AVX2 inline __m256i operator()(const float* p) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256 t = _mm256_min_ps(_mm256_mul_ps(_mm256_castsi256_ps(abs_bits8(v)), vscale), vlevels);  // NaN -> s
    const __m256i floor_t = _mm256_cvttps_epi32(t);
    const __m256i frac = _mm256_castps_si256(_mm256_sub_ps(t, _mm256_cvtepi32_ps(floor_t)));
    const __m256i up = _mm256_cmpgt_epi32(frac, uniform_bits8(hash8(counter)));  // -1 where u < frac
    counter = _mm256_add_epi32(counter, _mm256_set1_epi32(static_cast<int>(8u * 0x9E3779B9u)));
    const __m256i level = _mm256_sub_epi32(floor_t, up);
    return _mm256_or_si256(level, _mm256_and_si256(_mm256_srl_epi32(v, sign_shift), sign_bit));
  }

  __m256 vscale, vlevels;
  __m128i sign_shift;
  __m256i sign_bit, counter;
};

struct PowerOfTwoCoder8 {
  GRADWIRE_AVX2 PowerOfTwoCoder8(std::uint32_t first, float scale, std::uint32_t key, std::uint32_t levels,
                                 unsigned level_bits)
      : s(static_cast<std::int32_t>(levels)),
        min_level(_mm256_set1_epi32((127 + 1 - s) << 23)),
        below_scale(_mm256_castsi256_ps(_mm256_set1_epi32((127 + s - 1) << 23))),
        vscale(_mm256_set1_ps(scale)),
        exponent_offset(_mm256_set1_epi32(s - 127)),
        sign_shift(_mm_cvtsi32_si128(static_cast<int>(31 - level_bits))),
        sign_bit(_mm256_set1_epi32(static_cast<int>(1u << level_bits))),
        counter(first_counters8(first, key)) {}

  GRADWIRE_AVX2 inline __m256i operator()(const float* p) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256 raw = _mm256_mul_ps(_mm256_castsi256_ps(abs_bits8(v)), vscale);
    const __m256i r = _mm256_castps_si256(_mm256_min_ps(raw, _mm256_set1_ps(1.0f)));  // NaN -> 1
    const __m256i below_p = _mm256_castps_si256(_mm256_mul_ps(raw, below_scale));
    const __m256i h = hash8(counter);
    counter = _mm256_add_epi32(counter, _mm256_set1_epi32(static_cast<int>(8u * 0x9E3779B9u)));
    const __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(r, _mm256_set1_epi32(0x7fffff)), _mm256_srli_epi32(h, 9));
    const __m256i above = _mm256_sub_epi32(_mm256_add_epi32(_mm256_srli_epi32(r, 23), exponent_offset), up);
    const __m256i below = _mm256_and_si256(_mm256_cmpgt_epi32(below_p, uniform_bits8(h)), _mm256_set1_epi32(1));
    const __m256i use_below = _mm256_cmpgt_epi32(min_level, r);
    const __m256i level = _mm256_blendv_epi8(above, below, use_below);
    return _mm256_or_si256(level, _mm256_and_si256(_mm256_srl_epi32(v, sign_shift), sign_bit));
  }

  std::int32_t s;
  __m256i min_level;
  __m256 below_scale, vscale;
  __m256i exponent_offset;
  __m128i sign_shift;
  __m256i sign_bit, counter;
};

struct TernaryCoder8 {
  GRADWIRE_AVX2 TernaryCoder8(std::uint32_t first, float bound, float inv, std::uint32_t key)
      : vbound(_mm256_set1_ps(bound)), vinv(_mm256_set1_ps(inv)), counter(first_counters8(first, key)) {}

  GRADWIRE_AVX2 inline __m256i operator()(const float* p) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256 a = _mm256_min_ps(vbound, _mm256_castsi256_ps(abs_bits8(v)));  // NaN |v| stays NaN
    const __m256i prob = _mm256_castps_si256(_mm256_mul_ps(a, vinv));
    const __m256i keep = _mm256_cmpgt_epi32(prob, uniform_bits8(hash8(counter)));
    counter = _mm256_add_epi32(counter, _mm256_set1_epi32(static_cast<int>(8u * 0x9E3779B9u)));
    const __m256i code = _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(v, 31), 1), _mm256_set1_epi32(1));
    return _mm256_and_si256(keep, code);
  }

  __m256 vbound, vinv;
  __m256i counter;
};

GRADWIRE_AVX512 std::uint32_t uniform_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                                   std::uint32_t key, std::uint32_t levels, unsigned level_bits,
                                                   std::uint8_t* out) {
  UniformCoder coder(first, scale, key, levels, level_bits);
  return store_codes(coder, x, m, out);
}

GRADWIRE_AVX512 std::uint32_t power_of_two_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m,
                                                        float scale, std::uint32_t key, std::uint32_t levels,
                                                        unsigned level_bits, std::uint8_t* out) {
  PowerOfTwoCoder coder(first, scale, key, levels, level_bits);
  return store_codes(coder, x, m, out);
}

GRADWIRE_AVX512 std::uint32_t ternary_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m, float bound,
                                                   float inv, std::uint32_t key, std::uint8_t* out) {
  TernaryCoder coder(first, bound, inv, key);
  return store_codes(coder, x, m, out);
}

GRADWIRE_AVX2 std::uint32_t uniform_codes_avx2(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                               std::uint32_t key, std::uint32_t levels, unsigned level_bits,
                                               std::uint8_t* out) {
  UniformCoder8 coder(first, scale, key, levels, level_bits);
  return store_codes8(coder, x, m, out);
}

GRADWIRE_AVX2 std::uint32_t power_of_two_codes_avx2(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                                    std::uint32_t key, std::uint32_t levels, unsigned level_bits,
                                                    std::uint8_t* out) {
  PowerOfTwoCoder8 coder(first, scale, key, levels, level_bits);
  return store_codes8(coder, x, m, out);
}

GRADWIRE_AVX2 std::uint32_t ternary_codes_avx2(const float* x, std::uint32_t first, std::uint32_t m, float bound,
                                               float inv, std::uint32_t key, std::uint8_t* out) {
  TernaryCoder8 coder(first, bound, inv, key);
  return store_codes8(coder, x, m, out);
}

}  // namespace

std::uint32_t uniform_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float scale, std::uint32_t key,
                                 std::uint32_t levels, unsigned level_bits, std::uint8_t* out) {
  if (cpu_features().avx512) return uniform_codes_avx512(x, first, m, scale, key, levels, level_bits, out);
  if (cpu_features().avx2) return uniform_codes_avx2(x, first, m, scale, key, levels, level_bits, out);
  return 0;
}

std::uint32_t power_of_two_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                      std::uint32_t key, std::uint32_t levels, unsigned level_bits, std::uint8_t* out) {
  if (cpu_features().avx512) return power_of_two_codes_avx512(x, first, m, scale, key, levels, level_bits, out);
  if (cpu_features().avx2) return power_of_two_codes_avx2(x, first, m, scale, key, levels, level_bits, out);
  return 0;
}

std::uint32_t ternary_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float bound, float inv,
                                 std::uint32_t key, std::uint8_t* out) {
  if (cpu_features().avx512) return ternary_codes_avx512(x, first, m, bound, inv, key, out);
  if (cpu_features().avx2) return ternary_codes_avx2(x, first, m, bound, inv, key, out);
  return 0;
}

#else

std::uint32_t uniform_codes_simd(const float*, std::uint32_t, std::uint32_t, float, std::uint32_t, std::uint32_t,
                                 unsigned, std::uint8_t*) {
  return 0;
}
std::uint32_t power_of_two_codes_simd(const float*, std::uint32_t, std::uint32_t, float, std::uint32_t,
                                      std::uint32_t, unsigned, std::uint8_t*) {
  return 0;
}
std::uint32_t ternary_codes_simd(const float*, std::uint32_t, std::uint32_t, float, float, std::uint32_t,
                                 std::uint8_t*) {
  return 0;
}

#endif

}  // namespace quant
}  // namespace gradwire
