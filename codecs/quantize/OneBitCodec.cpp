#include "codecs/quantize/OneBitCodec.h"

#include <vector>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "onebit payload";

void put_u64(std::uint8_t* p, std::uint64_t v) {
  store_u32_le(p, static_cast<std::uint32_t>(v));
  store_u32_le(p + 4, static_cast<std::uint32_t>(v >> 32));
}
}  // namespace

OneBitCodec::OneBitCodec(bool per_column, const CodecContext& ctx)
    : per_column_(per_column), layers_(ctx.layers) {}

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
  check_gradient(grad, "onebit encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const float* x = grad.data_ptr<float>();
  const std::vector<quant::Segment> segs = segments(n);
  ByteWriter writer(payload_size(n, segs));
  write_header(writer, CodecId::kOneBit, kFormatVersion, n);
  writer.u32(static_cast<std::uint32_t>(segs.size()));
  // One pass over the gradient: every group's moments and all sign bits (the signs do not
  // depend on the reconstruction values).
  std::vector<std::uint64_t> group_ends;
  for (const auto& seg : segs) {
    const std::uint64_t group_len = seg.length / seg.groups;
    for (std::uint32_t g = 0; g < seg.groups; ++g) group_ends.push_back(seg.offset + (g + 1) * group_len);
  }
  std::vector<quant::Moments> moments(group_ends.size());
  // The sign bits go last in the payload; the table before them has a known size.
  std::size_t table = 0;
  for (const auto& seg : segs) table += 12 + 8 * static_cast<std::size_t>(seg.groups);
  std::uint8_t* table_out = writer.extend(table);
  quant::grouped_moments_and_signs(x, n, group_ends, moments.data(), writer.extend((n + 7) / 8));
  std::size_t group = 0;
  for (const auto& seg : segs) {
    put_u64(table_out, seg.length);
    store_u32_le(table_out + 8, seg.groups);
    table_out += 12;
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
      store_f32_le(table_out, pos_count ? static_cast<float>(pos / static_cast<double>(pos_count)) : 0.0f);
      store_f32_le(table_out + 4, neg_count ? static_cast<float>(neg / static_cast<double>(neg_count)) : 0.0f);
      table_out += 8;
    }
  }
  return writer.take();
}

torch::Tensor OneBitCodec::decode(ByteSpan payload) const {
  ByteReader reader(payload, kWhat);
  const std::uint64_t n = read_header(reader, CodecId::kOneBit, "onebit", kFormatVersion).numel;
  const std::uint32_t count = reader.u32("segment count");
  if (count > n || static_cast<std::uint64_t>(count) * 20 > reader.remaining()) {
    reader.fail("segment count " + std::to_string(count) + " impossible for " + std::to_string(n) +
                " elements and " + std::to_string(reader.remaining()) + " remaining bytes");
  }
  struct Seg {
    std::uint64_t length;
    std::uint32_t groups;
    const std::uint8_t* values;
  };
  std::vector<Seg> segs;
  segs.reserve(count);
  std::uint64_t covered = 0;
  for (std::uint32_t s = 0; s < count; ++s) {
    const std::uint64_t len = quant::read_segment_length(reader, n - covered);
    const std::uint32_t groups = reader.u32("group count");
    if (groups == 0 || groups > len || len % groups != 0) {
      reader.fail("segment of " + std::to_string(len) + " elements cannot have " +
                  std::to_string(groups) + " equal groups");
    }
    segs.push_back(Seg{len, groups, reader.take(groups, 8, "reconstruction values")});
    covered += len;
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
  for (const Seg& seg : segs) {
    const std::uint64_t group_len = seg.length / seg.groups;
    for (std::uint32_t g = 0; g < seg.groups; ++g) {
      const float pos = load_f32_le(seg.values + 8 * g);
      const float neg = load_f32_le(seg.values + 8 * g + 4);
      quant::expand_signs(signs, i, group_len, pos, neg, dst + i);
      i += group_len;
    }
  }
  return out;
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
