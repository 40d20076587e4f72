// `topk`: sends the k = max(1, round(ratio * n)) entries of largest magnitude with their
// positions (GRACE grace_dl/torch/compressor/topk.py). Biased on its own: pair it with
// error_feedback so dropped mass is sent later (see ErrorFeedback.h).
//
// Selection is exact; among equal magnitudes the lower index wins, and NaN ranks above +inf
// (as in torch.topk), so a payload is a deterministic function of the gradient.
//
// Different workers pick different indices, so payloads do not add in the compressed domain:
// Aggregation::kDecodeThenSum.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

class TopKCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;
  static constexpr double kDefaultRatio = 0.01;

  /// `ratio` in (0, 1] (std::invalid_argument otherwise). `max_elements` bounds the element
  /// count decode accepts: a sparse payload of a few bytes can state a huge n and decoding
  /// allocates n floats, so a corrupt header must not be able to ask for terabytes. The
  /// registry sets it to the worker's gradient length.
  explicit TopKCodec(double ratio = kDefaultRatio,
                     std::uint64_t max_elements = std::uint64_t{1} << 32);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Encode: one selection of k of n, a scan of the gradient, the k values gathered, the
  /// payload written. Decode: the zero-filled tensor and the k values scattered into it.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;

  double ratio() const { return ratio_; }
  /// The k this codec keeps out of n elements: max(1, round(ratio * n)), at most n.
  std::int64_t k_for(std::int64_t n) const;

  /// Writes the topk wire format for `grad` (checked by the caller) keeping exactly the
  /// entries at `indices` (integer tensor, strictly ascending, each < n; not re-checked).
  /// ExactEncoding uses it to send every non-zero.
  static Bytes encode_selected(const at::Tensor& grad, const at::Tensor& indices);
  /// Decodes a topk-format payload; rejects k > n, inexact sizes, indices >= n, indices not
  /// strictly increasing, and element counts above `max_elements`.
  static at::Tensor decode_sparse(ByteSpan payload, std::uint64_t max_elements);
  /// Positions of the k largest |values[i]| among n (0 <= k <= n), ascending, ties to the
  /// lower position, NaN above +inf: the exact selection `encode` uses, shared with the other
  /// sparsifiers (DGC's exact fallback).
  static std::vector<std::uint32_t> select_largest(const float* values, std::int64_t n,
                                                   std::int64_t k);
  /// Exact size of a topk payload holding k entries.
  static std::size_t payload_size(std::uint64_t k) { return kPayloadHeaderSize + 4 + 8 * k; }

 /// encode()'s payload for k of grad's elements, computed with tensor operations wherever
  /// grad lives (encode() uses it for a gradient on an accelerator): the same selection, ties
  /// and NaN included, with only the k entries copied to the host.
  static Bytes encode_with_tensor_ops(const at::Tensor& grad, std::int64_t k);
  /// select_largest's positions, computed with tensor operations where `values` lives and
  /// returned there (int64, ascending): the same selection, ties and NaN included.
  static at::Tensor select_largest_with_tensor_ops(const at::Tensor& values, std::int64_t k);

 private:
  double ratio_;
  std::uint64_t max_elements_;
};

}  // namespace gradwire
