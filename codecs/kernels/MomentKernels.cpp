#include "codecs/kernels/MomentKernels.h"

#include "codecs/kernels/CpuFeatures.h"

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* placeholders of masked
// operations are "maybe uninitialised"); the warning concerns the header, not us.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define GRADWIRE_MOMENT_SIMD 1
#endif

namespace gradwire {

#ifdef GRADWIRE_MOMENT_SIMD
namespace {

static_assert(kMomentLanes == 16, "the kernels hold 16 double lanes per sum");

// ---- AVX-512: 16 floats per step, each sum in two registers of 8 double lanes ----------------
template <bool Momentum, bool USquares>
__attribute__((target("avx512f"))) void moments_avx512(float* u, float* v, const float* g, std::int64_t blocks,
                                                       float momentum, float g_scale, MomentLanes& lanes,
                                                       std::uint32_t* block_max) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512 m = _mm512_set1_ps(momentum);
  const __m512 s = _mm512_set1_ps(g_scale);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  __m512d sum[2], sq[2], usq[2];
  for (int h = 0; h < 2; ++h) {
    sum[h] = _mm512_loadu_pd(lanes.sum + 8 * h);
    sq[h] = _mm512_loadu_pd(lanes.squares + 8 * h);
    usq[h] = _mm512_loadu_pd(lanes.u_squares + 8 * h);
  }
  for (std::int64_t b = 0; b < blocks; ++b) {
    __m512i top = _mm512_setzero_si512();
    for (int q = 0; q < 4; ++q) {
      const std::int64_t i = b * 64 + 16 * q;
      const __m512 gi = _mm512_mul_ps(s, _mm512_loadu_ps(g + i));
      __m512 vi = _mm512_loadu_ps(v + i);
      __m512 ui;
      if (Momentum) {
        ui = _mm512_add_round_ps(_mm512_mul_ps(m, _mm512_loadu_ps(u + i)), gi, kRound);
        _mm512_storeu_ps(u + i, ui);
        vi = _mm512_add_round_ps(vi, ui, kRound);
      } else {
        ui = _mm512_loadu_ps(u + i);
        vi = _mm512_add_round_ps(vi, gi, kRound);
      }
      _mm512_storeu_ps(v + i, vi);
      top = _mm512_max_epu32(top, _mm512_and_si512(_mm512_castps_si512(vi), abs_mask));
      for (int h = 0; h < 2; ++h) {
        const __m512d x = _mm512_cvtps_pd(h == 0 ? _mm512_castps512_ps256(vi) : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(vi), 1)));
        sum[h] = _mm512_add_pd(sum[h], x);
        sq[h] = _mm512_add_pd(sq[h], _mm512_mul_pd(x, x));  // exact product: an FMA rounds alike
        if (USquares) {
          const __m512d y = _mm512_cvtps_pd(h == 0 ? _mm512_castps512_ps256(ui) : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ui), 1)));
          usq[h] = _mm512_add_pd(usq[h], _mm512_mul_pd(y, y));
        }
      }
    }
    block_max[b] = static_cast<std::uint32_t>(_mm512_reduce_max_epu32(top));
  }
  for (int h = 0; h < 2; ++h) {
    _mm512_storeu_pd(lanes.sum + 8 * h, sum[h]);
    _mm512_storeu_pd(lanes.squares + 8 * h, sq[h]);
    _mm512_storeu_pd(lanes.u_squares + 8 * h, usq[h]);
  }
}

