#include "codecs/kernels/SparseKernels.h"

#include "codecs/kernels/CpuFeatures.h"

#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
// GCC 12 warns inside its own avx512fintrin.h (the _mm512_undefined_* placeholders of masked
// operations are "maybe uninitialised", and _mm512_reduce_max_epu32's "uninitialised"); the
// warnings concern the header, not us.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define GRADWIRE_BIN_SIMD 1
#endif

namespace gradwire {

#ifdef GRADWIRE_BIN_SIMD
#pragma GCC push_options
#pragma GCC target("avx512f")
namespace {

inline __mmask16 tail_mask(std::int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

// One bin [b, e): the pending sends settled (lanes of `pending`, when given), r += g and
// the largest magnitude key (NaN keys count as 0, as std::max skips a NaN), 16 lanes at a
// time, the tail under a mask.
std::uint32_t accumulate_bin(float* r, const float* g, std::int64_t b,
                                                                std::int64_t e, const std::uint16_t* pending,
                                                                float scale) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf_key = _mm512_set1_epi32(0x7f800000);
  const __m512 plus = _mm512_set1_ps(scale);
  const __m512 minus = _mm512_set1_ps(-scale);
  const __m512 zero = _mm512_setzero_ps();
  __m512i top = _mm512_setzero_si512();
  const auto lanes = [&](std::int64_t i, __mmask16 m, __m512 x, __m512 gi) {
    // x - (x < 0 ? -scale : scale) on the lanes sent last time.
    const __m512 off = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), plus, minus);
    x = _mm512_add_ps(_mm512_mask_sub_ps(x, static_cast<__mmask16>(*pending++), x, off), gi);
    _mm512_mask_storeu_ps(r + i, m, x);
    const __m512i key = _mm512_and_si512(_mm512_castps_si512(x), abs_mask);
    top = _mm512_max_epu32(top, _mm512_maskz_mov_epi32(_mm512_cmple_epu32_mask(key, inf_key), key));
  };
  std::int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    // The next bins' lines, early: the pass is bound by memory.
    _mm_prefetch(reinterpret_cast<const char*>(g + i) + 1024, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(r + i) + 1024, _MM_HINT_T0);
    lanes(i, 0xffff, _mm512_loadu_ps(r + i), _mm512_loadu_ps(g + i));
  }
  if (i < e) {
    const __mmask16 m = tail_mask(e - i);
    lanes(i, m, _mm512_maskz_loadu_ps(m, r + i), _mm512_maskz_loadu_ps(m, g + i));
  }
  return static_cast<std::uint32_t>(_mm512_reduce_max_epu32(top));
}

// The test of one bin: r != 0 (a NaN counts as non-zero) and |r + g| >= gmax; the chosen
// positions and values packed to the front of a register and stored whole; each vector's
// test mask written to `masks`.
std::size_t select_bin(const float* r, const float* g, std::int64_t b,
                                                          std::int64_t e, float gmax, std::uint32_t* indices,
                                                          float* kept, std::uint16_t* masks) {
  const __m512 limit = _mm512_set1_ps(gmax);
  const __m512 zero = _mm512_setzero_ps();
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  __m512i index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(b)),
                                   _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m512i sixteen = _mm512_set1_epi32(16);
  std::size_t m = 0;
  for (std::int64_t i = b; i < e; i += 16, ++masks) {
    const __mmask16 live = tail_mask(e - i);
    const __m512 x = _mm512_maskz_loadu_ps(live, r + i);
    const __m512 h = _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(_mm512_add_ps(x, _mm512_maskz_loadu_ps(live, g + i))), abs_mask));
    const __mmask16 hit = _mm512_mask_cmp_ps_mask(_mm512_mask_cmp_ps_mask(live, x, zero, _CMP_NEQ_UQ), h, limit,
                                                  _CMP_GE_OQ);
    _mm512_storeu_si512(indices + m, _mm512_maskz_compress_epi32(hit, index));
    _mm512_storeu_ps(kept + m, _mm512_maskz_compress_ps(hit, x));
    *masks = static_cast<std::uint16_t>(hit);
    m += static_cast<std::size_t>(__builtin_popcount(hit));
    index = _mm512_add_epi32(index, sixteen);
  }
  return m;
}

