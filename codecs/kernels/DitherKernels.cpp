#include "codecs/kernels/DitherKernels.h"

#include "codecs/kernels/CpuFeatures.h"

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* placeholders of
// masked conversions are "maybe uninitialised"); the warning concerns the header, not us.
// Below: the vector operations for AVX-512, then for AVX2, each followed by the coders
// (DitherCoders.inc) compiled for it, then the entry points that pick one.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define GRADWIRE_DITHER_SIMD 1
#endif

namespace gradwire {
namespace quant {

#ifdef GRADWIRE_DITHER_SIMD

// ---- AVX-512: 16 lanes; comparisons give bit masks -----------------------------------------
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
namespace avx512 {
namespace {

struct V {
  using Int = __m512i;
  using Float = __m512;
  using Mask = __mmask16;
  static constexpr std::uint32_t kLanes = 16;

  static Int set1(std::uint32_t v) { return _mm512_set1_epi32(static_cast<int>(v)); }
  static Float set1f(float v) { return _mm512_set1_ps(v); }
  static Int iota() { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
  static Int load(const float* p) { return _mm512_loadu_si512(p); }
  static Int add(Int a, Int b) { return _mm512_add_epi32(a, b); }
  static Int mullo(Int a, Int b) { return _mm512_mullo_epi32(a, b); }
  static Int xor_(Int a, Int b) { return _mm512_xor_si512(a, b); }
  static Int and_(Int a, Int b) { return _mm512_and_si512(a, b); }
  static Int or_(Int a, Int b) { return _mm512_or_si512(a, b); }
  template <int N> static Int srli(Int x) { return _mm512_srli_epi32(x, N); }
  template <int N> static Int slli(Int x) { return _mm512_slli_epi32(x, N); }
  static Int srl(Int x, __m128i n) { return _mm512_srl_epi32(x, n); }
  static Float as_float(Int x) { return _mm512_castsi512_ps(x); }
  static Int as_int(Float x) { return _mm512_castps_si512(x); }
  static Float mul(Float a, Float b) { return _mm512_mul_ps(a, b); }
  static Float sub(Float a, Float b) { return _mm512_sub_ps(a, b); }
  static Float min(Float a, Float b) { return _mm512_min_ps(a, b); }  // b when either is NaN
  static Int cvtt(Float x) { return _mm512_cvttps_epi32(x); }
  static Float cvt(Int x) { return _mm512_cvtepi32_ps(x); }
  static Mask lt(Int a, Int b) { return _mm512_cmplt_epi32_mask(a, b); }  // signed
  static Int add_one_if(Int x, Mask m) { return _mm512_mask_add_epi32(x, m, x, set1(1)); }
  static Int one_if(Mask m) { return _mm512_maskz_mov_epi32(m, set1(1)); }
  static Int and_if(Mask m, Int x) { return _mm512_maskz_mov_epi32(m, x); }
  static Int select(Mask m, Int if_set, Int if_clear) { return _mm512_mask_mov_epi32(if_clear, m, if_set); }

  // The codes as bytes: 64 at a time, narrowed by two pack instructions and one dword permute
  // into a single 64-byte store (fewer instructions than four vpmovdb and stores), then 16 at
  // a time. Codes are < 256, which the saturating packs keep.
  template <typename Coder>
  static std::uint32_t store_codes(Coder& coder, const float* x, std::uint32_t m, std::uint8_t* out) {
    // After the packs (within 128-bit lanes), dword slot 4k + j holds codes 4k..4k+3 of
    // input j; output dword 4j + k must take slot 4k + j.
    const Int order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    std::uint32_t i = 0;
    for (; i + 64 <= m; i += 64) {
      const Int c0 = coder(x + i), c1 = coder(x + i + 16), c2 = coder(x + i + 32), c3 = coder(x + i + 48);
      const Int bytes = _mm512_packus_epi16(_mm512_packus_epi32(c0, c1), _mm512_packus_epi32(c2, c3));
      _mm512_storeu_si512(out + i, _mm512_permutexvar_epi32(order, bytes));
    }
    for (; i + 16 <= m; i += 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(coder(x + i)));
    }
    return i;
  }
};

#include "codecs/kernels/DitherCoders.inc"

}  // namespace
}  // namespace avx512
#pragma GCC pop_options

// ---- AVX2: 8 lanes; comparisons give all-ones lanes ------------------------------------------
#pragma GCC push_options
#pragma GCC target("avx2")
namespace avx2 {
namespace {

struct V {
  using Int = __m256i;
  using Float = __m256;
  using Mask = __m256i;
  static constexpr std::uint32_t kLanes = 8;

