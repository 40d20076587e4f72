#include "codecs/sparsify/ThresholdSampling.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "codecs/RatioCounts.h"
#include "codecs/kernels/CpuFeatures.h"
#include "codecs/sparsify/TopKCodec.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define GRADWIRE_SCAN_SIMD 1
#endif

namespace gradwire {

SamplePlan plan_threshold_sample(std::int64_t n, double sample_ratio, std::int64_t min_samples,
                                 SplitMix64& rng) {
  const std::int64_t samples = std::clamp<std::int64_t>(
      std::max(count_from_ratio(sample_ratio, n, CountRounding::kCeil), min_samples), 1, n);
  SamplePlan plan;
  plan.stride = n / samples;
  plan.start = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(plan.stride)));
  // start < stride and samples * stride <= n, so every one of the `samples` positions is < n.
  plan.count = std::min(samples, (n - plan.start + plan.stride - 1) / plan.stride);
  return plan;
}

std::uint32_t kth_largest_key(std::vector<std::uint32_t>& keys, std::int64_t rank) {
  // A histogram of the top 11 bits (keys are < 2^31) finds the bucket that holds it; only
  // that bucket's keys go through nth_element (the same value a full nth_element would give:
  // selection is exact), which for the clustered magnitudes of a gradient is a few percent.
  constexpr int kShift = 20;
  std::array<std::uint32_t, std::size_t{1} << 11> histogram{};
  for (const std::uint32_t key : keys) ++histogram[key >> kShift];
  std::int64_t remaining = rank;
  std::size_t bucket = histogram.size() - 1;
  while (static_cast<std::int64_t>(histogram[bucket]) < remaining) {
    remaining -= histogram[bucket--];
  }
  std::size_t w = 0;
  for (const std::uint32_t key : keys) {
    keys[w] = key;
    w += (key >> kShift) == bucket;
  }
  std::nth_element(keys.begin(), keys.begin() + (remaining - 1), keys.begin() + w,
                   std::greater<>());
  return keys[static_cast<std::size_t>(remaining - 1)];
}

std::uint32_t sample_threshold_key(std::vector<std::uint32_t>& keys, std::int64_t keep,
                                   std::int64_t n) {
  const auto m = static_cast<std::int64_t>(keys.size());
  // ceil(m * keep / n) in integers, so no rounding can move the rank: m <= n and keep <= n,
  // and with keep < n <= 2^32 the product stays below 2^64.
  std::int64_t ks = m;
  if (keep < n) {
    const auto un = static_cast<std::uint64_t>(n);
    const std::uint64_t product = static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(keep);
    ks = static_cast<std::int64_t>((product + un - 1) / un);
  }
  ks = std::clamp<std::int64_t>(ks, 1, m);
  return kth_largest_key(keys, ks);
}

std::uint32_t sampled_threshold_key(const float* x, std::int64_t n, std::int64_t keep,
                                    double sample_ratio, std::int64_t min_samples,
                                    SplitMix64& rng, std::vector<std::uint32_t>* scratch) {
  const SamplePlan plan = plan_threshold_sample(n, sample_ratio, min_samples, rng);
  std::vector<std::uint32_t> local;
  std::vector<std::uint32_t>& keys = scratch ? *scratch : local;
  keys.resize(static_cast<std::size_t>(plan.count));
  for (std::int64_t j = 0; j < plan.count; ++j) {
    keys[static_cast<std::size_t>(j)] = magnitude_key(x[plan.start + j * plan.stride]);
  }
  return sample_threshold_key(keys, keep, n);
}

namespace {

#ifdef GRADWIRE_SCAN_SIMD
// Positions (and keys, when keys_dst is not null) of the elements of x[0..len) whose key
// reaches `key`, ascending, for len a multiple of 64: per 16 elements one compare and a
// compress into a register (vpcompressd), stored whole at the write position, which then
// advances by the count; groups of 64 with nothing to keep are skipped after one test. The
// stores write up to 16 entries past the count, never past dst + len.
__attribute__((target("avx512f"))) std::size_t append_at_least_avx512(const float* x, std::int64_t len,
                                                                     std::uint32_t key, std::uint32_t first,
                                                                     std::uint32_t* dst, std::uint32_t* keys_dst) {
  const __m512i vkey = _mm512_set1_epi32(static_cast<int>(key));
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i index = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first)),
                                   _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  std::size_t m = 0;
  for (std::int64_t i = 0; i < len; i += 64) {
    __m512i keys[4];
    __mmask16 hit[4];
    for (int q = 0; q < 4; ++q) {
      keys[q] = _mm512_and_si512(_mm512_loadu_si512(x + i + 16 * q), abs_mask);
      hit[q] = _mm512_cmpge_epu32_mask(keys[q], vkey);
    }
    if ((hit[0] | hit[1] | hit[2] | hit[3]) == 0) {
      index = _mm512_add_epi32(index, _mm512_set1_epi32(64));
      continue;
    }
    for (int q = 0; q < 4; ++q) {
      _mm512_storeu_si512(dst + m, _mm512_maskz_compress_epi32(hit[q], index));
      if (keys_dst != nullptr) _mm512_storeu_si512(keys_dst + m, _mm512_maskz_compress_epi32(hit[q], keys[q]));
      m += static_cast<std::size_t>(__builtin_popcount(hit[q]));
      index = _mm512_add_epi32(index, sixteen);
    }
  }
  return m;
}

