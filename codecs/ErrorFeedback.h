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
  /// Takes ownership of `inner` (must not be null). Its traits are the inner codec's: error
  /// feedback changes what is sent, not the wire format; the residual lives where the gradient
  /// does (on the accelerator when the inner codec encodes there).
  explicit ErrorFeedback(std::unique_ptr<Codec> inner);
  ~ErrorFeedback() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Encode: the inner encode and the decode of its payload, plus the compensation pass
  /// (read e and g, write e: 12n bytes) and the residual update (e -= decoded: 12n bytes).
  /// Everything else: the inner codec's.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  void accumulate(Bytes& acc, ByteSpan other) const override { inner_->accumulate(acc, other); }
  at::Tensor finalize(at::Tensor sum, int workers) const override;
  void observe_aggregate(const at::Tensor& update) override { inner_->observe_aggregate(update); }
  /// Compensates the whole gradient once, encodes the chunks with the inner codec and updates
  /// the residual chunk by chunk, so the residual covers the whole gradient exactly as encode()
  /// would if the inner codec worked per chunk.
  std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;

  /// The residual and the inner codec's state (codecs/CodecState.h), for `gradwire codec`.
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  /// The current residual e; undefined (`!residual().defined()`) before the first encode.
  const at::Tensor& residual() const;
  const Codec& inner() const { return *inner_; }

 private:
  /// e := e + grad in place (e = zeros on first use); returns e, which encode then turns into
  /// the new residual by subtracting what was sent.
  at::Tensor compensate(const at::Tensor& grad);

  std::unique_ptr<Codec> inner_;
  // Behind a pointer so this header needs only the forward declaration of at::Tensor.
  std::unique_ptr<at::Tensor> residual_;
};

}  // namespace gradwire
