#include "codecs/ErrorFeedback.h"

#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"

namespace gradwire {

namespace {
const Codec& non_null(const std::unique_ptr<Codec>& inner) {
  if (!inner) throw std::invalid_argument("ErrorFeedback: inner codec is null");
  return *inner;
}
}  // namespace

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> inner)
    : Codec(non_null(inner).traits(), non_null(inner)),
      inner_(std::move(inner)),
      residual_(std::make_unique<torch::Tensor>()) {}

// Defined here, where torch::Tensor is complete, for the unique_ptr's deleter.
ErrorFeedback::~ErrorFeedback() = default;

const torch::Tensor& ErrorFeedback::residual() const { return *residual_; }

torch::Tensor ErrorFeedback::decode(ByteSpan payload) const { return inner_->decode(payload); }

torch::Tensor ErrorFeedback::decode_to(ByteSpan payload, const c10::Device& device) const {
  return inner_->decode_to(payload, device);
}

torch::Tensor ErrorFeedback::compensate(const torch::Tensor& grad) {
  check_gradient(grad, name() + " (error feedback) encode", traits().encodes_on_device);
  torch::Tensor& e = *residual_;
  ensure_state(e, grad, "error feedback");
  // In place: the residual becomes the compensated gradient (no new gradient-sized tensor per
  // step; with 25M elements every allocation and extra pass shows), then loses what was sent.
  e.add_(grad);
  return e;
}

Bytes ErrorFeedback::encode(const torch::Tensor& grad) {
  torch::Tensor acc = compensate(grad);  // the residual itself
  Bytes payload = inner_->encode(acc);
  // What was not sent (exactly: acc - decode is 0 where top-k sent the value) waits for the
  // next step.
  acc.sub_(inner_->decode_to(payload, acc.device()));
  return payload;
}

std::vector<Bytes> ErrorFeedback::encode_chunks(const torch::Tensor& grad,
                                                const std::vector<std::int64_t>& bounds) {
  check_gradient(grad, name() + " (error feedback) encode_chunks", traits().encodes_on_device);
  check_chunk_bounds(grad.numel(), bounds);
  const torch::Tensor acc = compensate(grad);
  // The inner codec's own chunking (its encode per slice by default).
  std::vector<Bytes> payloads = inner_->encode_chunks(acc, bounds);
  torch::Tensor& e = *residual_;
  // Chunks are consecutive, but a codec may cut them elsewhere than `bounds` (GradiVeQ cuts
  // at whole slices): each chunk covers as many elements as it decodes to.
  std::int64_t begin = 0;
  for (const Bytes& payload : payloads) {
    const torch::Tensor decoded = inner_->decode_to(payload, e.device());
    const std::int64_t len = decoded.numel();
    if (begin + len > grad.numel()) {
      throw std::logic_error(name() + " encode_chunks: chunks cover more than the gradient");
    }
    // acc is e: its slice, a view, becomes the new residual in place, chunk by chunk.
    e.narrow(0, begin, len).sub_(decoded);
    begin += len;
  }
  if (begin != grad.numel()) {
    throw std::logic_error(name() + " encode_chunks: chunks do not cover the gradient");
  }
  return payloads;
}

Bytes ErrorFeedback::save_state() const {
  CodecState st("error_feedback/" + inner_->name());
  st.put_tensor("residual", residual_->defined() ? residual_->to(torch::kCPU) : *residual_);
  st.put_bytes("inner", inner_->save_state());
  return st.serialize();
}

void ErrorFeedback::load_state(ByteSpan state) {
  if (state.size == 0) {
    *residual_ = torch::Tensor();
    inner_->load_state(ByteSpan());
    return;
  }
  const CodecState st = CodecState::parse(state, "error_feedback/" + inner_->name());
  const Bytes inner = st.bytes("inner");
  inner_->load_state(ByteSpan(inner));
  *residual_ = st.tensor("residual");
}

torch::Tensor ErrorFeedback::finalize(torch::Tensor sum, int workers) const {
  return inner_->finalize(std::move(sum), workers);
}

CodecWork ErrorFeedback::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  if (op != CodecOp::kEncode) return inner_->work(op, numel, payload_bytes);
  const double n = static_cast<double>(numel);
  return inner_->work(CodecOp::kEncode, numel, payload_bytes) +
         inner_->work(CodecOp::kDecode, numel, payload_bytes) +
         CodecWork::memory(24 * n) + CodecWork::compute(2 * n);
}

}  // namespace gradwire
