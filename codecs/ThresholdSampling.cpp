#include "codecs/ThresholdSampling.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "codecs/TopKCodec.h"

namespace gradwire {

SamplePlan plan_threshold_sample(std::int64_t n, double sample_ratio, std::int64_t min_samples,
                                 SplitMix64& rng) {
  auto samples = static_cast<std::int64_t>(std::ceil(sample_ratio * static_cast<double>(n)));
  samples = std::clamp<std::int64_t>(std::max(samples, min_samples), 1, n);
  SamplePlan plan;
  plan.stride = n / samples;
  plan.start = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(plan.stride)));
  // start < stride and samples * stride <= n, so every one of the `samples` positions is < n.
  plan.count = std::min(samples, (n - plan.start + plan.stride - 1) / plan.stride);
  return plan;
}

std::uint32_t sample_threshold_key(std::vector<std::uint32_t>& keys, std::int64_t keep,
                                   std::int64_t n) {
  const auto m = static_cast<std::int64_t>(keys.size());
  auto ks = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(m) * static_cast<double>(keep) / static_cast<double>(n)));
  ks = std::clamp<std::int64_t>(ks, 1, m);
  // The ks-th largest key. A histogram of the top 11 bits (keys are < 2^31) finds the bucket
  // that holds it; only that bucket's keys go through nth_element (the same value a full
  // nth_element would give: selection is exact).
  constexpr int kShift = 20;
  std::array<std::uint32_t, std::size_t{1} << 11> histogram{};
  for (const std::uint32_t key : keys) ++histogram[key >> kShift];
  std::int64_t remaining = ks;
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

void collect_at_least(const float* x, std::int64_t n, std::uint32_t key, std::uint32_t base,
                      std::vector<std::uint32_t>& out) {
  std::size_t used = out.size();
  std::int64_t i = 0;
  for (; i + kScanBlock <= n; i += kScanBlock) {
    if (!any_at_least(x + i, kScanBlock, key)) continue;
    used += append_at_least(x + i, kScanBlock, key, base + static_cast<std::uint32_t>(i),
                            room_for(out, used, kScanBlock));
  }
  if (i < n) {
    used += append_at_least(x + i, n - i, key, base + static_cast<std::uint32_t>(i),
                            room_for(out, used, n - i));
  }
  out.resize(used);
}

bool dgc_exact_only(std::int64_t n, std::int64_t k, double sample_ratio) {
  auto wanted = static_cast<std::int64_t>(std::ceil(sample_ratio * static_cast<double>(n)));
  wanted = std::max(wanted, std::min<std::int64_t>(n, kMinSamplesPerKept * k));
  return k >= n || 2 * wanted >= n;
}

void dgc_finish_rounds(const float* x, std::int64_t n, std::int64_t k, std::uint32_t key,
                       std::vector<std::uint32_t>& candidates, std::uint32_t base,
                       std::vector<std::uint32_t>& out, DgcSelectStats& st, int max_rounds) {
  const auto upper = static_cast<std::int64_t>(kDgcUpperSlack * static_cast<double>(k));
  const auto lower = static_cast<std::int64_t>(std::ceil(kDgcLowerSlack * static_cast<double>(k)));
  for (int round = 1;; ++round) {
    if (round > 1) {
      candidates.clear();
      collect_at_least(x, n, key, 0, candidates);
    }
    const auto count = static_cast<std::int64_t>(candidates.size());
    st.rounds = round;
    st.count_before_fallback = count;
    if (count > upper) {
      // Too many: exact top-k among the candidates (they hold the global top-k, since at least
      // k entries are >= key).
      st.exact_fallback = true;
      std::vector<float> cand(static_cast<std::size_t>(count));
      for (std::int64_t j = 0; j < count; ++j) cand[j] = x[candidates[j]];
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
