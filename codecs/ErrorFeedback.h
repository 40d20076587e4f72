// Error feedback (a.k.a. residual accumulation, memory): a decorator that makes any lossy codec
// eventually send everything it dropped. GRACE's compensate -> compress -> update pipeline
// (grace_dl/torch/memory/residual.py); Karimireddy et al. 2019 show biased compressors such as
// top-k and sign converge with it.
//
// Per call, with e the residual of this worker (zeros before the first call):
//   acc     = grad + e
//   payload = inner.encode(acc)
//   e       = acc - inner.decode(payload)
// so at every step  sum(decoded outputs) + e == sum(inputs)  (up to float rounding).
//
// The residual is per worker and per gradient: one object serves one worker's flat gradient
// (always the same length; a different length throws std::invalid_argument).
#pragma once

#include <memory>
#include <string>

#include "codecs/Codec.h"

namespace gradwire {

class ErrorFeedback : public Codec {
 public:
  /// Takes ownership of `inner` (must not be null).
  explicit ErrorFeedback(std::unique_ptr<Codec> inner);
  ~ErrorFeedback() override;

  /// The inner codec's name: error feedback changes what is sent, not the wire format.
  std::string name() const override { return inner_->name(); }
  Bytes encode(const torch::Tensor& grad) override;
  torch::Tensor decode(ByteSpan payload) const override;
  torch::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Encode: the inner encode and the decode of its payload, plus the compensation pass
  /// (read e and g, write e: 12n bytes) and the residual update (e -= decoded: 12n bytes).
  /// Everything else: the inner codec's.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  Aggregation aggregation() const override { return inner_->aggregation(); }
  void accumulate(Bytes& acc, ByteSpan other) const override { inner_->accumulate(acc, other); }
  torch::Tensor finalize(torch::Tensor sum, int workers) const override;
  double last_density() const override { return inner_->last_density(); }
  bool applies_momentum() const override { return inner_->applies_momentum(); }
  /// The residual lives where the gradient does: on the accelerator when the inner codec
  /// encodes there.
  bool encodes_on_device() const override { return inner_->encodes_on_device(); }
  LossTolerance loss_tolerance() const override { return inner_->loss_tolerance(); }
  void observe_aggregate(const torch::Tensor& update) override { inner_->observe_aggregate(update); }
  /// Compensates the whole gradient once, encodes the chunks with the inner codec and updates
  /// the residual chunk by chunk, so the residual covers the whole gradient exactly as encode()
  /// would if the inner codec worked per chunk.
  std::vector<Bytes> encode_chunks(const torch::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;

  /// The residual and the inner codec's state (codecs/CodecState.h), for `gradwire codec`.
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  /// The current residual e; undefined (`!residual().defined()`) before the first encode.
  const torch::Tensor& residual() const;
  const Codec& inner() const { return *inner_; }

 private:
  /// e := e + grad in place (e = zeros on first use); returns e, which encode then turns into
  /// the new residual by subtracting what was sent.
  torch::Tensor compensate(const torch::Tensor& grad);

  std::unique_ptr<Codec> inner_;
  // Behind a pointer so this header needs only the forward declaration of at::Tensor.
  std::unique_ptr<torch::Tensor> residual_;
};

}  // namespace gradwire
