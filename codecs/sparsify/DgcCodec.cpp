#include "codecs/sparsify/DgcCodec.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/MomentumCorrection.h"
#include "codecs/RatioCounts.h"
#include "codecs/sparsify/TopKCodec.h"

namespace gradwire {

std::vector<double> parse_density_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) throw std::invalid_argument("empty entry in density list '" + text + "'");
    const std::string t = item.substr(b, e - b + 1);
    std::size_t used = 0;
    double d = 0;
    try {
      d = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != t.size() || !(d > 0.0 && d <= 1.0)) {
      throw std::invalid_argument("expected comma-separated densities in (0, 1], got '" + t + "'");
    }
    out.push_back(d);
  }
  return out;
}

namespace {

CodecTraits dgc_traits(const DgcOptions& options) {
  CodecTraits t;
  t.name = "dgc";
  t.encodes_on_device = true;
  t.applies_momentum = options.momentum_correction && options.momentum > 0.0;
  return t;
}

}  // namespace

DgcCodec::DgcCodec(DgcOptions options, const CodecContext& ctx)
    : Codec(dgc_traits(options)),
      options_(std::move(options)),
      layers_(ctx.layers),
      workers_(std::max(1, ctx.workers)),
      stage_steps_(options_.warmup_stage_steps > 0 ? options_.warmup_stage_steps
                                                   : ctx.steps_per_epoch),
      max_elements_(ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel)
                                  : std::uint64_t{1} << 32),
      rng_(mix_seed(ctx.seed, static_cast<std::uint64_t>(ctx.rank + 1), 0x646763)),
      u_(std::make_unique<torch::Tensor>()),
      v_(std::make_unique<torch::Tensor>()) {
  if (!(options_.density > 0.0 && options_.density <= 1.0)) {
    throw std::invalid_argument("dgc: density must be in (0, 1]");
  }
  if (!(options_.momentum >= 0.0 && options_.momentum < 1.0)) {
    throw std::invalid_argument("dgc: momentum must be in [0, 1)");
  }
}

DgcCodec::~DgcCodec() = default;

const torch::Tensor& DgcCodec::momentum_buffer() const { return *u_; }
const torch::Tensor& DgcCodec::velocity() const { return *v_; }

double DgcCodec::density_at(std::int64_t step) const {
  if (options_.warmup && stage_steps_ > 0) {
    const std::int64_t stage = step / stage_steps_;
    if (stage < static_cast<std::int64_t>(options_.warmup_densities.size())) {
      return options_.warmup_densities[static_cast<std::size_t>(stage)];
    }
  }
  return options_.density;
}

float DgcCodec::clip_scale_for(double norm) const {
  if (!(options_.clip_norm > 0.0)) return 1.0f;
  // A non-finite norm (an inf or NaN in g) leaves g as it is: scaling by limit / inf would zero
  // the tensor's finite entries and turn its infinities into NaN, hiding where it diverged.
  const double limit = options_.clip_norm / std::sqrt(static_cast<double>(workers_));
  return std::isfinite(norm) && norm > limit ? static_cast<float>(limit / norm) : 1.0f;
}

float DgcCodec::clip_scale(const float* g, std::int64_t n) const {
  if (!(options_.clip_norm > 0.0)) return 1.0f;
  return clip_scale_for(std::sqrt(sum_of_squares(g, n)));
}

namespace {

/// How many contiguous pieces a pass over n elements is split into: one per intra-op thread
/// (at::get_num_threads(): compute.threads in a run), at least kMinPieceElements each, so
/// small tensors stay on the calling thread. The result never depends on it.
constexpr std::int64_t kMinPieceElements = std::int64_t{1} << 20;
int pieces_for(std::int64_t n) {
  const std::int64_t by_size = std::max<std::int64_t>(1, n / kMinPieceElements);
  return static_cast<int>(std::min<std::int64_t>(at::get_num_threads(), by_size));
}

}  // namespace

