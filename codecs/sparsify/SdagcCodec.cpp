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

namespace {

CodecTraits sdagc_traits(const SdagcOptions& options) {
  CodecTraits t;
  t.name = "sdagc";
  t.applies_momentum = options.momentum_compensation && options.momentum > 0.0;
  return t;
}

}  // namespace

SdagcCodec::SdagcCodec(SdagcOptions options, const CodecContext& ctx)
    : Codec(sdagc_traits(options)),
      options_(options),
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
    // Summed in lanes (sum_of_squares), not in element order: only the float scale below is
    // kept, so the last bits of the double do not matter but in the rarest rounding tie.
    const double sq = sum_of_squares(g, n);
    const double limit = options_.clip_norm / std::sqrt(static_cast<double>(workers_));
    if (std::sqrt(sq) > limit) scale = static_cast<float>(limit / std::sqrt(sq));
  }
  const float m = options_.momentum_compensation ? static_cast<float>(options_.momentum) : 0.0f;

  // Per segment: one pass updates u and v, sums v and v^2 (and u^2 for the revision) and
  // notes each block's largest |v|; the threshold follows from the sums, and the scan for
  // |v| >= threshold reads only the blocks that reach it (from memory again, for a segment
  // larger than the cache: a few percent of it at SDAGC's densities). The sums are taken in
  // lanes (momentum_accumulate_moments), which may differ from an element-order sum in the last
  // bits of a double; the threshold is rounded to float, so only a double straddling a float
  // rounding boundary could change it (sparsifiers_test pins the element-order results).
  std::vector<std::uint32_t> indices;
  std::vector<float> values;
  for (const Segment& s : plan_segments(layers_, n, false)) {
    float* x = v + s.offset;
    block_max_.resize(static_cast<std::size_t>((s.length + kScanBlock - 1) / kScanBlock));
    const VelocityMoments mo = momentum_accumulate_moments(u + s.offset, x, g + s.offset, s.length, m, false,
                                                           scale, options_.lr_revision, block_max_.data());
    const double mean = mo.sum / static_cast<double>(s.length);
    const double var = std::max(0.0, mo.squares / static_cast<double>(s.length) - mean * mean);
    const auto thr = static_cast<float>(options_.lambda * std::sqrt(var));
    const std::size_t first = indices.size();
    collect_at_least_in_blocks(x, s.length, std::max<std::uint32_t>(magnitude_key(thr), 1u),
                               static_cast<std::uint32_t>(s.offset), block_max_.data(), indices);
    if (indices.size() == first) {  // never starve a layer: send its largest entry (the first)
      const auto top = std::max_element(block_max_.begin(), block_max_.end());
      std::int64_t best = (top - block_max_.begin()) * kScanBlock;
      while (magnitude_key(x[best]) != *top) ++best;
      indices.push_back(static_cast<std::uint32_t>(s.offset + best));
    }
    float revise = 1.0f;
    if (options_.lr_revision) {
      double sent_sq = 0.0;
      for (std::size_t j = first; j < indices.size(); ++j) {
        sent_sq += static_cast<double>(v[indices[j]]) * v[indices[j]];
      }
      // u^2 summed in lanes, like the moments: only the float `revise` is kept.
      const double u_sq = mo.u_squares;
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
  set_last_density(n > 0 ? static_cast<double>(indices.size()) / static_cast<double>(n) : 1.0);
  Bytes payload = encode_compact_sparse(static_cast<std::uint64_t>(n), indices.data(), values.data(),
                                        indices.size(), options_.values);
  set_last_tensor_sends(sends_by_layer(layers_, n, indices.data(), indices.size(),
                                       static_cast<double>(payload.size() - kPayloadHeaderSize)));
  return payload;
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
  const double k = last_density() * n;
  if (op == CodecOp::kDecode) return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, k);
  if (op != CodecOp::kEncode) return Codec::work(op, numel, payload_bytes);
  const double scanned = std::min(n, static_cast<double>(kScanBlock) * k);  // blocks that reach thr
  CodecWork w = CodecWork::memory(20 * n + 4 * scanned + bytes) + CodecWork::compute(8 * n);
  if (options_.clip_norm > 0.0) w += CodecWork::memory(4 * n) + CodecWork::compute(2 * n);
  if (options_.lr_revision) w += CodecWork::compute(2 * n);  // u^2 in the same pass
  w += CodecWork::gather(n, k) * 2;  // v and u at the sent entries
  return w;
}

}  // namespace gradwire