// Gap statistics, 16 gaps per step; 32-bit lane sums, flushed before they could wrap.
void count_gaps_lanes(const std::uint32_t* idx, std::size_t k, GapCounts& out) {
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i step7 = _mm512_set1_epi32(1 << 7);
  const __m512i step14 = _mm512_set1_epi32(1 << 14);
  const __m512i step21 = _mm512_set1_epi32(1 << 21);
  const __m512i step28 = _mm512_set1_epi32(1 << 28);
  __m512i any = _mm512_setzero_si512();
  std::size_t j = 1;
  constexpr std::size_t kFlush = std::size_t{16} << 24;  // at most 6 per lane and step
  while (j + 16 <= k) {
    __m512i varint = _mm512_setzero_si512();
    __m512i runs = _mm512_setzero_si512();
    const std::size_t stop = k - j > kFlush ? j + kFlush : k;
    for (; j + 16 <= stop; j += 16) {
      const __m512i gap = _mm512_sub_epi32(_mm512_sub_epi32(_mm512_loadu_si512(idx + j), _mm512_loadu_si512(idx + j - 1)), one);
      __m512i len = one;
      len = _mm512_mask_add_epi32(len, _mm512_cmpge_epu32_mask(gap, step7), len, one);
      len = _mm512_mask_add_epi32(len, _mm512_cmpge_epu32_mask(gap, step14), len, one);
      len = _mm512_mask_add_epi32(len, _mm512_cmpge_epu32_mask(gap, step21), len, one);
      len = _mm512_mask_add_epi32(len, _mm512_cmpge_epu32_mask(gap, step28), len, one);
      varint = _mm512_add_epi32(varint, len);
      runs = _mm512_mask_add_epi32(runs, _mm512_cmpneq_epu32_mask(gap, zero), runs, _mm512_add_epi32(len, one));
      any = _mm512_or_si512(any, gap);
    }
    out.varint += static_cast<std::uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(
        _mm512_cvtepu32_epi64(_mm512_castsi512_si256(varint)), _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(varint, 1)))));
    out.runs += static_cast<std::uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(
        _mm512_cvtepu32_epi64(_mm512_castsi512_si256(runs)), _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(runs, 1)))));
  }
  out.any_gap |= static_cast<std::uint32_t>(_mm512_reduce_or_epi32(any));
  for (; j < k; ++j) {
    const std::uint32_t gap = idx[j] - idx[j - 1] - 1;
    const std::uint32_t len = 1u + (gap >= (1u << 7)) + (gap >= (1u << 14)) + (gap >= (1u << 21)) + (gap >= (1u << 28));
    out.varint += len;
    out.runs += gap != 0 ? len + 1 : 0;
    out.any_gap |= gap;
  }
}

}  // namespace
#pragma GCC pop_options
#endif

bool adacomp_scan_avx512(float* r, const float* g, std::int64_t begin, std::int64_t end, std::int64_t bin,
                         const PendingSends& pending, std::uint32_t* indices, float* kept, std::uint16_t* masks,
                         BinScan& out) {
#ifdef GRADWIRE_BIN_SIMD
  if (!cpu_features().avx512) return false;
  const std::int64_t per_bin = (bin + 15) / 16;
  std::vector<std::uint16_t> none;
  const std::uint16_t* pending_masks = pending.masks;
  if (pending_masks == nullptr) {
    // Settle by position first (the previous scan was not this kernel's), then scan with no
    // pending lanes.
    apply_pending_sends(r, pending.indices, pending.count, pending.scale);
    none.assign(static_cast<std::size_t>(per_bin), 0);
    pending_masks = none.data();
  }
  std::size_t k = 0;
  std::size_t written = 0;
  for (std::int64_t b = begin; b < end; b += bin) {
    const std::int64_t e = b + bin < end ? b + bin : end;
    const std::size_t vectors = static_cast<std::size_t>((e - b + 15) / 16);
    const std::uint32_t top = accumulate_bin(r, g, b, e, pending_masks, pending.scale);
    if (pending.masks != nullptr) pending_masks += vectors;
    float gmax;
    __builtin_memcpy(&gmax, &top, sizeof gmax);
    out.gmax_sum += gmax;
    ++out.bins;
    if (!(gmax > 0.0f)) {
      for (std::size_t v = 0; v < vectors; ++v) masks[written + v] = 0;
    } else {
      k += select_bin(r, g, b, e, gmax, indices + k, kept + k, masks + written);
    }
    written += vectors;
  }
  out.count = k;
  out.masks = written;
  return true;
#else
  (void)r, (void)g, (void)begin, (void)end, (void)bin, (void)pending, (void)indices, (void)kept, (void)masks, (void)out;
  return false;
#endif
}

bool count_gaps_avx512(const std::uint32_t* idx, std::size_t k, GapCounts& out) {
#ifdef GRADWIRE_BIN_SIMD
  if (!cpu_features().avx512) return false;
  if (k > 1) count_gaps_lanes(idx, k, out);
  return true;
#else
  (void)idx, (void)k, (void)out;
  return false;
#endif
}

}  // namespace gradwire
