// Magnitude thresholds estimated from a sample, and DGC's selection built on them: the way
// Deep Gradient Compression (Lin et al., ICLR 2018, section 3 / "hierarchical" threshold
// selection) and Gradient Dropping (Aji & Heafield, EMNLP 2017) avoid a full top-k over the
// gradient.
//
// Magnitudes are compared as keys: the float's bits with the sign cleared, which order like
// |x| for every float and rank NaN above +inf (as TopKCodec does), so selection is total and
// deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <algorithm>
#include <cstring>
#include <vector>

#include "codecs/sparsify/SparseRandom.h"

namespace gradwire {

inline std::uint32_t magnitude_key(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & 0x7fffffffu;
}

inline float key_to_magnitude(std::uint32_t key) {
  float f;
  std::memcpy(&f, &key, sizeof f);
  return f;
}

/// Where a threshold sample lies: `count` positions start + j * stride, j < count.
struct SamplePlan {
  std::int64_t start = 0;
  std::int64_t stride = 1;
  std::int64_t count = 0;
};

/// The strided sample with a random start that the DGC reference code takes (synxlin/deep-
/// gradient-compression dgc/compression.py: stride = n / samples, start uniform in [0, stride)).
/// samples = max(ceil(sample_ratio * n), min_samples), at most n, the ceil taken by
/// count_from_ratio (codecs/RatioCounts.h). Draws once from `rng`. n > 0.
SamplePlan plan_threshold_sample(std::int64_t n, double sample_ratio, std::int64_t min_samples,
                                 SplitMix64& rng);

/// The ceil(m * keep / n)-th largest of the m = keys.size() sampled keys (at least the 1st, at
/// most the m-th; computed in integers): the sample's estimate of the keep-th largest of n.
/// Reorders `keys`. 0 < m <= n <= 2^32, keep <= n.
std::uint32_t sample_threshold_key(std::vector<std::uint32_t>& keys, std::int64_t keep,
                                   std::int64_t n);

/// The key of the `keep`-th largest magnitude (keep/n of the elements) estimated from the
/// plan_threshold_sample() sample of x: sample_threshold_key() of its keys. 0 < keep <= n.
/// `scratch` (optional) holds the sampled keys, so repeated calls do not allocate.
std::uint32_t sampled_threshold_key(const float* x, std::int64_t n, std::int64_t keep,
                                    double sample_ratio, std::int64_t min_samples,
                                    SplitMix64& rng,
                                    std::vector<std::uint32_t>* scratch = nullptr);

/// Appends base + i for every i in [0, n) with magnitude_key(x[i]) >= key, ascending. One
/// branch-light scan: with AVX-512, 16 elements per compare and compress (vpcompressd); with
/// AVX2, 8 per compare and a table-driven permute (vpermd); otherwise blocks of kScanBlock are tested with a vectorisable OR of comparisons, and only
/// blocks holding a candidate are walked (with a branch-free append).
void collect_at_least(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                      std::vector<std::uint32_t>& out);

/// collect_at_least that also appends each kept element's key to `keys` (entry j of `keys`
/// belongs to entry j of `out`; `keys` is resized to out's size first), so a selection among
/// the candidates needs no second, scattered read of x.
void collect_at_least(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                      std::vector<std::uint32_t>& out, std::vector<std::uint32_t>& keys);

/// collect_at_least over only the blocks of kScanBlock elements whose largest key,
/// block_max[b] (the last block may be shorter), reaches `key`: the same entries, without
/// reading the blocks that hold none.
void collect_at_least_in_blocks(const float* x, std::int64_t n, std::uint32_t key,
                                std::uint32_t base, const std::uint32_t* block_max,
                                std::vector<std::uint32_t>& out);

/// The rank-th largest of `keys` (1 <= rank <= keys.size()): an 11-bit histogram of the top
/// bits picks the bucket, nth_element runs inside it only. Reorders `keys`.
std::uint32_t kth_largest_key(std::vector<std::uint32_t>& keys, std::int64_t rank);

constexpr std::int64_t kScanBlock = 64;

/// True when some of the `len` magnitude keys at x reach `key` (vectorisable: signed compare
/// of non-negative keys, OR-reduced).
inline bool any_at_least(const float* x, std::int64_t len, std::uint32_t key) {
  const std::int32_t below = static_cast<std::int32_t>(key) - 1;  // key <= 0x7fffffff
  std::int32_t hit = 0;
  for (std::int64_t j = 0; j < len; ++j) {
    std::int32_t bits;
    std::memcpy(&bits, x + j, sizeof bits);
    hit |= (bits & 0x7fffffff) > below;
  }
  return hit != 0;
}

/// Writes first + j for every j < len with magnitude_key(x[j]) >= key to dst (room for len
/// entries), ascending, without branching on the data; returns how many.
inline std::size_t append_at_least(const float* x, std::int64_t len, std::uint32_t key,
                                   std::uint32_t first, std::uint32_t* dst) {
  std::size_t m = 0;
  for (std::int64_t j = 0; j < len; ++j) {
    dst[m] = first + static_cast<std::uint32_t>(j);
    m += magnitude_key(x[j]) >= key;
  }
  return m;
}

/// Makes room for `len` more entries after the first `used` of `out` (grows geometrically, so
/// a reused vector stops allocating) and returns where they go.
inline std::uint32_t* room_for(std::vector<std::uint32_t>& out, std::size_t used,
                               std::int64_t len) {
  const std::size_t need = used + static_cast<std::size_t>(len);
  if (out.size() < need) out.resize(std::max(need, 2 * out.size()));
  return out.data() + used;
}

/// What dgc_select did (for tests and diagnostics).
struct DgcSelectStats {
  int rounds = 0;                    ///< threshold passes over the tensor (0: exact only)
  std::int64_t count_before_fallback = 0;  ///< entries >= the last threshold
  bool exact_fallback = false;       ///< more than 1.3k were over the threshold: exact top-k
  bool exact_only = false;           ///< tensor too small to sample: exact top-k directly
};

/// DGC's selection of about k of n entries (0 < k <= n): a sampled threshold (1% of the
/// elements by default, and at least 8 sampled per kept element so the sample's k-th largest
/// is not a single extreme value); select |x| >= thr; if more than 1.3k are selected take the
/// exact top-k among them; if fewer than 0.8k, lower thr by x0.8 and retry, at most
/// `max_rounds` passes (then keep what the last pass found). Constants from synxlin/deep-
/// gradient-compression dgc/compression.py (resample bounds 0.8 / 1.3, threshold factor 0.8,
/// 10 adaptation iterations); "more than 1.3k" means more than floor(1.3k), "fewer than 0.8k"
/// fewer than ceil(0.8k), both by count_from_ratio. Tensors where the sample would
/// cover half the elements go to exact top-k directly. Appends base + i, ascending.
void dgc_select(const float* x, std::int64_t n, std::int64_t k, double sample_ratio,
                SplitMix64& rng, std::uint32_t base, std::vector<std::uint32_t>& out,
                DgcSelectStats* stats = nullptr, int max_rounds = 10);

/// The rounds of dgc_select after its sampled threshold: on entry `candidates` holds every
/// i in [0, n) with magnitude_key(x[i]) >= key, ascending (DgcCodec collects them in the same
/// pass that updates x). Counts, falls back to exact top-k among them, or lowers the key and
/// rescans x, exactly as dgc_select; appends base + i to `out`. `candidates` is scratch.
void dgc_finish_rounds(const float* x, std::int64_t n, std::int64_t k, std::uint32_t key,
                       std::vector<std::uint32_t>& candidates, std::uint32_t base,
                       std::vector<std::uint32_t>& out, DgcSelectStats& stats,
                       int max_rounds = 10);

/// Where dgc_finish_rounds reads the velocity when it is not a host array (DgcCodec's tensor
/// operations on an accelerator): `rescan(key, candidates)` replaces `candidates` with every
/// i whose magnitude_key reaches `key`, ascending; `gather(positions)` returns the values at
/// those positions.
struct VelocityScan {
  std::function<void(std::uint32_t key, std::vector<std::uint32_t>& candidates)> rescan;
  std::function<std::vector<float>(const std::vector<std::uint32_t>& positions)> gather;
};
/// dgc_finish_rounds over a VelocityScan: the same rounds, counts and fallback.
void dgc_finish_rounds(const VelocityScan& scan, std::int64_t k, std::uint32_t key,
                       std::vector<std::uint32_t>& candidates, std::uint32_t base,
                       std::vector<std::uint32_t>& out, DgcSelectStats& stats,
                       int max_rounds = 10);

/// Whether dgc_select takes the exact top-k directly (k >= n, or the sample would cover half
/// of the tensor), without sampling.
bool dgc_exact_only(std::int64_t n, std::int64_t k, double sample_ratio);

/// Constants of dgc_select (exposed for tests).
constexpr double kDgcUpperSlack = 1.3;
constexpr double kDgcLowerSlack = 0.8;
constexpr double kDgcThresholdDecay = 0.8;
constexpr std::int64_t kMinSamplesPerKept = 8;

}  // namespace gradwire
