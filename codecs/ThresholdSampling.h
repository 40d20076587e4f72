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
#include <cstring>
#include <vector>

#include "codecs/SparseRandom.h"

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

/// The key of the `keep`-th largest magnitude (keep/n of the elements) estimated from a strided
/// sample with a random start, as the DGC reference code samples (synxlin/deep-gradient-
/// compression dgc/compression.py: stride = n / samples, start uniform in [0, stride)).
/// samples = max(ceil(sample_ratio * n), min_samples), at most n; the sample threshold is its
/// ceil(samples * keep / n)-th largest key. 0 < keep <= n.
std::uint32_t sampled_threshold_key(const float* x, std::int64_t n, std::int64_t keep,
                                    double sample_ratio, std::int64_t min_samples,
                                    SplitMix64& rng);

/// Appends base + i for every i in [0, n) with magnitude_key(x[i]) >= key, ascending.
void collect_at_least(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                      std::vector<std::uint32_t>& out);

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
/// 10 adaptation iterations); see ../shared/reference/codecs.md. Tensors where the sample would
/// cover half the elements go to exact top-k directly. Appends base + i, ascending.
void dgc_select(const float* x, std::int64_t n, std::int64_t k, double sample_ratio,
                SplitMix64& rng, std::uint32_t base, std::vector<std::uint32_t>& out,
                DgcSelectStats* stats = nullptr, int max_rounds = 10);

/// Constants of dgc_select (exposed for tests).
constexpr double kDgcUpperSlack = 1.3;
constexpr double kDgcLowerSlack = 0.8;
constexpr double kDgcThresholdDecay = 0.8;
constexpr std::int64_t kMinSamplesPerKept = 8;

}  // namespace gradwire
