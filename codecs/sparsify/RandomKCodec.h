// `randomk`: random-k sparsification with shared randomness. The k = max(1, round(ratio * n))
// positions are a uniformly random k-subset of [0, n) drawn from a seed that every worker
// derives identically from (scenario seed, step, chunk offset, chunk length), so for the same
// step and slice all workers pick the same positions, only the values travel, and payloads add
// in the compressed domain (Aggregation::kSummable): ring all-reduce reduces them hop by hop.
// The subset is drawn with Floyd's algorithm (Bentley & Floyd, "Programming pearls: a sample of
// brilliance", CACM 1987) over a bitmap, so it is exactly uniform and comes out sorted.
// Biased towards zero on its own: pair with error_feedback, or set `scale` to send
// (n/k) * values (unbiased; Stich et al., "Sparsified SGD with memory", 2018, discuss both).
//
// Wire (CodecId::kRandomK): header | u64 index seed | u32 k | k f32 values. The decoder
// regenerates the positions from the seed; it needs no state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"

namespace gradwire {

class RandomKCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;
  RandomKCodec(double ratio, bool scale, const CodecContext& ctx);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// The positions drawn on the host, the k values scattered on `device`.
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Encode: Floyd's sample of k positions (one random number each, over an n-bit bitmap
  /// written and scanned), the k values gathered, the payload written. Decode regenerates the
  /// same positions and scatters into a zero-filled tensor; accumulate adds k values.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  void accumulate(Bytes& acc, ByteSpan other) const override;
  /// One step: every chunk's positions derive from (seed, step, offset, length).
  std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                   const std::vector<std::int64_t>& bounds) override;
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  std::int64_t k_for(std::int64_t n) const;
  /// The positions a payload with this index seed carries: k sorted distinct values < n.
  static std::vector<std::uint32_t> positions(std::uint64_t index_seed, std::uint64_t n,
                                              std::uint64_t k);
  /// The index seed of (scenario seed, step, offset, length).
  static std::uint64_t index_seed(std::uint64_t seed, std::uint64_t step, std::uint64_t offset,
                                  std::uint64_t length);
  std::uint64_t steps() const { return step_; }

 /// The values at `pos` times `factor` (one float multiply each, as the host loop does),
  /// gathered with tensor operations wherever `slice` lives and returned on the host.
  static at::Tensor gather_scaled(const at::Tensor& slice,
                                  const std::vector<std::uint32_t>& pos, float factor);

 private:
  Bytes encode_slice(const at::Tensor& slice, std::uint64_t step, std::uint64_t offset);

  double ratio_;
  bool scale_;
  std::uint64_t seed_;
  std::uint64_t max_elements_;
  std::uint64_t step_ = 0;
};

}  // namespace gradwire
