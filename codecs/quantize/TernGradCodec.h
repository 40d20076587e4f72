// `terngrad`: ternary gradients (Wen et al., "TernGrad: Ternary Gradients to Reduce
// Communication in Distributed Deep Learning", NeurIPS 2017).
//
// Per segment (a model layer: "layer-wise ternarizing", Sec. 3.2): clip every element to
// [-c sigma, c sigma] with sigma the segment's standard deviation (c = 2.5, the paper's
// gradient clipping, Sec. 3.3), take the scaler s = max |clipped|, and send
//   s * sign(g_i) * b_i,   b_i ~ Bernoulli(|g_i| / s)
// as a 2-bit code per element plus s. Unbiased for the clipped gradient: E = clip(g).
//
// Scaler sharing (Sec. 3.1: all workers use s = max over workers) makes payloads summable:
// with equal scales, the sum of payloads is s times the sum of the integer codes. Two forms:
//  * agreed (TernGradMaxScaleCodec, `"scaler_sharing": true` without `shared_scale`): the
//    paper's. A multi-round exchange (MultiRoundCodec.h): round 0 is a kReduce of every
//    worker's per-layer scales max|clip(g)| (a small "scale proposal" payload, m = 0); the
//    reduction is their elementwise maximum. Round 1 is a kReduce of the ternary codes, each
//    worker clipping at its own c sigma and scaling by the agreed maximum (so every
//    probability |clip(g)| / s <= 1 and the codes stay unbiased); the reduction adds the
//    payloads in the compressed domain (accumulate) and decodes the sum once.
//  * configured (`shared_scale` S > 0): every worker clips to [-S, S] and uses S itself as the
//    scaler, for one segment per payload; single-round and summable (ring chunks add hop by
//    hop). With S at or above every |g_i| this is TernGrad with a (loose) shared scaler;
//    elements beyond S are clipped (biased, like TernGrad's own clipping).
// `accumulate` adds codes into a widened format (2, 4, 8 or 16 bits per element as the
// contributor count grows) and refuses payloads whose segment tables or scales differ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/quantize/QuantizerSupport.h"

namespace gradwire {

class TernGradCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;
  /// Widest code is 16-bit two's complement: at most 32767 contributors in one sum.
  static constexpr std::uint32_t kMaxContributors = 32767;
  /// The paper's clipping factor c (Sec. 3.3, "c = 2.5 works well").
  static constexpr double kDefaultClip = 2.5;

  /// `clip` c > 0 clips at c standard deviations (0: no clipping). `shared_scale` > 0
  /// switches on scaler sharing with that fixed scale; 0 keeps per-layer local scales.
  TernGradCodec(double clip, double shared_scale, const CodecContext& ctx);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// Encode: a moments pass per segment (4n bytes; sum, sum of squares, max: 3 operations),
  /// then the ternarising pass (4n bytes; clip, a random number and 4 operations per element),
  /// the payload written. Decode: 1 operation per element. Accumulate: codes unpacked, added
  /// and repacked (2 operations per element).
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// State: the position of the dither stream (so `gradwire codec --state` keeps drawing
  /// fresh roundings across calls).
  Bytes save_state() const override { return dither_.save(name()); }
  void load_state(ByteSpan state) override { dither_.load(state, name(), initial_dither_); }
  /// Sums the integer codes of two payloads with identical segment tables and scales.
  void accumulate(Bytes& acc, ByteSpan other) const override;

  /// Max-scale agreement (TernGradMaxScaleCodec), local-scale mode only. Round 0: this
  /// worker's per-layer scales max|clip(g)| as a scale proposal payload (contributors 0, no
  /// codes); remembers the clipping bounds for encode_with_scales.
  Bytes propose_scales(const at::Tensor& grad);
  /// Round 1: the ternary codes of the gradient given to propose_scales (the same tensor),
  /// clipped as there, with the `agreed` scale per segment (each >= this worker's own, else
  /// std::logic_error).
  Bytes encode_with_scales(const at::Tensor& grad, const std::vector<float>& agreed);
  /// The elementwise maximum of the proposals' scales (NaN if any is NaN); DecodeError on a
  /// malformed proposal or segment tables that differ.
  static std::vector<float> max_proposed_scales(const std::vector<ByteSpan>& proposals);
  /// Exact size of a scale proposal with `segments` segments.
  static std::size_t proposal_size(std::uint64_t segments);

  /// Code width for a sum of `contributors` ternary codes: 2, 4, 8 or 16 bits.
  static unsigned width_for_contributors(std::uint32_t contributors);
  /// Exact size of a payload of n elements in `segments` segments summing `contributors`.
  static std::size_t payload_size(std::uint64_t n, std::uint64_t segments, std::uint32_t contributors);

 private:
  /// Per segment: length, scale s and clipping bound.
  struct Plan {
    std::vector<std::uint64_t> lengths;
    std::vector<float> scales, bounds;
  };
  Plan plan(const float* x, std::uint64_t n) const;
  /// One contributor's payload: codes with the plan's scales (draws one dither key).
  Bytes write_codes(const float* x, std::uint64_t n, const Plan& plan);

  Plan pending_;  ///< propose_scales' plan, for encode_with_scales
  std::uint64_t pending_numel_ = ~std::uint64_t{0};
  double clip_;
  double shared_scale_;
  std::vector<LayerSlice> layers_;
  quant::Dither dither_;
  std::uint64_t initial_dither_ = 0;
};

}  // namespace gradwire