// ---- AVX2 (no FMA in the target, so nothing can be contracted): 8 floats per step, each sum
// in four registers of 4 double lanes; a group of 16 elements goes through two steps ---------
template <bool Momentum, bool USquares>
__attribute__((target("avx2"))) void moments_avx2(float* u, float* v, const float* g, std::int64_t blocks,
                                                  float momentum, float g_scale, MomentLanes& lanes,
                                                  std::uint32_t* block_max) {
  const __m256 m = _mm256_set1_ps(momentum);
  const __m256 s = _mm256_set1_ps(g_scale);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256d sum[4], sq[4], usq[4];
  for (int h = 0; h < 4; ++h) {
    sum[h] = _mm256_loadu_pd(lanes.sum + 4 * h);
    sq[h] = _mm256_loadu_pd(lanes.squares + 4 * h);
    usq[h] = _mm256_loadu_pd(lanes.u_squares + 4 * h);
  }
  for (std::int64_t b = 0; b < blocks; ++b) {
    __m256i top = _mm256_setzero_si256();
    for (int q = 0; q < 8; ++q) {
      const std::int64_t i = b * 64 + 8 * q;
      const __m256 gi = _mm256_mul_ps(s, _mm256_loadu_ps(g + i));
      __m256 vi = _mm256_loadu_ps(v + i);
      __m256 ui;
      if (Momentum) {
        ui = _mm256_add_ps(_mm256_mul_ps(m, _mm256_loadu_ps(u + i)), gi);
        _mm256_storeu_ps(u + i, ui);
        vi = _mm256_add_ps(vi, ui);
      } else {
        ui = _mm256_loadu_ps(u + i);
        vi = _mm256_add_ps(vi, gi);
      }
      _mm256_storeu_ps(v + i, vi);
      top = _mm256_max_epu32(top, _mm256_and_si256(_mm256_castps_si256(vi), abs_mask));
      const int base = (q % 2) * 2;  // lanes 0-7 for the first 8 of 16, 8-15 for the second
      for (int h = 0; h < 2; ++h) {
        const __m256d x = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(vi) : _mm256_extractf128_ps(vi, 1));
        sum[base + h] = _mm256_add_pd(sum[base + h], x);
        sq[base + h] = _mm256_add_pd(sq[base + h], _mm256_mul_pd(x, x));
        if (USquares) {
          const __m256d y = _mm256_cvtps_pd(h == 0 ? _mm256_castps256_ps128(ui) : _mm256_extractf128_ps(ui, 1));
          usq[base + h] = _mm256_add_pd(usq[base + h], _mm256_mul_pd(y, y));
        }
      }
    }
    __m128i t = _mm_max_epu32(_mm256_castsi256_si128(top), _mm256_extracti128_si256(top, 1));
    t = _mm_max_epu32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_max_epu32(t, _mm_shuffle_epi32(t, 0xb1));
    block_max[b] = static_cast<std::uint32_t>(_mm_cvtsi128_si32(t));
  }
  for (int h = 0; h < 4; ++h) {
    _mm256_storeu_pd(lanes.sum + 4 * h, sum[h]);
    _mm256_storeu_pd(lanes.squares + 4 * h, sq[h]);
    _mm256_storeu_pd(lanes.u_squares + 4 * h, usq[h]);
  }
}

template <bool Momentum, bool USquares>
void moments_dispatch(float* u, float* v, const float* g, std::int64_t blocks, float momentum, float g_scale,
                      MomentLanes& lanes, std::uint32_t* block_max) {
  if (cpu_features().avx512) {
    moments_avx512<Momentum, USquares>(u, v, g, blocks, momentum, g_scale, lanes, block_max);
  } else {
    moments_avx2<Momentum, USquares>(u, v, g, blocks, momentum, g_scale, lanes, block_max);
  }
}

}  // namespace
#endif

std::int64_t momentum_moments_simd(float* u, float* v, const float* g, std::int64_t n, float momentum,
                                   float g_scale, bool u_squares, MomentLanes& lanes, std::uint32_t* block_max) {
#ifdef GRADWIRE_MOMENT_SIMD
  if (!cpu_features().avx2) return 0;
  const std::int64_t blocks = n / 64;
  const bool with_momentum = momentum != 0.0f;
  if (with_momentum) {
    u_squares ? moments_dispatch<true, true>(u, v, g, blocks, momentum, g_scale, lanes, block_max)
              : moments_dispatch<true, false>(u, v, g, blocks, momentum, g_scale, lanes, block_max);
  } else {
    u_squares ? moments_dispatch<false, true>(u, v, g, blocks, momentum, g_scale, lanes, block_max)
              : moments_dispatch<false, false>(u, v, g, blocks, momentum, g_scale, lanes, block_max);
  }
  return blocks * 64;
#else
  (void)u, (void)v, (void)g, (void)n, (void)momentum, (void)g_scale, (void)u_squares, (void)lanes, (void)block_max;
  return 0;
#endif
}

}  // namespace gradwire