// The AVX2 version: per 8 elements a compare, the mask as 8 bits (vmovmskps), and a
// precomputed permutation that moves the kept lanes to the front (vpermd); stored whole, the
// write position advances by the count. Groups of 32 with nothing to keep are skipped.
struct LeftPack {
  LeftPack() {
    for (unsigned mask = 0; mask < 256; ++mask) {
      unsigned k = 0;
      for (unsigned lane = 0; lane < 8; ++lane) {
        if (mask & (1u << lane)) table[mask][k++] = lane;
      }
    }
  }
  alignas(32) std::uint32_t table[256][8] = {};
};
const LeftPack kLeftPack;

__attribute__((target("avx2"))) std::size_t append_at_least_avx2(const float* x, std::int64_t len, std::uint32_t key,
                                                                 std::uint32_t first, std::uint32_t* dst,
                                                                 std::uint32_t* keys_dst) {
  // key >= 1 here is not guaranteed: compare keys > key - 1 as signed (keys are >= 0).
  const __m256i below = _mm256_set1_epi32(static_cast<int>(key) - 1);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i index = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  std::size_t m = 0;
  for (std::int64_t i = 0; i < len; i += 32) {
    __m256i keys[4];
    unsigned hit[4];
    for (int q = 0; q < 4; ++q) {
      keys[q] = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * q)), abs_mask);
      hit[q] = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(keys[q], below))));
    }
    if ((hit[0] | hit[1] | hit[2] | hit[3]) == 0) {
      index = _mm256_add_epi32(index, _mm256_set1_epi32(32));
      continue;
    }
    for (int q = 0; q < 4; ++q) {
      const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLeftPack.table[hit[q]]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + m), _mm256_permutevar8x32_epi32(index, perm));
      if (keys_dst != nullptr) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(keys_dst + m), _mm256_permutevar8x32_epi32(keys[q], perm));
      }
      m += static_cast<std::size_t>(__builtin_popcount(hit[q]));
      index = _mm256_add_epi32(index, _mm256_set1_epi32(8));
    }
  }
  return m;
}
#endif

// Elements per call of the vector collector: the output grows by at most this much per call.
constexpr std::int64_t kCollectWindow = 4096;

// The scan of collect: appends after the first `used` entries of out (whose size may be
// larger: room_for grows it ahead) and returns the new count; `vector_used` receives the count
// after the vector part (keys are written up to there).
std::size_t collect_from(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                         std::vector<std::uint32_t>& out, std::size_t used, std::vector<std::uint32_t>* keys,
                         std::size_t& vector_used) {
  std::int64_t i = 0;
  vector_used = used;
#ifdef GRADWIRE_SCAN_SIMD
  const bool avx512 = cpu_features().avx512;
  if (avx512 || cpu_features().avx2) {
    for (; i + 64 <= n; i += kCollectWindow) {
      const std::int64_t len = std::min<std::int64_t>(kCollectWindow, (n - i) / 64 * 64);
      std::uint32_t* dst = room_for(out, used, len);
      std::uint32_t* kdst = keys != nullptr ? room_for(*keys, used, len) : nullptr;
      const std::uint32_t first = base + static_cast<std::uint32_t>(i);
      used += avx512 ? append_at_least_avx512(x + i, len, key, first, dst, kdst)
                     : append_at_least_avx2(x + i, len, key, first, dst, kdst);
      if (len < kCollectWindow) {
        i += len;
        break;
      }
    }
    vector_used = used;
  }
#endif
  for (; i + kScanBlock <= n; i += kScanBlock) {
    if (!any_at_least(x + i, kScanBlock, key)) continue;
    used += append_at_least(x + i, kScanBlock, key, base + static_cast<std::uint32_t>(i),
                            room_for(out, used, kScanBlock));
  }
  if (i < n) {
    used += append_at_least(x + i, n - i, key, base + static_cast<std::uint32_t>(i),
                            room_for(out, used, n - i));
  }
  return used;
}

void collect(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
             std::vector<std::uint32_t>& out, std::vector<std::uint32_t>* keys) {
  std::size_t vector_used = 0;
  const std::size_t used = collect_from(x, n, key, base, out, out.size(), keys, vector_used);
  out.resize(used);
  if (keys != nullptr) {
    // The scalar paths write no keys: theirs (all of them without AVX2, else those of the last
    // < 64 elements) are read back from the positions.
    keys->resize(used);
    for (std::size_t j = vector_used; j < used; ++j) (*keys)[j] = magnitude_key(x[out[j] - base]);
  }
}

}  // namespace

