// Momentum correction (Lin et al., "Deep Gradient Compression", ICLR 2018, section 3.2): with
// sparse updates, plain momentum SGD on the *sent* gradient loses the discounting between
// sends, so each worker accumulates the momentum-corrected velocity locally and compresses
// that instead:
//     u = m * u + g            v = v + u                 (Nesterov: u = (u + g) * m; v = v + u + g)
//     payload = inner.encode(v);  sent = inner.decode(payload);  v = v - sent
//     momentum factor masking: u[i] = 0 wherever something was sent
// (formulas as in synxlin/deep-gradient-compression dgc/memory.py). The optimizer must then
// run without momentum: applies_momentum() is true.
//
// A decorator usable around any codec, like ErrorFeedback (with m = 0 and no masking it *is*
// error feedback). DgcCodec keeps the same arithmetic fused with its selection (it knows the
// sent indices without decoding); this wrapper finds them as the non-zeros of the decoded
// payload.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"

namespace gradwire {

/// The fused update of the two buffers for n elements: u, v updated in place from g (scaled by
/// `g_scale`, e.g. local clipping). With momentum == 0 this is v += g_scale * g.
void momentum_accumulate(float* u, float* v, const float* g, std::int64_t n, float momentum,
                         bool nesterov, float g_scale = 1.0f);

/// momentum_accumulate fused with DGC's selection scan: in the same single pass (one read of
/// g, u, v; one write of u, v) appends base + i to `out`, ascending, for every i whose updated
/// v[i] has magnitude_key >= key (ThresholdSampling.h). `out` keeps its earlier entries.
void momentum_accumulate_collect(float* u, float* v, const float* g, std::int64_t n,
                                 float momentum, bool nesterov, float g_scale, std::uint32_t key,
                                 std::uint32_t base, std::vector<std::uint32_t>& out);

/// Sums over the updated buffers of momentum_accumulate_moments, in double.
struct VelocityMoments {
  double sum = 0.0;        ///< sum of v
  double squares = 0.0;    ///< sum of v^2
  double u_squares = 0.0;  ///< sum of u^2 (when asked for)
};

/// momentum_accumulate fused with the moments of the updated v (and of the updated u when
/// `u_squares`), summed in double lanes (kMomentLanes, codecs/kernels/MomentKernels.h: the
/// same bits at every kernel level, not those of one element-order sum), and the largest magnitude_key of the updated v in each block of kScanBlock
/// elements (the last block may be shorter), written to block_max[0 .. ceil(n / kScanBlock)),
/// so that a scan for a threshold known only after the pass can skip the blocks below it
/// (collect_at_least_in_blocks). One pass: one read of g, u, v; one write of u, v.
VelocityMoments momentum_accumulate_moments(float* u, float* v, const float* g, std::int64_t n,
                                            float momentum, bool nesterov, float g_scale,
                                            bool u_squares, std::uint32_t* block_max);

/// The sum of x[i]^2 in double, in the lanes of momentum_accumulate_moments.
double sum_of_squares(const float* x, std::int64_t n);

/// The value v[i] will have after momentum_accumulate, without writing anything: the same
/// float operations in the same order (so the same bits), used to sample the updated velocity
/// before the fused pass. (A build that contracts a * b + c into FMA must do so alike in both;
/// tests/codecs/sparsifiers_test.cpp checks the fused encode against the two-pass one bit for bit.)
inline float momentum_preview(float u, float v, float g, float momentum, bool nesterov,
                              float g_scale) {
  if (momentum == 0.0f) return v + g_scale * g;
  if (nesterov) {
    const float gi = g_scale * g;
    const float ui = (u + gi) * momentum;
    return v + (ui + gi);
  }
  const float ui = momentum * u + g_scale * g;
  return v + ui;
}

class MomentumCorrection : public Codec {
 public:
  MomentumCorrection(std::unique_ptr<Codec> inner, double momentum, bool nesterov = false,
                     bool masking = true);
  ~MomentumCorrection() override;

  std::string name() const override { return inner_->name(); }
  Bytes encode(const torch::Tensor& grad) override;
  torch::Tensor decode(ByteSpan payload) const override;
  /// Encode: the momentum pass (read u, v, g; write u, v: 20n bytes, 3 operations), the
  /// inner encode and decode, then v -= sent with masking (read v, u, sent; write v, u: 20n).
  /// Everything else: the inner codec's.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  Aggregation aggregation() const override { return inner_->aggregation(); }
  void accumulate(Bytes& acc, ByteSpan other) const override { inner_->accumulate(acc, other); }
  torch::Tensor finalize(torch::Tensor sum, int workers) const override;
  double last_density() const override { return inner_->last_density(); }
  bool applies_momentum() const override { return momentum_ > 0.0; }
  LossTolerance loss_tolerance() const override { return inner_->loss_tolerance(); }
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  const torch::Tensor& momentum_buffer() const;  ///< u (undefined before the first encode)
  const torch::Tensor& velocity() const;         ///< v (undefined before the first encode)

 private:
  std::unique_ptr<Codec> inner_;
  double momentum_;
  bool nesterov_;
  bool masking_;
  std::unique_ptr<torch::Tensor> u_;
  std::unique_ptr<torch::Tensor> v_;
};

}  // namespace gradwire