Bytes DgcCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "dgc encode", /*on_device=*/true);
  const std::int64_t n = grad.numel();
  if (static_cast<std::uint64_t>(n) > (std::uint64_t{1} << 32)) {
    throw std::invalid_argument("dgc encode: more than 2^32 elements do not fit u32 indices");
  }
  if (!grad.device().is_cpu()) return encode_with_tensor_ops(grad);
  ensure_state(*u_, n, "dgc");
  ensure_state(*v_, n, "dgc");
  const double density = density_at(step_);
  ++step_;
  const float* g = grad.data_ptr<float>();
  float* u = u_->data_ptr<float>();
  float* v = v_->data_ptr<float>();

  const float m = options_.momentum_correction ? static_cast<float>(options_.momentum) : 0.0f;
  const bool nesterov = options_.nesterov;

  // Per segment, one pass over g, u, v: the momentum-corrected update fused with the selection
  // scan. The threshold is estimated first from a sample of the *updated* v, computed at the
  // sampled positions only (momentum_preview: the same arithmetic as the pass). The result is
  // what momentum_accumulate over everything followed by dgc_select per segment gives.
  const std::vector<Segment> segments = plan_segments(layers_, n, options_.dense_1d);
  indices_.clear();
  values_.clear();
  stats_.clear();
  for (const Segment& s : segments) {
    if (s.length <= 0) continue;
    float* us = u + s.offset;
    float* vs = v + s.offset;
    const float* gs = g + s.offset;
    const auto base = static_cast<std::uint32_t>(s.offset);
    const std::size_t first = indices_.size();
    const float scale = clip_scale(gs, s.length);
    if (s.dense) {
      momentum_accumulate(us, vs, gs, s.length, m, nesterov, scale);
      for (std::int64_t i = 0; i < s.length; ++i) {
        indices_.push_back(base + static_cast<std::uint32_t>(i));
      }
    } else {
      const std::int64_t k = std::clamp<std::int64_t>(
          count_from_ratio(density, s.length, CountRounding::kNearest), 1, s.length);
      DgcSelectStats st;
      if (dgc_exact_only(s.length, k, options_.sample_ratio)) {
        momentum_accumulate(us, vs, gs, s.length, m, nesterov, scale);
        st.exact_only = true;
        st.count_before_fallback = k;
        for (const std::uint32_t i : TopKCodec::select_largest(vs, s.length, k)) {
          indices_.push_back(base + i);
        }
      } else {
        const SamplePlan plan = plan_threshold_sample(s.length, options_.sample_ratio,
                                                      kMinSamplesPerKept * k, rng_);
        sample_keys_.resize(static_cast<std::size_t>(plan.count));
        std::uint32_t* keys = sample_keys_.data();
        const int pieces = pieces_for(plan.count * plan.stride);
        at::parallel_for(0, pieces, 1, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t p = b; p < e; ++p) {
            for (std::int64_t j = plan.count * p / pieces; j < plan.count * (p + 1) / pieces; ++j) {
              const std::int64_t i = plan.start + j * plan.stride;
              keys[j] = magnitude_key(momentum_preview(us[i], vs[i], gs[i], m, nesterov, scale));
            }
          }
        });
        const std::uint32_t key = sample_threshold_key(sample_keys_, k, s.length);
        // The pass, in up to `pieces` contiguous ranges (one per intra-op thread; the same
        // result for any count): each appends its candidates to its own list, in order.
        const int ranges = pieces_for(s.length);
        if (piece_candidates_.size() < static_cast<std::size_t>(ranges)) {
          piece_candidates_.resize(static_cast<std::size_t>(ranges));
        }
        const auto bound = [&](std::int64_t p) {
          return p == ranges ? s.length : (s.length * p / ranges) / kScanBlock * kScanBlock;
        };
        at::parallel_for(0, ranges, 1, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t p = b; p < e; ++p) {
            const std::int64_t lo = bound(p);
            std::vector<std::uint32_t>& out = piece_candidates_[static_cast<std::size_t>(p)];
            out.clear();
            momentum_accumulate_collect(us + lo, vs + lo, gs + lo, bound(p + 1) - lo, m,
                                        nesterov, scale, key, static_cast<std::uint32_t>(lo),
                                        out);
          }
        });
        candidates_.clear();
        for (int p = 0; p < ranges; ++p) {
          const auto& part = piece_candidates_[static_cast<std::size_t>(p)];
          candidates_.insert(candidates_.end(), part.begin(), part.end());
        }
        dgc_finish_rounds(vs, s.length, k, key, candidates_, base, indices_, st);
      }
      stats_.push_back(st);
    }
    // Send v at the chosen indices; what the wire format rounds away stays in v (exactly 0
    // left for fp32). Momentum factor masking on sparsified tensors only: dense ones keep
    // their momentum, as plain momentum SGD would.
    const bool mask = options_.momentum_masking && !s.dense && m != 0.0f;
    for (std::size_t j = first; j < indices_.size(); ++j) {
      const std::uint32_t i = indices_[j];
      const float q = round_to_format(v[i], options_.values);
      values_.push_back(q);
      v[i] -= q;
      if (mask) u[i] = 0.0f;
    }
  }
  set_last_density(n > 0 ? static_cast<double>(indices_.size()) / static_cast<double>(n) : 1.0);
  Bytes payload = encode_compact_sparse(static_cast<std::uint64_t>(n), indices_.data(), values_.data(),
                                        indices_.size(), options_.values);
  set_last_tensor_sends(sends_by_layer(layers_, n, indices_.data(), indices_.size(),
                                       static_cast<double>(payload.size() - kPayloadHeaderSize)));
  return payload;
}

