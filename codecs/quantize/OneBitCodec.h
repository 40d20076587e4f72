// `onebit`: 1-bit SGD (Seide, Fu, Droppo, Li, Yu, "1-Bit Stochastic Gradient Descent and its
// Application to Data-Parallel Distributed Training of Speech DNNs", Interspeech 2014).
//
// Each element is sent as one bit, its sign; every column of a weight matrix carries two
// float reconstruction values, the mean of its non-negative entries (sign bit clear) and the mean of its
// negative entries, and the quantisation error is fed back into the next step's gradient
// (error feedback is part of the method: the registry always wraps this codec in
// ErrorFeedback, see codecs/README.md).
//
// "Column" here is the set of weights into one output unit: a contiguous row of PyTorch's
// [out, in, ...] layout (the paper's column of W in v = W^T h notation). Tensors of rank 1
// (biases), and every tensor with granularity "tensor", get one pair of values. Without a
// model layout (tools, ring slices) the whole encoded tensor is one group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/quantize/QuantizerSupport.h"
#include "codecs/quantize/QuantizerTensorOps.h"

namespace gradwire {

class OneBitCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;

  /// `per_column` false: one pair of reconstruction values per layer.
  OneBitCodec(bool per_column, const CodecContext& ctx);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// encode()'s payload computed with tensor operations wherever grad lives (encode() uses
  /// it for a gradient on an accelerator): the same sign bits; each mean from double sums
  /// (the host's adds float lanes), so equal to the host's to about 1e-7 relative.
  Bytes encode_with_tensor_ops(const at::Tensor& grad) const;
  /// Encode: one pass computing the groups' means and packing the signs (4n bytes read, 3
  /// operations per element). Decode: signs expanded to the two values (1 per element). The
  /// error feedback around it declares its own passes.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;

  /// Exact size: 12 + 4 + sum over segments (12 + 8 groups) + ceil(n / 8).
  static std::size_t payload_size(std::uint64_t n, const std::vector<quant::Segment>& segments);
  /// The segments this codec uses for an n-element tensor.
  std::vector<quant::Segment> segments(std::uint64_t n) const;

 private:
  /// Checks a payload and returns its groups' reconstruction values and the sign bits.
  static quant::SignGroups read_groups(ByteSpan payload);
  /// The payload, from the host's one pass or from tensor operations.
  Bytes encode_payload(const at::Tensor& grad, bool tensor_ops) const;

  bool per_column_;
  std::vector<LayerSlice> layers_;
};

}  // namespace gradwire