void collect_at_least(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                      std::vector<std::uint32_t>& out) {
  collect(x, n, key, base, out, nullptr);
}

void collect_at_least(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                      std::vector<std::uint32_t>& out, std::vector<std::uint32_t>& keys) {
  keys.resize(out.size());
  collect(x, n, key, base, out, &keys);
}

void collect_at_least_in_blocks(const float* x, std::int64_t n, std::uint32_t key,
                                std::uint32_t base, const std::uint32_t* block_max,
                                std::vector<std::uint32_t>& out) {
  const std::int64_t blocks = (n + kScanBlock - 1) / kScanBlock;
  std::size_t used = out.size();
  for (std::int64_t b = 0; b < blocks;) {
    if (block_max[b] < key) {
      ++b;
      continue;
    }
    std::int64_t e = b + 1;  // a run of blocks to scan goes to the vector scan in one call
    while (e < blocks && block_max[e] >= key) ++e;
    const std::int64_t from = b * kScanBlock;
    std::size_t vector_used = 0;
    used = collect_from(x + from, std::min(n, e * kScanBlock) - from, key,
                        base + static_cast<std::uint32_t>(from), out, used, nullptr, vector_used);
    b = e;
  }
  out.resize(used);
}

bool dgc_exact_only(std::int64_t n, std::int64_t k, double sample_ratio) {
  const std::int64_t wanted = std::max(count_from_ratio(sample_ratio, n, CountRounding::kCeil),
                                       std::min<std::int64_t>(n, kMinSamplesPerKept * k));
  return k >= n || 2 * wanted >= n;
}

void dgc_finish_rounds(const float* x, std::int64_t n, std::int64_t k, std::uint32_t key,
                       std::vector<std::uint32_t>& candidates, std::uint32_t base,
                       std::vector<std::uint32_t>& out, DgcSelectStats& st, int max_rounds) {
  VelocityScan scan;
  scan.rescan = [&](std::uint32_t at_least, std::vector<std::uint32_t>& found) {
    found.clear();
    collect_at_least(x, n, at_least, 0, found);
  };
  scan.gather = [&](const std::vector<std::uint32_t>& positions) {
    std::vector<float> values(positions.size());
    for (std::size_t j = 0; j < positions.size(); ++j) values[j] = x[positions[j]];
    return values;
  };
  dgc_finish_rounds(scan, k, key, candidates, base, out, st, max_rounds);
}

void dgc_finish_rounds(const VelocityScan& scan, std::int64_t k, std::uint32_t key,
                       std::vector<std::uint32_t>& candidates, std::uint32_t base,
                       std::vector<std::uint32_t>& out, DgcSelectStats& st, int max_rounds) {
  const std::int64_t upper = count_from_ratio(kDgcUpperSlack, k, CountRounding::kFloor);
  const std::int64_t lower = count_from_ratio(kDgcLowerSlack, k, CountRounding::kCeil);
  for (int round = 1;; ++round) {
    if (round > 1) scan.rescan(key, candidates);
    const auto count = static_cast<std::int64_t>(candidates.size());
    st.rounds = round;
    st.count_before_fallback = count;
    if (count > upper) {
      // Too many: exact top-k among the candidates (they hold the global top-k, since at least
      // k entries are >= key).
      st.exact_fallback = true;
      const std::vector<float> cand = scan.gather(candidates);
      const std::vector<std::uint32_t> pick = TopKCodec::select_largest(cand.data(), count, k);
      for (const std::uint32_t j : pick) out.push_back(base + candidates[j]);
      return;
    }
    if (count >= lower || round >= max_rounds || key == 0) break;
    key = magnitude_key(key_to_magnitude(key) * static_cast<float>(kDgcThresholdDecay));
  }
  for (const std::uint32_t i : candidates) out.push_back(base + i);
}

void dgc_select(const float* x, std::int64_t n, std::int64_t k, double sample_ratio,
                SplitMix64& rng, std::uint32_t base, std::vector<std::uint32_t>& out,
                DgcSelectStats* stats, int max_rounds) {
  DgcSelectStats local;
  DgcSelectStats& st = stats ? *stats : local;
  st = DgcSelectStats{};
  if (k <= 0 || n <= 0) return;
  if (dgc_exact_only(n, k, sample_ratio)) {
    st.exact_only = true;
    for (const std::uint32_t i : TopKCodec::select_largest(x, n, k)) out.push_back(base + i);
    st.count_before_fallback = std::min(k, n);
    return;
  }
  const std::uint32_t key =
      sampled_threshold_key(x, n, k, sample_ratio, kMinSamplesPerKept * k, rng);
  std::vector<std::uint32_t> candidates;
  collect_at_least(x, n, key, 0, candidates);
  dgc_finish_rounds(x, n, k, key, candidates, base, out, st, max_rounds);
}

}  // namespace gradwire
