#include "codecs/ThresholdSampling.h"

#include <algorithm>
#include <cmath>

#include "codecs/TopKCodec.h"

namespace gradwire {

std::uint32_t sampled_threshold_key(const float* x, std::int64_t n, std::int64_t keep,
                                    double sample_ratio, std::int64_t min_samples,
                                    SplitMix64& rng) {
  auto samples = static_cast<std::int64_t>(std::ceil(sample_ratio * static_cast<double>(n)));
  samples = std::clamp<std::int64_t>(std::max(samples, min_samples), 1, n);
  const std::int64_t stride = n / samples;
  const auto start = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(stride)));
  std::vector<std::uint32_t> keys;
  keys.reserve(static_cast<std::size_t>(samples));
  for (std::int64_t i = start; i < n && static_cast<std::int64_t>(keys.size()) < samples; i += stride) {
    keys.push_back(magnitude_key(x[i]));
  }
  const auto m = static_cast<std::int64_t>(keys.size());
  auto ks = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(m) * static_cast<double>(keep) / static_cast<double>(n)));
  ks = std::clamp<std::int64_t>(ks, 1, m);
  // ks-th largest: nth_element with descending order.
  std::nth_element(keys.begin(), keys.begin() + (ks - 1), keys.end(), std::greater<>());
  return keys[static_cast<std::size_t>(ks - 1)];
}

void collect_at_least(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                      std::vector<std::uint32_t>& out) {
  // Few entries pass at the densities used here, so the branch is almost always predicted.
  for (std::int64_t i = 0; i < n; ++i) {
    if (magnitude_key(x[i]) >= key) out.push_back(base + static_cast<std::uint32_t>(i));
  }
}

void dgc_select(const float* x, std::int64_t n, std::int64_t k, double sample_ratio,
                SplitMix64& rng, std::uint32_t base, std::vector<std::uint32_t>& out,
                DgcSelectStats* stats, int max_rounds) {
  DgcSelectStats local;
  DgcSelectStats& st = stats ? *stats : local;
  st = DgcSelectStats{};
  if (k <= 0 || n <= 0) return;
  auto wanted = static_cast<std::int64_t>(std::ceil(sample_ratio * static_cast<double>(n)));
  wanted = std::max(wanted, std::min<std::int64_t>(n, kMinSamplesPerKept * k));
  if (k >= n || 2 * wanted >= n) {
    st.exact_only = true;
    for (const std::uint32_t i : TopKCodec::select_largest(x, n, k)) out.push_back(base + i);
    st.count_before_fallback = std::min(k, n);
    return;
  }
  std::uint32_t key = sampled_threshold_key(x, n, k, sample_ratio, kMinSamplesPerKept * k, rng);
  const std::size_t first = out.size();
  const auto upper = static_cast<std::int64_t>(kDgcUpperSlack * static_cast<double>(k));
  const auto lower = static_cast<std::int64_t>(std::ceil(kDgcLowerSlack * static_cast<double>(k)));
  for (int round = 1;; ++round) {
    out.resize(first);
    collect_at_least(x, n, key, 0, out);
    const auto count = static_cast<std::int64_t>(out.size() - first);
    st.rounds = round;
    st.count_before_fallback = count;
    if (count > upper) {
      // Too many: exact top-k among the candidates (they hold the global top-k, since at least
      // k entries are >= key).
      st.exact_fallback = true;
      std::vector<float> cand(static_cast<std::size_t>(count));
      for (std::int64_t j = 0; j < count; ++j) cand[j] = x[out[first + j]];
      const std::vector<std::uint32_t> pick = TopKCodec::select_largest(cand.data(), count, k);
      std::vector<std::uint32_t> chosen(pick.size());
      for (std::size_t j = 0; j < pick.size(); ++j) chosen[j] = out[first + pick[j]];
      out.resize(first);
      for (const std::uint32_t i : chosen) out.push_back(base + i);
      return;
    }
    if (count >= lower || round >= max_rounds || key == 0) break;
    key = magnitude_key(key_to_magnitude(key) * static_cast<float>(kDgcThresholdDecay));
  }
  if (base != 0) {
    for (std::size_t j = first; j < out.size(); ++j) out[j] += base;
  }
}

}  // namespace gradwire
