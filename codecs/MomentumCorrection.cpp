#include "codecs/MomentumCorrection.h"

#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"

namespace gradwire {

void momentum_accumulate(float* u, float* v, const float* g, std::int64_t n, float momentum,
                         bool nesterov, float g_scale) {
  if (momentum == 0.0f) {
    for (std::int64_t i = 0; i < n; ++i) v[i] += g_scale * g[i];
  } else if (nesterov) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float gi = g_scale * g[i];
      const float ui = (u[i] + gi) * momentum;
      u[i] = ui;
      v[i] += ui + gi;
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) {
      const float ui = momentum * u[i] + g_scale * g[i];
      u[i] = ui;
      v[i] += ui;
    }
  }
}

MomentumCorrection::MomentumCorrection(std::unique_ptr<Codec> inner, double momentum,
                                       bool nesterov, bool masking)
    : inner_(std::move(inner)),
      momentum_(momentum),
      nesterov_(nesterov),
      masking_(masking),
      u_(std::make_unique<torch::Tensor>()),
      v_(std::make_unique<torch::Tensor>()) {
  if (!inner_) throw std::invalid_argument("MomentumCorrection: inner codec is null");
  if (!(momentum >= 0.0 && momentum < 1.0)) {
    throw std::invalid_argument("MomentumCorrection: momentum must be in [0, 1)");
  }
}

MomentumCorrection::~MomentumCorrection() = default;

const torch::Tensor& MomentumCorrection::momentum_buffer() const { return *u_; }
const torch::Tensor& MomentumCorrection::velocity() const { return *v_; }

Bytes MomentumCorrection::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " (momentum correction) encode");
  const std::int64_t n = grad.numel();
  ensure_state(*u_, n, "momentum correction");
  ensure_state(*v_, n, "momentum correction");
  float* u = u_->data_ptr<float>();
  float* v = v_->data_ptr<float>();
  momentum_accumulate(u, v, grad.data_ptr<float>(), n, static_cast<float>(momentum_), nesterov_);
  Bytes payload = inner_->encode(*v_);
  const torch::Tensor sent = inner_->decode(payload);
  const float* s = sent.data_ptr<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    v[i] -= s[i];
    if (masking_ && s[i] != 0.0f) u[i] = 0.0f;
  }
  return payload;
}

torch::Tensor MomentumCorrection::decode(ByteSpan payload) const { return inner_->decode(payload); }

torch::Tensor MomentumCorrection::finalize(torch::Tensor sum, int workers) const {
  return inner_->finalize(std::move(sum), workers);
}

Bytes MomentumCorrection::save_state() const {
  CodecState st("momentum_correction/" + inner_->name());
  st.put_tensor("u", *u_);
  st.put_tensor("v", *v_);
  st.put_bytes("inner", inner_->save_state());
  return st.serialize();
}

void MomentumCorrection::load_state(ByteSpan state) {
  if (state.size == 0) {
    *u_ = torch::Tensor();
    *v_ = torch::Tensor();
    inner_->load_state(ByteSpan());
    return;
  }
  const CodecState st = CodecState::parse(state, "momentum_correction/" + inner_->name());
  torch::Tensor u = st.tensor("u");
  torch::Tensor v = st.tensor("v");
  if (u.defined() != v.defined() || (u.defined() && u.numel() != v.numel())) {
    throw DecodeError("codec state: momentum and velocity buffers disagree");
  }
  const Bytes inner = st.bytes("inner");
  inner_->load_state(ByteSpan(inner));
  *u_ = std::move(u);
  *v_ = std::move(v);
}

}  // namespace gradwire
