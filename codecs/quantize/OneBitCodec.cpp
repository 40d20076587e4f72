#include "codecs/quantize/OneBitCodec.h"

#include <cstring>
#include <vector>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "onebit payload";
}  // namespace

OneBitCodec::OneBitCodec(bool per_column, const CodecContext& ctx)
    : Codec(CodecTraits{"onebit", Aggregation::kDecodeThenSum, /*encodes_on_device=*/true}),
      per_column_(per_column), layers_(ctx.layers) {}

std::vector<quant::Segment> OneBitCodec::segments(std::uint64_t n) const {
  return quant::segments_for(n, layers_, per_column_ ? quant::Granularity::kColumn
                                                     : quant::Granularity::kLayer);
}

std::size_t OneBitCodec::payload_size(std::uint64_t n, const std::vector<quant::Segment>& segments) {
  std::size_t size = kPayloadHeaderSize + 4 + (n + 7) / 8;
  for (const auto& s : segments) size += 12 + 8 * static_cast<std::size_t>(s.groups);
  return size;
}

Bytes OneBitCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "onebit encode", /*on_device=*/true);
  return encode_payload(grad, !grad.device().is_cpu());
}

Bytes OneBitCodec::encode_with_tensor_ops(const torch::Tensor& grad) const {
  return encode_payload(grad, /*tensor_ops=*/true);
}

Bytes OneBitCodec::encode_payload(const torch::Tensor& grad, bool tensor_ops) const {
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const std::vector<quant::Segment> segs = segments(n);
  ByteWriter writer(payload_size(n, segs));
  write_header(writer, CodecId::kOneBit, kFormatVersion, n);
  writer.u32(static_cast<std::uint32_t>(segs.size()));
  // The sign bits go last in the payload; the table before them, of a known size, is filled
  // once the pass over the gradient has given every group's moments (the signs do not depend
  // on the reconstruction values).
  std::size_t table_bytes = 0;
  for (const auto& seg : segs) table_bytes += 12 + 8 * static_cast<std::size_t>(seg.groups);
  std::uint8_t* table = writer.extend(table_bytes);
  std::uint8_t* signs = writer.extend((n + 7) / 8);
  std::vector<quant::Moments> moments;
  if (tensor_ops) {
    moments = quant::group_moments_with_tensor_ops(grad, segs);
    const torch::Tensor packed = quant::pack_signs_with_tensor_ops(grad);
    if (n != 0) std::memcpy(signs, packed.data_ptr<std::uint8_t>(), (n + 7) / 8);
  } else {
    std::vector<std::uint64_t> group_ends;
    for (const auto& seg : segs) {
      const std::uint64_t group_len = seg.length / seg.groups;
      for (std::uint32_t g = 0; g < seg.groups; ++g) group_ends.push_back(seg.offset + (g + 1) * group_len);
    }
    moments.resize(group_ends.size());
    quant::grouped_moments_and_signs(grad.data_ptr<float>(), n, group_ends, moments.data(), signs);
  }
  std::size_t group = 0;
  for (const auto& seg : segs) {
    store_u64_le(table, seg.length);
    store_u32_le(table + 8, seg.groups);
    table += 12;
    const std::uint64_t group_len = seg.length / seg.groups;
    for (std::uint32_t g = 0; g < seg.groups; ++g, ++group) {
      // Reconstruction values: the means of the non-negative and of the negative part
      // (a part with no elements gets 0; no element decodes to it).
      // Sum of the non-negative part = (sum + sum|v|) / 2, of the negative part
      // (sum - sum|v|) / 2.
      const quant::Moments& m = moments[group];
      const double pos = (m.sum + m.sum_abs) / 2, neg = (m.sum - m.sum_abs) / 2;
      const std::uint64_t pos_count = m.non_negative;
      const std::uint64_t neg_count = group_len - pos_count;
      store_f32_le(table, pos_count ? static_cast<float>(pos / static_cast<double>(pos_count)) : 0.0f);
      store_f32_le(table + 4, neg_count ? static_cast<float>(neg / static_cast<double>(neg_count)) : 0.0f);
      table += 8;
    }
  }
  return writer.take();
}

quant::SignGroups OneBitCodec::read_groups(ByteSpan payload) {
  ByteReader reader(payload, kWhat);
  quant::SignGroups out;
  const std::uint64_t n = read_header(reader, CodecId::kOneBit, "onebit", kFormatVersion).numel;
  out.n = n;
  const std::uint32_t count = reader.u32("segment count");
  if (count > n || static_cast<std::uint64_t>(count) * 20 > reader.remaining()) {
    reader.fail("segment count " + std::to_string(count) + " impossible for " + std::to_string(n) +
                " elements and " + std::to_string(reader.remaining()) + " remaining bytes");
  }
  std::uint64_t covered = 0;
  for (std::uint32_t s = 0; s < count; ++s) {
    const std::uint64_t len = quant::read_segment_length(reader, n - covered);
    const std::uint32_t groups = reader.u32("group count");
    if (groups == 0 || groups > len || len % groups != 0) {
      reader.fail("segment of " + std::to_string(len) + " elements cannot have " +
                  std::to_string(groups) + " equal groups");
    }
    const std::uint8_t* values = reader.take(groups, 8, "reconstruction values");
    for (std::uint32_t g = 0; g < groups; ++g) {
      out.lengths.push_back(static_cast<std::int64_t>(len / groups));
      out.positive.push_back(load_f32_le(values + 8 * g));
      out.negative.push_back(load_f32_le(values + 8 * g + 4));
    }
    covered += len;
  }
  if (covered != n) {
    reader.fail("segments cover " + std::to_string(covered) + " of " + std::to_string(n) + " elements");
  }
  out.signs = reader.take((n + 7) / 8, 1, "sign bits");
  reader.expect_end();
  if (!bits::padding_is_zero(out.signs, n, 1)) reader.fail("non-zero padding bits after the last sign");
  return out;
}

torch::Tensor OneBitCodec::decode(ByteSpan payload) const {
  return quant::expand_sign_groups(read_groups(payload), c10::Device(c10::kCPU));
}

torch::Tensor OneBitCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  return quant::expand_sign_groups(read_groups(payload), device);
}

CodecWork OneBitCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode: return CodecWork::memory(4 * n + bytes) + CodecWork::compute(3 * n);
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::compute(n);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
