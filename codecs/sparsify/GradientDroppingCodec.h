// `gradient_dropping`: Gradient Dropping (Aji & Heafield, "Sparse Communication for
// Distributed Gradient Descent", EMNLP 2017, arXiv:1704.05021). Each worker adds its gradient
// to a residual, drops the `drop_ratio` (paper: 99%) smallest by magnitude and sends the rest;
// what was dropped stays in the residual. The threshold is estimated from a sample of the
// residual (paper: 0.1% of the elements) rather than sorted exactly, so the kept count varies
// around (1 - drop_ratio) n. `scope`: "layer" (a threshold per parameter tensor, the paper's
// local variant) or "global" (one threshold; the paper pairs it with layer normalisation).
// To keep a tiny tensor's sample from being a single element, at least 8 samples are taken per
// kept element (our addition, documented in codecs/README.md).
//
// Wire: compact sparse (CodecId::kCompactSparse). Not summable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/sparsify/SparseRandom.h"
#include "codecs/wire/SparseWire.h"

namespace gradwire {

struct GradientDroppingOptions {
  double drop_ratio = 0.99;     ///< paper: 99%
  double sample_ratio = 0.001;  ///< paper: threshold from a 0.1% sample
  bool global = false;          ///< scope "global" (one threshold) vs "layer"
  ValueFormat values = ValueFormat::kFp32;
};

class GradientDroppingCodec : public Codec {
 public:
  GradientDroppingCodec(GradientDroppingOptions options, const CodecContext& ctx);
  ~GradientDroppingCodec() override;

  std::string name() const override { return "gradient_dropping"; }
  Bytes encode(const torch::Tensor& grad) override;
  torch::Tensor decode(ByteSpan payload) const override;
  double last_density() const override { return last_density_; }
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;
  const torch::Tensor& residual() const;

 private:
  GradientDroppingOptions options_;
  std::vector<LayerSlice> layers_;
  std::uint64_t max_elements_;
  SplitMix64 rng_;
  double last_density_ = 1.0;
  std::unique_ptr<torch::Tensor> residual_;
};

}  // namespace gradwire
