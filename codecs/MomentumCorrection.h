// Momentum correction (Lin et al., "Deep Gradient Compression", ICLR 2018, section 3.2): with
// sparse updates, plain momentum SGD on the *sent* gradient loses the discounting between
// sends, so each worker accumulates the momentum-corrected velocity locally and compresses
// that instead:
//     u = m * u + g            v = v + u                 (Nesterov: u = (u + g) * m; v = v + u + g)
//     payload = inner.encode(v);  sent = inner.decode(payload);  v = v - sent
//     momentum factor masking: u[i] = 0 wherever something was sent
// (formulas as in synxlin/deep-gradient-compression dgc/memory.py). The optimizer must then
// run without momentum: the codec declares applies_momentum in its traits.
//
// The update, fused with each codec's own selection: DgcCodec (momentum correction) and
// SdagcCodec (momentum compensation) know the sent indices as they select them, so they mask
// without decoding their payload.
#pragma once

#include <cstdint>
#include <vector>

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

}  // namespace gradwire
