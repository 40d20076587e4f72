#include "codecs/sparsify/GradientDroppingCodec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/RatioCounts.h"
#include "codecs/sparsify/LayerPlan.h"
#include "codecs/sparsify/ThresholdSampling.h"

namespace gradwire {

GradientDroppingCodec::GradientDroppingCodec(GradientDroppingOptions options,
                                             const CodecContext& ctx)
    : Codec(CodecTraits{"gradient_dropping"}),
      options_(options),
      layers_(ctx.layers),
      max_elements_(ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel)
                                  : std::uint64_t{1} << 32),
      rng_(mix_seed(ctx.seed, static_cast<std::uint64_t>(ctx.rank + 1), 0x6764)),
      residual_(std::make_unique<torch::Tensor>()) {
  if (!(options_.drop_ratio >= 0.0 && options_.drop_ratio < 1.0)) {
    throw std::invalid_argument("gradient_dropping: drop_ratio must be in [0, 1)");
  }
}

GradientDroppingCodec::~GradientDroppingCodec() = default;

const torch::Tensor& GradientDroppingCodec::residual() const { return *residual_; }

std::int64_t GradientDroppingCodec::kept_count(std::int64_t n, double drop_ratio) {
  const std::int64_t keep = count_from_ratio(1.0 - drop_ratio, n, CountRounding::kCeil);
  return std::clamp<std::int64_t>(keep, 1, n);
}

std::int64_t GradientDroppingCodec::sample_count(std::int64_t n, std::int64_t keep,
                                                 double sample_ratio) {
  const std::int64_t wanted = count_from_ratio(sample_ratio, n, CountRounding::kCeil);
  return std::clamp<std::int64_t>(std::max(wanted, n / keep), 1, n);
}

Bytes GradientDroppingCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "gradient_dropping encode");
  const std::int64_t n = grad.numel();
  if (static_cast<std::uint64_t>(n) > (std::uint64_t{1} << 32)) {
    throw std::invalid_argument("gradient_dropping encode: more than 2^32 elements");
  }
  ensure_state(*residual_, n, "gradient_dropping");
  float* r = residual_->data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  for (std::int64_t i = 0; i < n; ++i) r[i] += g[i];

  std::vector<Segment> segments = options_.global ? plan_segments({}, n, false)
                                                  : plan_segments(layers_, n, false);
  std::vector<std::uint32_t> indices;
  std::vector<float> values;
  for (const Segment& s : segments) {
    if (s.length <= 0) continue;
    const std::int64_t keep = kept_count(s.length, options_.drop_ratio);
    // The sample size is sample_count's, passed as the minimum with no ratio of its own.
    const std::int64_t samples = sample_count(s.length, keep, options_.sample_ratio);
    const std::uint32_t key =
        sampled_threshold_key(r + s.offset, s.length, keep, 0.0, samples, rng_);
    const std::size_t first = indices.size();
    collect_at_least(r + s.offset, s.length, key, static_cast<std::uint32_t>(s.offset), indices);
    for (std::size_t j = first; j < indices.size(); ++j) {
      const float q = round_to_format(r[indices[j]], options_.values);
      values.push_back(q);
      r[indices[j]] -= q;
    }
  }
  set_last_density(n > 0 ? static_cast<double>(indices.size()) / static_cast<double>(n) : 1.0);
  return encode_compact_sparse(static_cast<std::uint64_t>(n), indices.data(), values.data(),
                               indices.size(), options_.values);
}

torch::Tensor GradientDroppingCodec::decode(ByteSpan payload) const {
  return decode_compact_sparse(payload, max_elements_, "gradient_dropping payload");
}

Bytes GradientDroppingCodec::save_state() const {
  CodecState st(name());
  st.put_u64("rng", rng_.state());
  st.put_tensor("residual", *residual_);
  return st.serialize();
}

void GradientDroppingCodec::load_state(ByteSpan state) {
  if (state.size == 0) return;
  const CodecState st = CodecState::parse(state, name());
  rng_ = SplitMix64(st.u64("rng", rng_.state()));
  *residual_ = st.tensor("residual");
}

CodecWork GradientDroppingCodec::work(CodecOp op, std::int64_t numel,
                                      std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  if (op == CodecOp::kDecode) {
    return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, last_density() * n);
  }
  if (op != CodecOp::kEncode) return Codec::work(op, numel, payload_bytes);
  CodecWork w = CodecWork::memory(16 * n + bytes) + CodecWork::compute(2 * n);
  const auto tensor = [&](std::int64_t length) {
    if (length <= 0) return;
    const std::int64_t keep = kept_count(length, options_.drop_ratio);
    const auto sample = static_cast<double>(sample_count(length, keep, options_.sample_ratio));
    const double len = static_cast<double>(length);
    w += CodecWork::gather(len, sample) + CodecWork::compute(sample * kFlopsPerRandomNumber);
    w += CodecWork::selection(sample, std::ceil(sample * static_cast<double>(keep) / len));
    w += CodecWork::gather(len, static_cast<double>(keep));
  };
  if (options_.global || layers_.empty()) {
    tensor(numel);
  } else {
    for (const LayerSlice& layer : layers_) tensor(layer.numel());
  }
  return w;
}

}  // namespace gradwire
