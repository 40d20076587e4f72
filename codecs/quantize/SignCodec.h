// `signsgd` and `signum`: one sign bit per element, aggregated by majority vote
// (Bernstein et al., "signSGD: Compressed Optimisation for Non-Convex Problems", ICML 2018,
// and "signSGD with Majority Vote is Communication Efficient and Fault Tolerant", ICLR 2019).
//
//  * signsgd sends sign(g).
//  * signum sends sign(m) with the worker's own momentum m = beta m + (1 - beta) g
//    (Algorithm 1 of the ICLR 2019 paper; beta = 0.9 is their default). m starts at 0, as
//    that Algorithm 1 states ("initial momentum v_m <- 0") and its authors' code does
//    (jiaweizzhao/signSGD-with-Majority-Vote: a zeros buffer). The ICML 2018 paper's Signum
//    box takes the current momentum m_k as input without stating m_0; its Theorem 3 adds a
//    warm-up "to let the bias in the momentum settle down" (sign(g) for the first C(beta)
//    steps, 54 at 0.9), an analysis device not applied here. So step 1 votes on
//    sign((1 - beta) g_1) = sign(g_1) and step 2 on sign(beta (1 - beta) g_1 + (1 - beta) g_2);
//    a buffer started at g_1 (PyTorch SGD's convention) votes on sign(beta g_1 + (1 - beta) g_2)
//    instead, and the two drift together only as beta^t fades.
// The aggregate is sign(sum of the workers' signs) -- finalize() -- and the optimizer applies
// lr * vote with no momentum of its own (traits().applies_momentum is true for both: signSGD has none,
// Signum keeps it in the codec). Sign-based updates move every weight by lr each step, so use a
// far smaller learning rate than for SGD (the papers use ~1e-4 to 1e-3 scale rates).
//
// Wire format: header + ceil(n / 8) bytes, bit i = 1 when g_i's sign bit is clear (so +0.0
// is sent as +1 and -0.0 as -1).
// Decoded values are +-1. Aggregation: decode-then-sum (the vote needs the sum of signs).
// On a GPU the bits are the host's, except for a NaN momentum: the sign of a NaN that comes
// out of arithmetic is the processor's (x86 keeps the operand's, CUDA's is positive).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codecs/Codec.h"

namespace gradwire {

class SignCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;
  static constexpr double kDefaultMomentum = 0.9;

  /// `momentum` 0: signSGD; in (0, 1): Signum with that beta.
  explicit SignCodec(double momentum = 0.0);
  ~SignCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// The packed sign bits of encode()'s payload (and, for signum, the momentum update),
  /// computed with tensor operations wherever grad lives; returned on the host.
  at::Tensor signs_with_tensor_ops(const at::Tensor& grad);
  /// The +-1 values expanded on `device` from the payload's sign bits.
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Encode: signsgd packs signs in one pass (4n bytes, 1 operation each); signum also
  /// updates its momentum in the same pass (read g and m, write m: 12n bytes, 4 operations).
  /// Decode: +-1 per bit. Finalize (the vote): the default pass.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// Majority vote: sign(sum). Ties (an even number of workers split evenly) give 0.
  at::Tensor finalize(at::Tensor sum, int workers) const override;
  /// State: Signum's momentum (signSGD keeps none).
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  static std::size_t payload_size(std::uint64_t n) { return 12 + (n + 7) / 8; }

 private:
  /// Checks a payload and returns its element count and sign bits.
  static const std::uint8_t* read_signs(ByteSpan payload, std::uint64_t& n);

  double momentum_;
  std::unique_ptr<at::Tensor> m_;  // Signum's momentum (undefined before the first call: 0)
};

}  // namespace gradwire
