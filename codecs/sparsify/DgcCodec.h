// `dgc`: Deep Gradient Compression (Lin, Han, Mao, Wang, Dally, ICLR 2018,
// arXiv:1712.01887), all four techniques, each switchable:
//  * momentum correction: u = m u + g; v = v + u (Nesterov: u = (u + g) m; v = v + u + g), and
//    v, not g, is sparsified; the engine then runs SGD without momentum (traits().applies_momentum);
//  * local gradient clipping, per parameter tensor: before a tensor's g is accumulated, it is
//    rescaled to norm clip_norm * N^-1/2 when ||g||_2 exceeds that (N workers: each node's
//    share of the global threshold if all had the same gradient distribution; paper section
//    3.2). Per tensor as the reference code clips (once per named parameter), also when one
//    bucket holds several tensors: the bucket's codec sees its slice of CodecContext::layers.
//    Without a layout (tools), or with one that does not tile the input, the whole encode
//    input is one tensor and is clipped as one. Biases and normalisation parameters are
//    clipped alike. A tensor with an inf or NaN is left as it is (its norm is not finite).
//    clip_norm 0 turns it off. The default 5 is gradwire's choice: the paper names no
//    threshold and the reference code ships with clipping off; at 4 workers (limit 2.5) it
//    rescales 2-7% of the tensor gradients of the zoo's LeNet and ResNet-20 (their spikes, up
//    to ~9; medians 0.03-2.4), so it guards against explosions rather than rescaling every
//    step; the limit tightens with N as the paper's does (codecs/README.md has the numbers);
//  * momentum factor masking: wherever v is sent, u and v are zeroed (section 3.3);
//  * warm-up training: density 25% -> 6.25% -> 1.5625% -> 0.4% over the first four epochs,
//    then `density` (0.1%), the paper's exponential schedule (section 3.3 and 5);
//    the stage length is one epoch (CodecContext::steps_per_epoch) unless
//    warmup_stage_steps says otherwise.
// Per parameter tensor, the threshold is estimated from a sample with the exact top-k fallback
// (ThresholdSampling.h). Speed: encode makes one pass over g, u, v per tensor (read g, u, v;
// write u, v): the sample is taken first from the *updated* v at the sampled positions only
// (momentum_preview), then the momentum update and the |v| >= threshold scan run fused
// (momentum_accumulate_collect), split over the intra-op threads for tensors of millions of
// elements; only the rare retry rounds rescan v, and scratch buffers live in the codec. The
// result is bit for bit that of the unfused two-pass algorithm (tested). Biases and normalisation parameters (tensors with one dimension) travel
// dense: for them v = u is sent every step and u is not masked, i.e. plain momentum SGD.
//
// Wire: the compact sparse format (CodecId::kCompactSparse, SparseWire.h), fp32 or fp16
// values. Not summable. Without CodecContext::layers the whole gradient is one tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/sparsify/LayerPlan.h"
#include "codecs/sparsify/SparseRandom.h"
#include "codecs/sparsify/ThresholdSampling.h"
#include "codecs/wire/SparseWire.h"

namespace gradwire {

struct DgcOptions {
  double density = 0.001;  ///< steady-state fraction kept per tensor (paper: 99.9% sparsity)
  bool momentum_correction = true;
  double momentum = 0.9;   ///< the training momentum, moved into the codec
  bool nesterov = false;
  bool momentum_masking = true;
  double clip_norm = 5.0;  ///< global clipping threshold, per tensor x N^-1/2 (0: off); ours
  bool warmup = true;
  std::vector<double> warmup_densities{0.25, 0.0625, 0.015625, 0.004};
  std::int64_t warmup_stage_steps = 0;  ///< 0: one epoch per stage (CodecContext)
  double sample_ratio = 0.01;  ///< fraction sampled for the threshold (reference code: 1%)
  bool dense_1d = true;        ///< biases / norm parameters dense
  ValueFormat values = ValueFormat::kFp32;
};

/// Parses "0.25,0.0625" into densities in (0, 1]; std::invalid_argument otherwise.
std::vector<double> parse_density_list(const std::string& text);

class DgcCodec : public Codec {
 public:
  DgcCodec(DgcOptions options, const CodecContext& ctx);
  ~DgcCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// The sent entries copied to `device` and scattered into zeros there.
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// encode() with tensor operations wherever grad lives, its u and v kept there (encode()
  /// uses it for a gradient on an accelerator): the same momentum arithmetic, sample, rounds
  /// and fallback, so the same payload and buffers bit for bit; only the sampled magnitudes,
  /// the candidates' positions and the sent values cross to the host. With clip_norm > 0 each
  /// tensor's norm is a double sum in LibTorch's order, so a clipping factor (and with it
  /// everything after) may differ from the host's in its last bits.
  Bytes encode_with_tensor_ops(const at::Tensor& grad);
  /// Encode: with clipping on, one read of g for the tensors' norms (4 bytes, 2 operations per
  /// element); per sparsified tensor of n_l: the fused momentum + selection pass (read g, u, v;
  /// write u, v: 20 bytes and 4 operations per element), a sample of sample_ratio n_l values
  /// gathered and previewed, the sample's top density share selected for the threshold, then
  /// the payload. Dense 1-D tensors take the momentum pass only. Decode: zero fill + scatter.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  /// The target density of the sparsified tensors at encode call `step` (0-based).
  double density_at(std::int64_t step) const;
  std::int64_t steps() const { return step_; }
  const DgcOptions& options() const { return options_; }
  const at::Tensor& momentum_buffer() const;  ///< u
  const at::Tensor& velocity() const;         ///< v (what is accumulated, not yet sent)
  /// Indices sent by the last encode (ascending), and the selection stats per sparse tensor.
  const std::vector<std::uint32_t>& last_indices() const { return indices_; }
  const std::vector<DgcSelectStats>& last_stats() const { return stats_; }

 private:
  /// Local clipping's factor for one tensor of gradient norm `norm` (1: not clipped).
  float clip_scale_for(double norm) const;
  float clip_scale(const float* g, std::int64_t n) const;

  DgcOptions options_;
  std::vector<LayerSlice> layers_;
  int workers_;
  std::int64_t stage_steps_;
  std::uint64_t max_elements_;
  SplitMix64 rng_;
  std::int64_t step_ = 0;
  std::unique_ptr<at::Tensor> u_;
  std::unique_ptr<at::Tensor> v_;
  std::vector<std::uint32_t> indices_;
  std::vector<float> values_;
  std::vector<DgcSelectStats> stats_;
  std::vector<std::uint32_t> sample_keys_;  ///< scratch, kept so encode does not allocate
  std::vector<std::uint32_t> candidates_;   ///< scratch: entries over the threshold
  std::vector<std::vector<std::uint32_t>> piece_candidates_;  ///< per parallel piece
};

}  // namespace gradwire
