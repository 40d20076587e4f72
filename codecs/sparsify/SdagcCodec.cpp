#include "codecs/sparsify/SdagcCodec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/MomentumCorrection.h"
#include "codecs/sparsify/LayerPlan.h"
#include "codecs/sparsify/ThresholdSampling.h"

namespace gradwire {

SdagcCodec::SdagcCodec(SdagcOptions options, const CodecContext& ctx)
    : options_(options),
      layers_(ctx.layers),
      workers_(std::max(1, ctx.workers)),
      max_elements_(ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel)
                                  : std::uint64_t{1} << 32),
      u_(std::make_unique<torch::Tensor>()),
      v_(std::make_unique<torch::Tensor>()) {
  if (!(options_.lambda > 0.0)) throw std::invalid_argument("sdagc: lambda must be > 0");
}

SdagcCodec::~SdagcCodec() = default;

const torch::Tensor& SdagcCodec::velocity() const { return *v_; }

Bytes SdagcCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "sdagc encode");
  const std::int64_t n = grad.numel();
  if (static_cast<std::uint64_t>(n) > (std::uint64_t{1} << 32)) {
    throw std::invalid_argument("sdagc encode: more than 2^32 elements");
  }
  ensure_state(*u_, n, "sdagc");
  ensure_state(*v_, n, "sdagc");
  const float* g = grad.data_ptr<float>();
  float* u = u_->data_ptr<float>();
  float* v = v_->data_ptr<float>();
  float scale = 1.0f;
  if (options_.clip_norm > 0.0) {
    double sq = 0.0;
    for (std::int64_t i = 0; i < n; ++i) sq += static_cast<double>(g[i]) * g[i];
    const double limit = options_.clip_norm / std::sqrt(static_cast<double>(workers_));
    if (std::sqrt(sq) > limit) scale = static_cast<float>(limit / std::sqrt(sq));
  }
  const float m = options_.momentum_compensation ? static_cast<float>(options_.momentum) : 0.0f;
  momentum_accumulate(u, v, g, n, m, false, scale);

  std::vector<std::uint32_t> indices;
  std::vector<float> values;
  for (const Segment& s : plan_segments(layers_, n, false)) {
    const float* x = v + s.offset;
    double sum = 0.0;
    double sq = 0.0;
    for (std::int64_t i = 0; i < s.length; ++i) {
      sum += x[i];
      sq += static_cast<double>(x[i]) * x[i];
    }
    const double mean = sum / static_cast<double>(s.length);
    const double var = std::max(0.0, sq / static_cast<double>(s.length) - mean * mean);
    const auto thr = static_cast<float>(options_.lambda * std::sqrt(var));
    const std::size_t first = indices.size();
    collect_at_least(x, s.length, std::max<std::uint32_t>(magnitude_key(thr), 1u), static_cast<std::uint32_t>(s.offset),
                     indices);
    if (indices.size() == first) {  // never starve a layer: send its largest entry
      std::int64_t best = 0;
      for (std::int64_t i = 1; i < s.length; ++i) {
        if (magnitude_key(x[i]) > magnitude_key(x[best])) best = i;
      }
      indices.push_back(static_cast<std::uint32_t>(s.offset + best));
    }
    float revise = 1.0f;
    if (options_.lr_revision) {
      double sent_sq = 0.0;
      double u_sq = 0.0;
      for (std::size_t j = first; j < indices.size(); ++j) {
        sent_sq += static_cast<double>(v[indices[j]]) * v[indices[j]];
      }
      for (std::int64_t i = 0; i < s.length; ++i) u_sq += static_cast<double>(u[s.offset + i]) * u[s.offset + i];
      if (sent_sq > u_sq && sent_sq > 0.0) revise = static_cast<float>(std::sqrt(u_sq / sent_sq));
    }
    for (std::size_t j = first; j < indices.size(); ++j) {
      const std::uint32_t i = indices[j];
      const float q = round_to_format(revise * v[i], options_.values);
      values.push_back(q);
      v[i] -= q;
      if (m != 0.0f) u[i] = 0.0f;
    }
  }
  last_density_ = n > 0 ? static_cast<double>(indices.size()) / static_cast<double>(n) : 1.0;
  return encode_compact_sparse(static_cast<std::uint64_t>(n), indices.data(), values.data(),
                               indices.size(), options_.values);
}

torch::Tensor SdagcCodec::decode(ByteSpan payload) const {
  return decode_compact_sparse(payload, max_elements_, "sdagc payload");
}

Bytes SdagcCodec::save_state() const {
  CodecState st(name());
  st.put_tensor("u", *u_);
  st.put_tensor("v", *v_);
  return st.serialize();
}

void SdagcCodec::load_state(ByteSpan state) {
  if (state.size == 0) return;
  const CodecState st = CodecState::parse(state, name());
  torch::Tensor u = st.tensor("u");
  torch::Tensor v = st.tensor("v");
  if (u.defined() != v.defined() || (u.defined() && u.numel() != v.numel())) {
    throw DecodeError("sdagc state: momentum and velocity buffers disagree");
  }
  *u_ = std::move(u);
  *v_ = std::move(v);
}

CodecWork SdagcCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  const double k = last_density_ * n;
  if (op == CodecOp::kDecode) return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, k);
  if (op != CodecOp::kEncode) return Codec::work(op, numel, payload_bytes);
  CodecWork w = CodecWork::memory(28 * n + bytes) + CodecWork::compute(8 * n);
  if (options_.clip_norm > 0.0) w += CodecWork::memory(4 * n) + CodecWork::compute(2 * n);
  if (options_.lr_revision) w += CodecWork::memory(4 * n) + CodecWork::compute(2 * n);
  w += CodecWork::gather(n, k) * 2;  // v and u at the sent entries
  return w;
}

}  // namespace gradwire
