#include "codecs/quantize/ScaledSignCodec.h"

#include <cmath>

#include <vector>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
void put_u64(std::uint8_t* p, std::uint64_t v) {
  store_u32_le(p, static_cast<std::uint32_t>(v));
  store_u32_le(p + 4, static_cast<std::uint32_t>(v >> 32));
}
}  // namespace

ScaledSignCodec::ScaledSignCodec(bool per_layer, const CodecContext& ctx)
    : per_layer_(per_layer), layers_(ctx.layers) {}

Bytes ScaledSignCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "efsignsgd encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const float* x = grad.data_ptr<float>();
  const auto segs = quant::segments_for(
      n, layers_, per_layer_ ? quant::Granularity::kLayer : quant::Granularity::kTensor);
  ByteWriter writer(payload_size(n, segs.size()));
  write_header(writer, CodecId::kScaledSign, kFormatVersion, n);
  writer.u32(static_cast<std::uint32_t>(segs.size()));
  // One pass over the gradient: every segment's ||p||_1 and all sign bits.
  std::vector<std::uint64_t> ends;
  for (const auto& seg : segs) ends.push_back(seg.offset + seg.length);
  std::vector<quant::Moments> moments(segs.size());
  std::uint8_t* table = writer.extend(12 * segs.size());
  quant::grouped_moments_and_signs(x, n, ends, moments.data(), writer.extend((n + 7) / 8));
  for (std::size_t s = 0; s < segs.size(); ++s) {
    put_u64(table + 12 * s, segs[s].length);
    // ||p||_1 / d
    store_f32_le(table + 12 * s + 8, static_cast<float>(moments[s].sum_abs / static_cast<double>(segs[s].length)));
  }
  return writer.take();
}

torch::Tensor ScaledSignCodec::decode(ByteSpan payload) const {
  ByteReader reader(payload, "efsignsgd payload");
  const std::uint64_t n = read_header(reader, CodecId::kScaledSign, "efsignsgd", kFormatVersion).numel;
  const std::uint32_t count = reader.u32("segment count");
  if (count > n || static_cast<std::uint64_t>(count) * 12 > reader.remaining()) {
    reader.fail("segment count " + std::to_string(count) + " impossible for " + std::to_string(n) +
                " elements and " + std::to_string(reader.remaining()) + " remaining bytes");
  }
  std::vector<std::uint64_t> lengths;
  std::vector<float> scales;
  lengths.reserve(count);
  scales.reserve(count);
  std::uint64_t covered = 0;
  for (std::uint32_t s = 0; s < count; ++s) {
    lengths.push_back(quant::read_segment_length(reader, n - covered));
    covered += lengths.back();
    scales.push_back(reader.f32("segment scale"));
  }
  if (covered != n) {
    reader.fail("segments cover " + std::to_string(covered) + " of " + std::to_string(n) + " elements");
  }
  const std::uint8_t* signs = reader.take((n + 7) / 8, 1, "sign bits");
  reader.expect_end();
  if (!bits::padding_is_zero(signs, n, 1)) reader.fail("non-zero padding bits after the last sign");
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  std::uint64_t i = 0;
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    quant::expand_signs(signs, i, lengths[s], scales[s], -scales[s], dst + i);
    i += lengths[s];
  }
  return out;
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