  static Int set1(std::uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }
  static Float set1f(float v) { return _mm256_set1_ps(v); }
  static Int iota() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  static Int load(const float* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static Int add(Int a, Int b) { return _mm256_add_epi32(a, b); }
  static Int mullo(Int a, Int b) { return _mm256_mullo_epi32(a, b); }
  static Int xor_(Int a, Int b) { return _mm256_xor_si256(a, b); }
  static Int and_(Int a, Int b) { return _mm256_and_si256(a, b); }
  static Int or_(Int a, Int b) { return _mm256_or_si256(a, b); }
  template <int N> static Int srli(Int x) { return _mm256_srli_epi32(x, N); }
  template <int N> static Int slli(Int x) { return _mm256_slli_epi32(x, N); }
  static Int srl(Int x, __m128i n) { return _mm256_srl_epi32(x, n); }
  static Float as_float(Int x) { return _mm256_castsi256_ps(x); }
  static Int as_int(Float x) { return _mm256_castps_si256(x); }
  static Float mul(Float a, Float b) { return _mm256_mul_ps(a, b); }
  static Float sub(Float a, Float b) { return _mm256_sub_ps(a, b); }
  static Float min(Float a, Float b) { return _mm256_min_ps(a, b); }  // b when either is NaN
  static Int cvtt(Float x) { return _mm256_cvttps_epi32(x); }
  static Float cvt(Int x) { return _mm256_cvtepi32_ps(x); }
  static Mask lt(Int a, Int b) { return _mm256_cmpgt_epi32(b, a); }  // signed
  static Int add_one_if(Int x, Mask m) { return _mm256_sub_epi32(x, m); }  // m is -1 or 0
  static Int one_if(Mask m) { return _mm256_and_si256(m, set1(1)); }
  static Int and_if(Mask m, Int x) { return _mm256_and_si256(m, x); }
  static Int select(Mask m, Int if_set, Int if_clear) { return _mm256_blendv_epi8(if_clear, if_set, m); }

  // As the AVX-512 version: 32 codes narrowed by two packs and a dword permute into one
  // 32-byte store, then 8 at a time.
  template <typename Coder>
  static std::uint32_t store_codes(Coder& coder, const float* x, std::uint32_t m, std::uint8_t* out) {
    // After the packs, dword slot 4l + j holds codes 4l..4l+3 of input j (l: 128-bit lane).
    const Int order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    std::uint32_t i = 0;
    for (; i + 32 <= m; i += 32) {
      const Int c0 = coder(x + i), c1 = coder(x + i + 8), c2 = coder(x + i + 16), c3 = coder(x + i + 24);
      const Int bytes = _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(bytes, order));
    }
    for (; i + 8 <= m; i += 8) {
      const Int c = coder(x + i);
      const Int bytes = _mm256_packus_epi16(_mm256_packus_epi32(c, c), _mm256_setzero_si256());
      // Slots 0 and 4 hold codes 0..3 and 4..7.
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i),
                       _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(bytes, order)));
    }
    return i;
  }
};

#include "codecs/kernels/DitherCoders.inc"

}  // namespace
}  // namespace avx2
#pragma GCC pop_options

std::uint32_t uniform_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float scale, std::uint32_t key,
                                 std::uint32_t levels, unsigned level_bits, std::uint8_t* out) {
  if (cpu_features().avx512) return avx512::uniform_codes(x, first, m, scale, key, levels, level_bits, out);
  if (cpu_features().avx2) return avx2::uniform_codes(x, first, m, scale, key, levels, level_bits, out);
  return 0;
}

std::uint32_t power_of_two_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                      std::uint32_t key, std::uint32_t levels, unsigned level_bits, std::uint8_t* out) {
  if (cpu_features().avx512) return avx512::power_of_two_codes(x, first, m, scale, key, levels, level_bits, out);
  if (cpu_features().avx2) return avx2::power_of_two_codes(x, first, m, scale, key, levels, level_bits, out);
  return 0;
}

std::uint32_t ternary_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float bound, float inv,
                                 std::uint32_t key, std::uint8_t* out) {
  if (cpu_features().avx512) return avx512::ternary_codes(x, first, m, bound, inv, key, out);
  if (cpu_features().avx2) return avx2::ternary_codes(x, first, m, bound, inv, key, out);
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
