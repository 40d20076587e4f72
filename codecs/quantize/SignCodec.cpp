#include "codecs/quantize/SignCodec.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/quantize/QuantizerSupport.h"
#include "codecs/quantize/QuantizerTensorOps.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
// m = beta m + alpha g (vectorises).
GRADWIRE_VECTOR_KERNEL void momentum_update(float* m, const float* g, std::uint64_t n, float beta,
                                            float alpha) {
  for (std::uint64_t i = 0; i < n; ++i) m[i] = beta * m[i] + alpha * g[i];
}
CodecTraits sign_traits(double momentum) {
  CodecTraits t;
  t.name = momentum > 0 ? "signum" : "signsgd";
  t.encodes_on_device = true;
  t.applies_momentum = true;
  return t;
}

}  // namespace

SignCodec::SignCodec(double momentum)
    : Codec(sign_traits(momentum)),
      momentum_(momentum), m_(std::make_unique<torch::Tensor>()) {
  if (!(momentum >= 0.0 && momentum < 1.0)) {
    throw std::invalid_argument("signum: momentum must be in [0, 1), got " + std::to_string(momentum));
  }
}

SignCodec::~SignCodec() = default;

Bytes SignCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " encode", /*on_device=*/true);
  const auto n = static_cast<std::uint64_t>(grad.numel());
  ByteWriter writer(payload_size(n));
  write_header(writer, CodecId::kSign, kFormatVersion, n);
  std::uint8_t* signs = writer.extend((n + 7) / 8);
  if (!grad.device().is_cpu()) {
    const torch::Tensor packed = signs_with_tensor_ops(grad);
    if (n != 0) std::memcpy(signs, packed.data_ptr<std::uint8_t>(), (n + 7) / 8);
    return writer.take();
  }
  if (momentum_ == 0) {
    quant::pack_signs_parallel(grad.data_ptr<float>(), n, signs);
    return writer.take();
  }
  torch::Tensor& m = *m_;
  ensure_state(m, grad, "signum");
  // m = beta m + (1 - beta) g and its sign bits in one pass, in chunks that stay in L1.
  const float beta = static_cast<float>(momentum_);
  const float alpha = static_cast<float>(1.0 - momentum_);
  const float* g = grad.data_ptr<float>();
  float* mv = m.data_ptr<float>();
  quant::parallel_ranges(n, 64, n, [&](std::uint64_t begin, std::uint64_t end) {
    constexpr std::uint64_t kChunk = 4096;
    for (std::uint64_t c = begin; c < end; c += kChunk) {
      const std::uint64_t len = std::min(kChunk, end - c);
      momentum_update(mv + c, g + c, len, beta, alpha);
      bits::pack_signs(mv + c, len, signs + c / 8);
    }
  });
  return writer.take();
}

torch::Tensor SignCodec::signs_with_tensor_ops(const torch::Tensor& grad) {
  torch::Tensor values = grad;
  if (momentum_ != 0) {
    torch::Tensor& m = *m_;
    ensure_state(m, grad, "signum");
    // beta m + (1 - beta) g as the host computes it: each product rounded, then their sum
    // (three operations, so that no fused multiply-add rounds once where the host rounds twice).
    m = m.mul(static_cast<float>(momentum_)).add_(grad.mul(static_cast<float>(1.0 - momentum_)));
    values = m;
  }
  return quant::pack_signs_with_tensor_ops(values);
}

const std::uint8_t* SignCodec::read_signs(ByteSpan payload, std::uint64_t& n) {
  ByteReader reader(payload, "sign payload");
  n = read_header(reader, CodecId::kSign, "signsgd", kFormatVersion).numel;
  const std::uint8_t* signs = reader.take((n + 7) / 8, 1, "sign bits");
  reader.expect_end();
  if (!bits::padding_is_zero(signs, n, 1)) reader.fail("non-zero padding bits after the last sign");
  return signs;
}

torch::Tensor SignCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  std::uint64_t n = 0;
  const std::uint8_t* signs = read_signs(payload, n);
  return quant::expand_signs_with_tensor_ops(signs, n, {static_cast<std::int64_t>(n)}, {1.0f}, {-1.0f}, device);
}

torch::Tensor SignCodec::decode(ByteSpan payload) const {
  std::uint64_t n = 0;
  const std::uint8_t* signs = read_signs(payload, n);
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  quant::expand_signs(signs, 0, n, 1.0f, -1.0f, dst);
  return out;
}

Bytes SignCodec::save_state() const {
  if (momentum_ == 0) return {};
  CodecState st(name());
  st.put_tensor("momentum", m_->defined() ? m_->to(torch::kCPU) : *m_);
  return st.serialize();
}

void SignCodec::load_state(ByteSpan state) {
  if (state.size == 0) {
    *m_ = torch::Tensor();
    return;
  }
  if (momentum_ == 0) throw DecodeError("codec 'signsgd' keeps no state to load");
  *m_ = CodecState::parse(state, name()).tensor("momentum");
}

torch::Tensor SignCodec::finalize(torch::Tensor sum, int /*workers*/) const { return sum.sign_(); }

CodecWork SignCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode:
      return momentum_ == 0 ? CodecWork::memory(4 * n + bytes) + CodecWork::compute(n)
                            : CodecWork::memory(12 * n + bytes) + CodecWork::compute(4 * n);
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::compute(n);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
