#include "codecs/SignCodec.h"

#include <stdexcept>

#include <torch/types.h>

#include "codecs/BitPacking.h"
#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/QuantizerSupport.h"
#include "codecs/WireFormat.h"

namespace gradwire {

SignCodec::SignCodec(double momentum)
    : momentum_(momentum), m_(std::make_unique<torch::Tensor>()) {
  if (!(momentum >= 0.0 && momentum < 1.0)) {
    throw std::invalid_argument("signum: momentum must be in [0, 1), got " + std::to_string(momentum));
  }
}

SignCodec::~SignCodec() = default;

Bytes SignCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  torch::Tensor source = grad;
  if (momentum_ > 0) {
    torch::Tensor& m = *m_;
    if (!m.defined()) {
      m = torch::zeros_like(grad);
    } else if (m.numel() != grad.numel()) {
      throw std::invalid_argument("signum: gradient has " + std::to_string(grad.numel()) +
                                  " elements but the momentum has " + std::to_string(m.numel()));
    }
    m.mul_(momentum_).add_(grad, 1.0 - momentum_);
    source = m;
  }
  ByteWriter writer(payload_size(n));
  write_header(writer, CodecId::kSign, kFormatVersion, n);
  bits::pack_signs(source.data_ptr<float>(), n, writer.extend((n + 7) / 8));
  return writer.take();
}

torch::Tensor SignCodec::decode(ByteSpan payload) const {
  ByteReader reader(payload, "sign payload");
  const std::uint64_t n = read_header(reader, CodecId::kSign, "signsgd", kFormatVersion).numel;
  const std::uint8_t* signs = reader.take((n + 7) / 8, 1, "sign bits");
  reader.expect_end();
  if (!bits::padding_is_zero(signs, n, 1)) reader.fail("non-zero padding bits after the last sign");
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  quant::expand_signs(signs, 0, n, 1.0f, -1.0f, dst);
  return out;
}

Bytes SignCodec::save_state() const {
  if (momentum_ == 0) return {};
  CodecState st(name());
  st.put_tensor("momentum", *m_);
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

}  // namespace gradwire
