#include "codecs/quantize/ScaledSignCodec.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

ScaledSignCodec::ScaledSignCodec(bool per_layer, const CodecContext& ctx)
    : Codec(CodecTraits{"efsignsgd", Aggregation::kDecodeThenSum, /*encodes_on_device=*/true}),
      per_layer_(per_layer), layers_(ctx.layers) {}

std::vector<quant::Segment> ScaledSignCodec::segments(std::uint64_t n) const {
  return quant::segments_for(n, layers_, per_layer_ ? quant::Granularity::kLayer : quant::Granularity::kTensor);
}

Bytes ScaledSignCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "efsignsgd encode", /*on_device=*/true);
  return encode_payload(grad, !grad.device().is_cpu());
}

Bytes ScaledSignCodec::encode_with_tensor_ops(const torch::Tensor& grad) const {
  return encode_payload(grad, /*tensor_ops=*/true);
}

Bytes ScaledSignCodec::encode_payload(const torch::Tensor& grad, bool tensor_ops) const {
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const auto segs = segments(n);
  ByteWriter writer(payload_size(n, segs.size()));
  write_header(writer, CodecId::kScaledSign, kFormatVersion, n);
  writer.u32(static_cast<std::uint32_t>(segs.size()));
  // The table is filled once the signs' pass has given every segment's ||p||_1.
  std::uint8_t* table = writer.extend(12 * segs.size());
  std::uint8_t* signs = writer.extend((n + 7) / 8);
  std::vector<quant::Moments> moments;
  if (tensor_ops) {
    moments = quant::group_moments_with_tensor_ops(grad, segs);
    const torch::Tensor packed = quant::pack_signs_with_tensor_ops(grad);
    if (n != 0) std::memcpy(signs, packed.data_ptr<std::uint8_t>(), (n + 7) / 8);
  } else {
    // One pass over the gradient: every segment's ||p||_1 and all sign bits.
    std::vector<std::uint64_t> ends;
    for (const auto& seg : segs) ends.push_back(seg.offset + seg.length);
    moments.resize(segs.size());
    quant::grouped_moments_and_signs(grad.data_ptr<float>(), n, ends, moments.data(), signs);
  }
  for (std::size_t s = 0; s < segs.size(); ++s) {
    store_u64_le(table + 12 * s, segs[s].length);
    // ||p||_1 / d
    store_f32_le(table + 12 * s + 8,
                 static_cast<float>(moments[s].sum_abs / static_cast<double>(segs[s].length)));
  }
  return writer.take();
}

quant::SignGroups ScaledSignCodec::read_groups(ByteSpan payload) {
  ByteReader reader(payload, "efsignsgd payload");
  quant::SignGroups out;
  const std::uint64_t n = read_header(reader, CodecId::kScaledSign, "efsignsgd", kFormatVersion).numel;
  out.n = n;
  const std::uint32_t count = reader.u32("segment count");
  if (count > n || static_cast<std::uint64_t>(count) * 12 > reader.remaining()) {
    reader.fail("segment count " + std::to_string(count) + " impossible for " + std::to_string(n) +
                " elements and " + std::to_string(reader.remaining()) + " remaining bytes");
  }
  out.lengths.reserve(count);
  out.positive.reserve(count);
  out.negative.reserve(count);
  std::uint64_t covered = 0;
  for (std::uint32_t s = 0; s < count; ++s) {
    const std::uint64_t length = quant::read_segment_length(reader, n - covered);
    covered += length;
    const float scale = reader.f32("segment scale");
    out.lengths.push_back(static_cast<std::int64_t>(length));
    out.positive.push_back(scale);
    out.negative.push_back(-scale);
  }
  if (covered != n) {
    reader.fail("segments cover " + std::to_string(covered) + " of " + std::to_string(n) + " elements");
  }
  out.signs = reader.take((n + 7) / 8, 1, "sign bits");
  reader.expect_end();
  if (!bits::padding_is_zero(out.signs, n, 1)) reader.fail("non-zero padding bits after the last sign");
  return out;
}

torch::Tensor ScaledSignCodec::decode(ByteSpan payload) const {
  return quant::expand_sign_groups(read_groups(payload), c10::Device(c10::kCPU));
}

torch::Tensor ScaledSignCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  return quant::expand_sign_groups(read_groups(payload), device);
}

CodecWork ScaledSignCodec::work(CodecOp op, std::int64_t numel,
                                std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode: return CodecWork::memory(8 * n + bytes) + CodecWork::compute(3 * n);
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::compute(n);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
