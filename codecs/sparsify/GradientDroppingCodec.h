// `gradient_dropping`: Gradient Dropping (Aji & Heafield, "Sparse Communication for
// Distributed Gradient Descent", EMNLP 2017, arXiv:1704.05021). Each worker adds its gradient
// to a residual, drops the `drop_ratio` (paper: 99%) smallest by magnitude and sends the rest;
// what was dropped stays in the residual. The threshold is estimated from a sample of the
// residual (paper: 0.1% of the elements, `sample_ratio`) rather than sorted exactly, so the kept
// count varies around (1 - drop_ratio) n. `scope`: "layer" (a threshold per parameter tensor,
// the paper's local variant) or "global" (one threshold; the paper pairs it with layer
// normalisation).
//
// Counts (sample_count, kept_count): a tensor of n keeps keep = ceil((1 - drop_ratio) n) and
// samples ceil(sample_ratio n) elements (both through count_from_ratio, codecs/RatioCounts.h),
// but at least floor(n / keep) (our addition): the threshold is the sample's
// ceil(m keep / n)-th largest, and a sample of m < n / keep elements can only offer its maximum,
// which keeps about n / (m + 1) > keep elements on average; with floor(n / keep) one sampled
// element is expected at or above the threshold. At the defaults that is at most 100 samples,
// so the 0.1% sample decides for tensors of about 100,000 elements and more, and a tensor of at
// most 1 / (1 - drop_ratio) elements is sampled whole (its threshold is exact).
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
  double sample_ratio = 0.001;  ///< paper: threshold from a 0.1% sample (see sample_count)
  bool global = false;          ///< scope "global" (one threshold) vs "layer"
  ValueFormat values = ValueFormat::kFp32;
};

class GradientDroppingCodec : public Codec {
 public:
  GradientDroppingCodec(GradientDroppingOptions options, const CodecContext& ctx);
  ~GradientDroppingCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// Encode: residual += g (read 8n, write 4n), per tensor a sample of sample_count values
  /// gathered and the kept share of it selected for the threshold, a threshold scan of the
  /// residual (4n bytes, one compare each), the sent entries zeroed, the payload written.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;
  const at::Tensor& residual() const;

  /// Elements a tensor of n > 0 keeps: ceil((1 - drop_ratio) n) by count_from_ratio, in [1, n].
  static std::int64_t kept_count(std::int64_t n, double drop_ratio);
  /// Elements sampled for the threshold of a tensor of n > 0 that keeps `keep` (1 <= keep <= n):
  /// ceil(sample_ratio n) by count_from_ratio, at least floor(n / keep), at most n.
  static std::int64_t sample_count(std::int64_t n, std::int64_t keep, double sample_ratio);

 private:
  GradientDroppingOptions options_;
  std::vector<LayerSlice> layers_;
  std::uint64_t max_elements_;
  SplitMix64 rng_;
  std::unique_ptr<at::Tensor> residual_;
};

}  // namespace gradwire
