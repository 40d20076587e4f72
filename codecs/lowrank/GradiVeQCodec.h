// GradiVeQ (Yu, Wu, Li, Mohammadi Amiri, Li, Avestimehr, "GradiVeQ: Vector Quantization for
// Bandwidth-Efficient Gradient Aggregation in Distributed CNN Training", NeurIPS 2018).
//
// The flat gradient is cut into slices of `slice` (d) consecutive elements (the last one
// zero-padded). A slice g is sent as its K coefficients c = U^T g in a basis U (d x K) of the
// top-K principal directions of gradient slices, and decoded as U c. Because the code is
// linear, the sum of codes is the code of the sum: ring all-reduce adds coefficient vectors
// hop by hop (Aggregation::kSummable) and decodes once, which is the paper's point.
//
// The basis is fitted on *aggregated* gradients of uncompressed steps (observe_aggregate), so
// every worker fits the same U and the basis costs no traffic. Schedule (a step counts once
// the aggregate is known): `warmup_steps` uncompressed steps, then `refit_every` compressed
// steps alternating with `refit_steps` uncompressed ones after which U is refitted (the paper
// alternates uncompressed and compressed periods; refit_every 0 keeps the first basis).
// The second moment of the slices is accumulated, not the centred covariance: the code must
// stay linear (no mean offset) for the sums to be exact.
//
// Optional QSGD on the coefficients (`qsgd_levels` > 0) shrinks them further; the payloads are
// then no longer summable and the ring falls back to all-gather.
//
// Payload (codecs/README.md): header | u8 mode (0 dense, 1 coefficients, 2 QSGD coefficients)
// | u32 first slice | u32 slice count | u32 d | u32 K | mode 0: the slices' elements (float32,
// truncated at the gradient's end); mode 1: count*K float32; mode 2: a nested qsgd payload
// of count*K elements. Chunks for the ring cover whole slices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"

namespace gradwire {

class GradiVeQCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;

  struct Options {
    std::int64_t slice = 64;         ///< d: elements per slice
    std::int64_t components = 8;     ///< K: principal directions kept (compression d / K)
    std::int64_t warmup_steps = 50;  ///< uncompressed steps before the first fit
    std::int64_t refit_every = 500;  ///< compressed steps between refits (0: never refit)
    std::int64_t refit_steps = 10;   ///< uncompressed steps collected for each refit
    std::uint32_t qsgd_levels = 0;   ///< QSGD on the coefficients (0: off, summable)
    std::uint64_t seed = 1;
    int rank = 0;
  };

  explicit GradiVeQCodec(Options options);
  ~GradiVeQCodec() override;

  std::string name() const override { return "gradiveq"; }
  Bytes encode(const torch::Tensor& grad) override;
  torch::Tensor decode(ByteSpan payload) const override;
  /// Compressing steps: encode pads to whole slices (12n bytes) and projects onto the basis
  /// (S x d)(d x K): 2 n K operations; decode multiplies back, as many. Uncompressed steps copy.
  /// Accumulate adds coefficients. Observe: on collecting steps the second moment x^T x
  /// (2 n d operations); on the step that fits, a symmetric eigendecomposition (9 d^3,
  /// Golub & Van Loan's count for symmetric QR with eigenvectors).
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  Aggregation aggregation() const override {
    return options_.qsgd_levels == 0 ? Aggregation::kSummable : Aggregation::kDecodeThenSum;
  }
  void accumulate(Bytes& acc, ByteSpan other) const override;
  std::vector<Bytes> encode_chunks(const torch::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  double last_density() const override { return last_density_; }
  void observe_aggregate(const torch::Tensor& update) override;

  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  /// True when the next encode sends coefficients (a basis is fitted and the schedule says so).
  bool compressing() const;
  /// Installs a basis (d x K, orthonormal columns) directly: tests and tools.
  void set_basis(const torch::Tensor& basis);
  /// Steps observed so far.
  std::int64_t steps() const { return step_; }

 private:
  bool compressed_step(std::int64_t step) const;
  Bytes encode_range(const torch::Tensor& grad, std::int64_t first, std::int64_t count,
                     const torch::Tensor* coefficients);
  void fit();

  Options options_;
  std::unique_ptr<Codec> coefficient_codec_;  // QSGD on the coefficients, when asked
  std::int64_t step_ = 0;
  double last_density_ = 1.0;
  std::unique_ptr<torch::Tensor> basis_;   // U, d x K float32 (undefined: not fitted yet)
  std::unique_ptr<torch::Tensor> moment_;  // sum of g g^T over collected slices, d x d double
};

}  // namespace gradwire
