#include "codecs/wire/HalfConversion.h"

#include <cstring>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "codecs/kernels/CpuFeatures.h"
#include "codecs/kernels/VectorKernel.h"

#if defined(__x86_64__) && !defined(GRADWIRE_BIG_ENDIAN)
#include <immintrin.h>
#define GRADWIRE_F16C 1
#endif

namespace gradwire {

namespace {

inline void store_u16_le(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
inline std::uint16_t load_u16_le(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

#ifdef GRADWIRE_F16C
// vcvtps2ph with round-to-nearest-even is IEEE conversion, as c10's fp16_ieee_from_fp32_value.
__attribute__((target("avx,f16c"))) std::uint64_t fp16_encode_f16c(const float* src, std::uint64_t n,
                                                                   std::uint8_t* dst) {
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), h);
  }
  return i;
}

__attribute__((target("avx,f16c"))) std::uint64_t fp16_decode_f16c(const std::uint8_t* src,
                                                                   std::uint64_t n, float* dst) {
  std::uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  return i;
}
#endif

}  // namespace

void floats_to_fp16(const float* src, std::uint64_t n, std::uint8_t* dst) {
  std::uint64_t i = 0;
#ifdef GRADWIRE_F16C
  if (cpu_features().f16c) i = fp16_encode_f16c(src, n, dst);
#endif
  for (; i < n; ++i) store_u16_le(dst + 2 * i, c10::detail::fp16_ieee_from_fp32_value(src[i]));
}

void fp16_to_floats(const std::uint8_t* src, std::uint64_t n, float* dst) {
  std::uint64_t i = 0;
#ifdef GRADWIRE_F16C
  if (cpu_features().f16c) i = fp16_decode_f16c(src, n, dst);
#endif
  for (; i < n; ++i) dst[i] = c10::detail::fp16_ieee_to_fp32_value(load_u16_le(src + 2 * i));
}

// c10::detail::round_to_nearest_even, written so the compiler vectorises it: add 0x7fff + the
// lowest kept bit, keep the top half; NaN becomes the canonical 0x7fc0. (Not AVX512-BF16's
// vcvtneps2bf16: it flushes denormals to zero and keeps NaN payloads.)
GRADWIRE_VECTOR_KERNEL void floats_to_bf16(const float* src, std::uint64_t n, std::uint8_t* dst) {
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, src + i, sizeof bits);
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const auto h = static_cast<std::uint16_t>(nan ? 0x7fc0u : rounded);
#ifdef GRADWIRE_BIG_ENDIAN
    store_u16_le(dst + 2 * i, h);
#else
    std::memcpy(dst + 2 * i, &h, sizeof h);
#endif
  }
}

GRADWIRE_VECTOR_KERNEL void bf16_to_floats(const std::uint8_t* src, std::uint64_t n, float* dst) {
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint16_t h;
#ifdef GRADWIRE_BIG_ENDIAN
    h = load_u16_le(src + 2 * i);
#else
    std::memcpy(&h, src + 2 * i, sizeof h);
#endif
    const std::uint32_t bits = std::uint32_t{h} << 16;
    std::memcpy(dst + i, &bits, sizeof bits);
  }
}

}  // namespace gradwire