Bytes DgcCodec::encode_with_tensor_ops(const torch::Tensor& grad) {
  const std::int64_t n = grad.numel();
  ensure_state(*u_, grad, "dgc");
  ensure_state(*v_, grad, "dgc");
  torch::Tensor& u = *u_;
  torch::Tensor& v = *v_;
  const double density = density_at(step_);
  ++step_;

  const std::vector<Segment> segments = plan_segments(layers_, n, options_.dense_1d);
  const float m = options_.momentum_correction ? static_cast<float>(options_.momentum) : 0.0f;
  // Local clipping per tensor: the norms are summed where grad lives (in LibTorch's order) and
  // cross to the host together; momentum_accumulate's arithmetic follows, one rounding per
  // operation as there (a scale of 1 leaves a tensor's g as it is, as 1 * g does).
  torch::Tensor g = grad;
  if (options_.clip_norm > 0.0 && !segments.empty()) {
    std::vector<torch::Tensor> squares;
    for (const Segment& s : segments) {
      squares.push_back(grad.slice(0, s.offset, s.offset + s.length).to(torch::kDouble).square().sum());
    }
    const torch::Tensor host = torch::stack(squares).to(torch::kCPU).contiguous();
    for (std::size_t j = 0; j < segments.size(); ++j) {
      const float scale = clip_scale_for(std::sqrt(host.data_ptr<double>()[j]));
      if (scale == 1.0f) continue;
      if (g.is_same(grad)) g = grad.clone();
      g.slice(0, segments[j].offset, segments[j].offset + segments[j].length).mul_(scale);
    }
  }
  if (m == 0.0f) {
    v.add_(g);
  } else if (options_.nesterov) {
    u.add_(g).mul_(m);
    v.add_(u.add(g));
  } else {
    u.mul_(m).add_(g);
    v.add_(u);
  }
  const torch::Tensor keys = v.view(torch::kInt).bitwise_and(0x7fffffff);
  const auto to_positions = [](const torch::Tensor& found, std::vector<std::uint32_t>& out) {
    const torch::Tensor host = found.to(torch::kCPU).to(torch::kLong).contiguous();
    const std::int64_t* p = host.data_ptr<std::int64_t>();
    out.resize(static_cast<std::size_t>(host.numel()));
    for (std::size_t j = 0; j < out.size(); ++j) out[j] = static_cast<std::uint32_t>(p[j]);
  };

  indices_.clear();
  values_.clear();
  stats_.clear();
  std::vector<std::uint32_t> masked;  // positions whose momentum is zeroed
  std::vector<std::uint32_t> found;
  for (const Segment& s : segments) {
    if (s.length <= 0) continue;
    const auto base = static_cast<std::uint32_t>(s.offset);
    const std::size_t first = indices_.size();
    if (s.dense) {
      for (std::int64_t i = 0; i < s.length; ++i) indices_.push_back(base + static_cast<std::uint32_t>(i));
      continue;
    }
    const std::int64_t k = std::clamp<std::int64_t>(
        count_from_ratio(density, s.length, CountRounding::kNearest), 1, s.length);
    const torch::Tensor vs = v.slice(0, s.offset, s.offset + s.length);
    const torch::Tensor ks = keys.slice(0, s.offset, s.offset + s.length);
    DgcSelectStats st;
    if (dgc_exact_only(s.length, k, options_.sample_ratio)) {
      st.exact_only = true;
      st.count_before_fallback = k;
      to_positions(TopKCodec::select_largest_with_tensor_ops(vs, k), found);
      for (const std::uint32_t i : found) indices_.push_back(base + i);
    } else {
      const SamplePlan plan = plan_threshold_sample(s.length, options_.sample_ratio,
                                                    kMinSamplesPerKept * k, rng_);
      const torch::Tensor at =
          torch::arange(plan.count, torch::TensorOptions().dtype(torch::kLong).device(v.device()))
              .mul_(plan.stride)
              .add_(plan.start);
      to_positions(ks.index_select(0, at), sample_keys_);
      const std::uint32_t key = sample_threshold_key(sample_keys_, k, s.length);
      VelocityScan scan;
      scan.rescan = [&](std::uint32_t at_least, std::vector<std::uint32_t>& out) {
        to_positions(ks.ge(static_cast<std::int64_t>(at_least)).nonzero().view({-1}), out);
      };
      scan.gather = [&](const std::vector<std::uint32_t>& positions) {
        std::vector<std::int64_t> wide(positions.begin(), positions.end());
        const torch::Tensor index = torch::from_blob(wide.data(), {static_cast<std::int64_t>(wide.size())},
                                                     torch::kLong).to(v.device());
        const torch::Tensor picked = vs.index_select(0, index).to(torch::kCPU).contiguous();
        return std::vector<float>(picked.data_ptr<float>(), picked.data_ptr<float>() + picked.numel());
      };
      scan.rescan(key, candidates_);
      dgc_finish_rounds(scan, k, key, candidates_, base, indices_, st);
    }
    stats_.push_back(st);
    if (options_.momentum_masking && m != 0.0f) masked.insert(masked.end(), indices_.begin() + first, indices_.end());
  }

  // Send v at the chosen indices, rounded to the wire's format there; what the rounding drops
  // stays in v (exactly 0 for fp32), and momentum factor masking on sparsified tensors.
  const auto device_index = [&](const std::vector<std::uint32_t>& positions) {
    const std::vector<std::int64_t> wide(positions.begin(), positions.end());
    return torch::tensor(at::ArrayRef<std::int64_t>(wide), torch::kLong).to(v.device());
  };
  const torch::Tensor sent_at = device_index(indices_);
  torch::Tensor sent = v.index_select(0, sent_at);
  if (options_.values == ValueFormat::kFp16) sent = sent.to(torch::kHalf).to(torch::kFloat);
  v.index_put_({sent_at}, v.index_select(0, sent_at).sub(sent));
  if (!masked.empty()) u.index_fill_(0, device_index(masked), 0.0f);
  const torch::Tensor host_values = sent.to(torch::kCPU).contiguous();
  values_.assign(host_values.data_ptr<float>(), host_values.data_ptr<float>() + host_values.numel());
  set_last_density(n > 0 ? static_cast<double>(indices_.size()) / static_cast<double>(n) : 1.0);
  Bytes payload = encode_compact_sparse(static_cast<std::uint64_t>(n), indices_.data(), values_.data(),
                                        indices_.size(), options_.values);
  set_last_tensor_sends(sends_by_layer(layers_, n, indices_.data(), indices_.size(),
                                       static_cast<double>(payload.size() - kPayloadHeaderSize)));
  return payload;
}

