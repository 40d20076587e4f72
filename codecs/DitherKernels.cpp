#include "codecs/DitherKernels.h"

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

bool has_avx512_kernels() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0;
  }();
  return has;
}

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

}  // namespace

GRADWIRE_AVX512 std::uint32_t uniform_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m,
                                                   float scale, std::uint32_t key, std::uint32_t levels,
                                                   unsigned level_bits, std::uint8_t* out) {
  const std::uint32_t end = m / 16 * 16;
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 vlevels = _mm512_set1_ps(static_cast<float>(levels));
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i step = _mm512_set1_epi32(static_cast<int>(16u * 0x9E3779B9u));
  const __m128i sign_shift = _mm_cvtsi32_si128(static_cast<int>(31 - level_bits));
  const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(1u << level_bits));
  __m512i counter = first_counters(first, key);
  std::uint32_t i = 0;
  for (; i < end; i += 16) {
    const __m512i v = _mm512_loadu_si512(x + i);
    // t = min(|v| scale, s): vminps returns its second operand (s) when t is NaN, as the
    // portable clamp on bit patterns does.
    const __m512 t = _mm512_min_ps(_mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(v, abs_mask)), vscale), vlevels);
    const __m512i floor_t = _mm512_cvttps_epi32(t);
    const __m512i frac = _mm512_castps_si512(_mm512_sub_ps(t, _mm512_cvtepi32_ps(floor_t)));
    const __mmask16 up = _mm512_cmplt_epi32_mask(uniform_bits(hash16(counter)), frac);
    const __m512i level = _mm512_mask_add_epi32(floor_t, up, floor_t, one);
    // level | sign bit moved to bit level_bits (0xF8: A | (B & C)).
    const __m512i code = _mm512_ternarylogic_epi32(level, _mm512_srl_epi32(v, sign_shift), sign_bit, 0xF8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(code));
    counter = _mm512_add_epi32(counter, step);
  }
  return i;
}

GRADWIRE_AVX512 std::uint32_t power_of_two_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m,
                                                        float scale, std::uint32_t key, std::uint32_t levels,
                                                        unsigned level_bits, std::uint8_t* out) {
  const std::uint32_t end = m / 16 * 16;
  const auto s = static_cast<std::int32_t>(levels);
  // 2^(1-s) and 2^(s-1) from their exponent bits (s <= 64 keeps both normal).
  const __m512i min_level = _mm512_set1_epi32((127 + 1 - s) << 23);
  const __m512 below_scale = _mm512_castsi512_ps(_mm512_set1_epi32((127 + s - 1) << 23));
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 vone = _mm512_set1_ps(1.0f);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i mantissa = _mm512_set1_epi32(0x7fffff);
  const __m512i exponent_offset = _mm512_set1_epi32(s - 127);
  const __m512i top = _mm512_set1_epi32(s);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i step = _mm512_set1_epi32(static_cast<int>(16u * 0x9E3779B9u));
  const __m128i sign_shift = _mm_cvtsi32_si128(static_cast<int>(31 - level_bits));
  const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(1u << level_bits));
  __m512i counter = first_counters(first, key);
  std::uint32_t i = 0;
  for (; i < end; i += 16) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512 raw = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(v, abs_mask)), vscale);
    const __m512i r = _mm512_castps_si512(_mm512_min_ps(raw, vone));  // NaN -> 1, as the clamp
    const __m512i below_p = _mm512_castps_si512(_mm512_mul_ps(raw, below_scale));
    const __m512i h = hash16(counter);
    // Above 2^(1-s): level a + s (+1 with probability f, the mantissa fraction), at most s.
    const __mmask16 up = _mm512_cmplt_epi32_mask(_mm512_srli_epi32(h, 9), _mm512_and_si512(r, mantissa));
    __m512i above = _mm512_add_epi32(_mm512_srli_epi32(r, 23), exponent_offset);
    above = _mm512_min_epi32(_mm512_mask_add_epi32(above, up, above, one), top);
    // Below: level 1 with probability r 2^(s-1), else 0.
    const __mmask16 below = _mm512_cmplt_epi32_mask(uniform_bits(h), below_p);
    const __mmask16 use_above = _mm512_cmpge_epi32_mask(r, min_level);
    const __m512i level = _mm512_mask_mov_epi32(_mm512_maskz_mov_epi32(below, one), use_above, above);
    // level | sign bit moved to bit level_bits (0xF8: A | (B & C)).
    const __m512i code = _mm512_ternarylogic_epi32(level, _mm512_srl_epi32(v, sign_shift), sign_bit, 0xF8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(code));
    counter = _mm512_add_epi32(counter, step);
  }
  return i;
}

GRADWIRE_AVX512 std::uint32_t ternary_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m,
                                                   float bound, float inv, std::uint32_t key, std::uint8_t* out) {
  const std::uint32_t end = m / 16 * 16;
  const __m512 vbound = _mm512_set1_ps(bound);
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i step = _mm512_set1_epi32(static_cast<int>(16u * 0x9E3779B9u));
  __m512i counter = first_counters(first, key);
  std::uint32_t i = 0;
  for (; i < end; i += 16) {
    const __m512i v = _mm512_loadu_si512(x + i);
    // std::min(|v|, bound) returns |v| unless bound < |v| (a NaN |v| stays NaN): vminps with
    // |v| second.
    const __m512 a = _mm512_min_ps(vbound, _mm512_castsi512_ps(_mm512_and_si512(v, abs_mask)));
    const __m512i p = _mm512_castps_si512(_mm512_mul_ps(a, vinv));
    const __mmask16 keep = _mm512_cmplt_epi32_mask(uniform_bits(hash16(counter)), p);
    // keep * (1 + 2 sign): 01 for +1, 11 for -1.
    const __m512i code = _mm512_maskz_or_epi32(keep, one, _mm512_slli_epi32(_mm512_srli_epi32(v, 31), 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(code));
    counter = _mm512_add_epi32(counter, step);
  }
  return i;
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