torch::Tensor DgcCodec::decode(ByteSpan payload) const {
  return decode_compact_sparse(payload, max_elements_, "dgc payload");
}

torch::Tensor DgcCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  const SparseEntries e = decode_compact_entries(payload, max_elements_, "dgc payload");
  return scatter_to(e.n, std::vector<std::int64_t>(e.indices.begin(), e.indices.end()), e.values, device);
}

Bytes DgcCodec::save_state() const {
  CodecState st("dgc");
  st.put_u64("step", static_cast<std::uint64_t>(step_));
  st.put_u64("rng", rng_.state());
  st.put_tensor("u", u_->defined() ? u_->to(torch::kCPU) : *u_);
  st.put_tensor("v", v_->defined() ? v_->to(torch::kCPU) : *v_);
  return st.serialize();
}

void DgcCodec::load_state(ByteSpan state) {
  if (state.size == 0) return;
  const CodecState st = CodecState::parse(state, "dgc");
  torch::Tensor u = st.tensor("u");
  torch::Tensor v = st.tensor("v");
  if (u.defined() != v.defined() || (u.defined() && u.numel() != v.numel())) {
    throw DecodeError("dgc state: momentum and velocity buffers disagree");
  }
  step_ = st.counter("step");
  rng_ = SplitMix64(st.u64("rng", rng_.state()));
  *u_ = std::move(u);
  *v_ = std::move(v);
}

CodecWork DgcCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  // The encode that just ran used the density of the step before the counter moved on.
  const double density = density_at(std::max<std::int64_t>(0, step_ - 1));
  if (op == CodecOp::kDecode) {
    return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, last_density() * n);
  }
  if (op != CodecOp::kEncode) return Codec::work(op, numel, payload_bytes);
  CodecWork w = CodecWork::memory(20 * n + bytes) + CodecWork::compute(4 * n);
  if (options_.clip_norm > 0.0) w += CodecWork::memory(4 * n) + CodecWork::compute(2 * n);  // the norms
  const auto sparse_tensor = [&](double length) {
    const double sample = std::min(length, std::ceil(options_.sample_ratio * length));
    w += CodecWork::gather(length, sample);
    w += CodecWork::compute(sample * (4 + kFlopsPerRandomNumber));
    w += CodecWork::selection(sample, std::max(1.0, density * sample));
    w += CodecWork::gather(length, density * length);  // values and masking at the sent entries
  };
  if (layers_.empty()) {
    sparse_tensor(n);
  } else {
    for (const LayerSlice& layer : layers_) {
      if (options_.dense_1d && layer.shape.size() < 2) continue;
      sparse_tensor(static_cast<double>(layer.numel()));
    }
  }
  return w;
}

}  // namespace gradwire
