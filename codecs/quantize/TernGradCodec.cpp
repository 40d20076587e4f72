#include "codecs/quantize/TernGradCodec.h"

#include <algorithm>
#include <optional>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <ATen/ATen.h>
#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/kernels/DitherKernels.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

constexpr const char* kWhat = "terngrad payload";

struct Parsed {
  std::uint64_t n = 0;
  std::uint32_t contributors = 0;
  unsigned width = 0;
  std::vector<std::uint64_t> lengths;
  std::vector<float> scales;
  const std::uint8_t* codes = nullptr;
};

constexpr std::uint32_t kChunk = 1024;

/// Ternary codes for m elements starting at element index `first`: keep with probability
/// |clip(v)| / s, as 2-bit two's complement (+1 = 01, -1 = 11, 0 = 00). Arithmetic rather
/// than branches (signs and Bernoulli draws are unpredictable), and the comparison u < p is
/// done on the bit patterns of the two non-negative floats, which keeps the loop
/// vectorisable under GCC's default -ftrapping-math.
GRADWIRE_VECTOR_KERNEL void ternary_codes(const float* x, std::uint32_t first, std::uint32_t m, float bound, float inv,
                   std::uint32_t key, std::uint32_t* out) {
  for (std::uint32_t i = 0; i < m; ++i) {
    const float v = x[i];
    const float a = std::min(std::fabs(v), bound);  // |clip(v)|
    const float p = a * inv;
    const float u = quant::Dither::uniform(key, first + i);
    std::int32_t pb, ub;
    std::uint32_t sign;
    std::memcpy(&pb, &p, 4);
    std::memcpy(&ub, &u, 4);
    std::memcpy(&sign, &v, 4);
    const auto keep = static_cast<std::uint32_t>(ub < pb);
    out[i] = keep * (1u + 2u * (sign >> 31));
  }
}

/// Values of m (summed) ternary codes: scale * code, the codes sign-extended from 32 - shift
/// bits; returns non-zero when a code lies outside [-limit, limit].
GRADWIRE_VECTOR_KERNEL std::int32_t ternary_values(const std::uint32_t* codes, std::uint32_t m, unsigned shift,
                                                   std::int32_t limit, float scale, float* out) {
  std::int32_t bad = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    const std::int32_t code = static_cast<std::int32_t>(codes[i] << shift) >> shift;
    bad |= static_cast<std::int32_t>(code > limit) | static_cast<std::int32_t>(code < -limit);
    out[i] = scale * static_cast<float>(code);
  }
  return bad;
}

inline std::int32_t sign_extend(std::uint32_t code, unsigned width) {
  const unsigned shift = 32 - width;
  return static_cast<std::int32_t>(code << shift) >> shift;
}

Parsed parse(ByteSpan payload) {
  ByteReader reader(payload, kWhat);
  Parsed p;
  p.n = read_header(reader, CodecId::kTernGrad, "terngrad", TernGradCodec::kFormatVersion).numel;
  p.contributors = reader.u32("contributors");
  if (p.contributors == 0 || p.contributors > TernGradCodec::kMaxContributors) {
    reader.fail("contributors = " + std::to_string(p.contributors) + " outside [1, " +
                std::to_string(TernGradCodec::kMaxContributors) + "]");
  }
  p.width = reader.u8("code width");
  if (p.width != TernGradCodec::width_for_contributors(p.contributors)) {
    reader.fail("code width " + std::to_string(p.width) + " does not match " +
                std::to_string(p.contributors) + " contributors (expected " +
                std::to_string(TernGradCodec::width_for_contributors(p.contributors)) + ")");
  }
  const std::uint32_t segments = reader.u32("segment count");
  // Each segment holds at least one element and 12 table bytes: bound the count before
  // reserving anything.
  if (segments > p.n || static_cast<std::uint64_t>(segments) * 12 > reader.remaining()) {
    reader.fail("segment count " + std::to_string(segments) + " impossible for " +
                std::to_string(p.n) + " elements and " + std::to_string(reader.remaining()) +
                " remaining bytes");
  }
  std::uint64_t covered = 0;
  p.lengths.reserve(segments);
  p.scales.reserve(segments);
  for (std::uint32_t s = 0; s < segments; ++s) {
    const std::uint64_t len = quant::read_segment_length(reader, p.n - covered);
    covered += len;
    p.lengths.push_back(len);
    p.scales.push_back(reader.f32("segment scale"));
  }
  if (covered != p.n) {
    reader.fail("segments cover " + std::to_string(covered) + " of " + std::to_string(p.n) + " elements");
  }
  const std::size_t code_bytes = bits::packed_size(p.n, p.width);
  if (reader.remaining() != code_bytes) {
    reader.fail("size mismatch: " + std::to_string(p.n) + " codes of " + std::to_string(p.width) +
                " bits need " + std::to_string(code_bytes) + " bytes after offset " +
                std::to_string(reader.offset()) + ", have " + std::to_string(reader.remaining()));
  }
  p.codes = reader.take(code_bytes, 1, "codes");
  reader.expect_end();
  if (!bits::padding_is_zero(p.codes, p.n, p.width)) reader.fail("non-zero padding bits after the last code");
  return p;
}

/// Unpacks and range-checks every code (|code| <= contributors) into `out`.
void read_codes(const Parsed& p, std::int32_t* out) {
  const auto limit = static_cast<std::int32_t>(p.contributors);
  bool bad = false;
  bits::unpack_with(p.codes, p.n, p.width, [&](std::size_t i, std::uint32_t code) {
    const std::int32_t c = sign_extend(code, p.width);
    bad |= c > limit || c < -limit;
    out[i] = c;
  });
  if (bad) {
    throw DecodeError(std::string(kWhat) + ": a code exceeds the " + std::to_string(p.contributors) +
                      " contributors the payload states");
  }
}

void write_table(ByteWriter& w, std::uint64_t n, std::uint32_t contributors,
                 const std::vector<std::uint64_t>& lengths, const std::vector<float>& scales) {
  write_header(w, CodecId::kTernGrad, TernGradCodec::kFormatVersion, n);
  w.u32(contributors);
  w.u8(static_cast<std::uint8_t>(TernGradCodec::width_for_contributors(contributors)));
  w.u32(static_cast<std::uint32_t>(lengths.size()));
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    w.u64(lengths[s]);
    w.f32(scales[s]);
  }
}

CodecTraits terngrad_traits(double shared_scale) {
  CodecTraits t;
  t.name = "terngrad";
  // A scale every worker shares makes the integer codes add.
  t.aggregation = shared_scale > 0 ? Aggregation::kSummable : Aggregation::kDecodeThenSum;
  return t;
}

}  // namespace

TernGradCodec::TernGradCodec(double clip, double shared_scale, const CodecContext& ctx)
    : Codec(terngrad_traits(shared_scale)),
      clip_(clip), shared_scale_(shared_scale), layers_(ctx.layers),
      dither_(ctx.seed, ctx.rank, CodecId::kTernGrad), initial_dither_(dither_.state()) {
  if (!(clip >= 0.0) || !(shared_scale >= 0.0) || !std::isfinite(shared_scale)) {
    throw std::invalid_argument("terngrad: clip and shared_scale must be finite and >= 0");
  }
}

unsigned TernGradCodec::width_for_contributors(std::uint32_t contributors) {
  if (contributors <= 1) return 2;
  if (contributors <= 7) return 4;
  if (contributors <= 127) return 8;
  return 16;
}

std::size_t TernGradCodec::proposal_size(std::uint64_t segments) {
  return kPayloadHeaderSize + 4 + 1 + 4 + 12 * segments;
}

std::size_t TernGradCodec::payload_size(std::uint64_t n, std::uint64_t segments,
                                        std::uint32_t contributors) {
  return kPayloadHeaderSize + 4 + 1 + 4 + 12 * segments +
         bits::packed_size(n, width_for_contributors(contributors));
}

TernGradCodec::Plan TernGradCodec::plan(const float* x, std::uint64_t n) const {
  const bool shared = shared_scale_ > 0;
  // Shared mode: one segment whatever the layout, so ring chunks of every worker line up.
  const std::vector<quant::Segment> segments = quant::segments_for(
      n, layers_, shared ? quant::Granularity::kTensor : quant::Granularity::kLayer);
  Plan p;
  for (const auto& seg : segments) {
    float bound;  // elements are clipped to [-bound, bound]
    float scale;  // the scaler s
    if (shared) {
      bound = scale = static_cast<float>(shared_scale_);
    } else {
      const quant::Moments m = seg.length >= quant::kParallelMin
                                   ? quant::moments_parallel(x + seg.offset, seg.length)
                                   : quant::moments(x + seg.offset, seg.length);
      const float max_abs = m.max_abs;
      const double len = static_cast<double>(seg.length);
      const double mean = m.sum / len;
      const double sigma = std::sqrt(std::max(0.0, m.sum_sq / len - mean * mean));
      bound = clip_ > 0 ? static_cast<float>(clip_ * sigma) : max_abs;
      // s = max |clip(g)| = min(max |g|, c sigma).
      scale = std::min(max_abs, bound);
    }
    p.lengths.push_back(seg.length);
    p.scales.push_back(scale);
    p.bounds.push_back(bound);
  }
  return p;
}

Bytes TernGradCodec::write_codes(const float* x, std::uint64_t n, const Plan& p) {
  ByteWriter writer(payload_size(n, p.lengths.size(), 1));
  write_table(writer, n, 1, p.lengths, p.scales);
  std::uint8_t* codes = writer.extend(bits::packed_size(n, 2));
  const std::uint32_t key = dither_.next_key();
  std::uint64_t offset = 0;
  for (std::size_t s = 0; s < p.lengths.size(); ++s) {
    const float bound = p.bounds[s];
    const float inv = p.scales[s] > 0 && std::isfinite(1.0f / p.scales[s]) ? 1.0f / p.scales[s] : 0.0f;
    // Codes of [begin, end), kChunk at a time, then packed: with plain stores from a whole byte
    // of the stream (begin % 4 == 0), else ORed into the byte the previous segment left
    // partly zero (ByteWriter::extend zero-fills).
    const auto codes_of = [&](std::uint64_t begin, std::uint64_t end) {
      std::uint32_t chunk[kChunk];
      std::uint8_t narrow[kChunk];
      for (std::uint64_t c = begin; c < end; c += kChunk) {
        const auto m = static_cast<std::uint32_t>(std::min<std::uint64_t>(kChunk, end - c));
        if (c % 4 != 0) {
          ternary_codes(x + c, quant::dither_index(c), m, bound, inv, key, chunk);
          bits::pack_at(chunk, m, 2, codes, 2 * c);
          continue;
        }
        // From a whole byte: one byte per code (the AVX-512 / AVX2 kernel where the CPU has
        // it, identical results), then packed.
        const std::uint32_t done = quant::ternary_codes_simd(x + c, quant::dither_index(c), m, bound, inv, key, narrow);
        if (done < m) {
          ternary_codes(x + c + done, quant::dither_index(c) + done, m - done, bound, inv, key, chunk);
          for (std::uint32_t i = done; i < m; ++i) narrow[i] = static_cast<std::uint8_t>(chunk[i - done]);
        }
        bits::pack_bytes(narrow, m, 2, codes + c / 4);
      }
    };
    // A layer may start mid-byte (layer sizes are arbitrary): its first elements up to the
    // next multiple of 4 go alone, so every later chunk starts on a whole byte, and the rest
    // is split over threads on large layers (pieces of multiples of 64 elements).
    const std::uint64_t begin = offset;
    const std::uint64_t end = begin + p.lengths[s];
    const std::uint64_t head = std::min(end, (begin + 3) / 4 * 4);
    codes_of(begin, head);
    quant::parallel_ranges(end - head, 64, end - head, [&](std::uint64_t b, std::uint64_t e) {
      codes_of(head + b, head + e);
    });
    offset = end;
  }
  // Segments tile [0, n) (empty layers are skipped, never gaps).
  return writer.take();
}

Bytes TernGradCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "terngrad encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const float* x = grad.data_ptr<float>();
  return write_codes(x, n, plan(x, n));
}

Bytes TernGradCodec::propose_scales(const torch::Tensor& grad) {
  check_gradient(grad, "terngrad encode");
  if (shared_scale_ > 0) throw std::logic_error("terngrad: a configured shared scale needs no agreement");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  pending_ = plan(grad.data_ptr<float>(), n);
  pending_numel_ = n;
  ByteWriter writer(proposal_size(pending_.lengths.size()));
  write_header(writer, CodecId::kTernGrad, kFormatVersion, n);
  writer.u32(0);  // m = 0: a scale proposal, no codes
  writer.u8(0);
  writer.u32(static_cast<std::uint32_t>(pending_.lengths.size()));
  for (std::size_t s = 0; s < pending_.lengths.size(); ++s) {
    writer.u64(pending_.lengths[s]);
    writer.f32(pending_.scales[s]);
  }
  return writer.take();
}

Bytes TernGradCodec::encode_with_scales(const torch::Tensor& grad, const std::vector<float>& agreed) {
  check_gradient(grad, "terngrad encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  if (n != pending_numel_ || agreed.size() != pending_.scales.size()) {
    throw std::logic_error("terngrad: encode_with_scales without a matching propose_scales");
  }
  for (std::size_t s = 0; s < agreed.size(); ++s) {
    // The agreed scale is the maximum over workers, so at least this worker's own (NaN
    // propagates: a NaN gradient anywhere decodes to NaN, as dense would).
    if (!(agreed[s] >= pending_.scales[s]) && !std::isnan(agreed[s])) {
      throw std::logic_error("terngrad: agreed scale " + std::to_string(agreed[s]) + " of segment " +
                             std::to_string(s) + " is below this worker's " +
                             std::to_string(pending_.scales[s]));
    }
  }
  Plan p = pending_;
  p.scales = agreed;
  pending_numel_ = ~std::uint64_t{0};
  return write_codes(grad.data_ptr<float>(), n, p);
}

std::vector<float> TernGradCodec::max_proposed_scales(const std::vector<ByteSpan>& proposals) {
  std::vector<std::uint64_t> lengths;
  std::vector<float> out;
  std::uint64_t numel = 0;
  for (std::size_t r = 0; r < proposals.size(); ++r) {
    ByteReader reader(proposals[r], "terngrad scale proposal");
    const std::uint64_t n = read_header(reader, CodecId::kTernGrad, "terngrad", kFormatVersion).numel;
    if (reader.u32("contributors") != 0 || reader.u8("code width") != 0) {
      reader.fail("not a scale proposal (contributors and code width must be 0)");
    }
    const std::uint32_t segments = reader.u32("segment count");
    if (segments > n || reader.remaining() != 12 * static_cast<std::uint64_t>(segments)) {
      reader.fail("segment count " + std::to_string(segments) + " does not match " +
                  std::to_string(n) + " elements and " + std::to_string(reader.remaining()) +
                  " remaining bytes (12 per segment)");
    }
    std::vector<std::uint64_t> lens;
    std::vector<float> scales;
    std::uint64_t covered = 0;
    for (std::uint32_t s = 0; s < segments; ++s) {
      lens.push_back(quant::read_segment_length(reader, n - covered));
      covered += lens.back();
      const float scale = reader.f32("segment scale");
      if (scale < 0) reader.fail("negative scale");
      scales.push_back(scale);
    }
    if (covered != n) {
      reader.fail("segments cover " + std::to_string(covered) + " of " + std::to_string(n) + " elements");
    }
    reader.expect_end();
    if (r == 0) {
      numel = n;
      lengths = lens;
      out = scales;
      continue;
    }
    if (n != numel || lens != lengths) {
      throw DecodeError("terngrad scale proposals: workers' segment tables differ");
    }
    for (std::size_t s = 0; s < out.size(); ++s) {
      out[s] = std::isnan(out[s]) || std::isnan(scales[s]) ? std::nanf("") : std::max(out[s], scales[s]);
    }
  }
  return out;
}

torch::Tensor TernGradCodec::decode(ByteSpan payload) const {
  const Parsed p = parse(payload);
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(p.n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  const auto limit = static_cast<std::int32_t>(p.contributors);
  const unsigned shift = 32 - p.width;  // codes are sign-extended from their top bit
  std::int32_t bad = 0;
  std::uint32_t codes[kChunk];
  std::uint64_t at = 0;
  for (std::size_t s = 0; s < p.lengths.size(); ++s) {
    const float scale = p.scales[s];
    const std::uint64_t end = at + p.lengths[s];
    for (std::uint64_t c = at; c < end; c += kChunk) {
      const auto m = static_cast<std::uint32_t>(std::min<std::uint64_t>(kChunk, end - c));
      bits::unpack_at(p.codes, m, p.width, c * p.width, codes);
      bad |= ternary_values(codes, m, shift, limit, scale, dst + c);
    }
    at = end;
  }
  if (bad) {
    throw DecodeError(std::string(kWhat) + ": a code exceeds the " + std::to_string(p.contributors) +
                      " contributors the payload states");
  }
  return out;
}

void TernGradCodec::accumulate(Bytes& acc, ByteSpan other) const {
  const Parsed a = parse(ByteSpan(acc));
  const Parsed b = parse(other);
  if (a.n != b.n || a.lengths != b.lengths) {
    throw DecodeError("terngrad accumulate: payloads have different element counts or segments");
  }
  for (std::size_t s = 0; s < a.scales.size(); ++s) {
    std::uint32_t x, y;
    std::memcpy(&x, &a.scales[s], 4);
    std::memcpy(&y, &b.scales[s], 4);
    if (x != y) {
      throw DecodeError("terngrad accumulate: segment " + std::to_string(s) + " scales differ (" +
                        std::to_string(a.scales[s]) + " vs " + std::to_string(b.scales[s]) +
                        "); only scaler-shared payloads add");
    }
  }
  const std::uint64_t contributors = std::uint64_t{a.contributors} + b.contributors;
  if (contributors > kMaxContributors) {
    throw DecodeError("terngrad accumulate: more than " + std::to_string(kMaxContributors) + " contributors");
  }
  std::vector<std::int32_t> ca(a.n), cb(b.n);
  read_codes(a, ca.data());
  read_codes(b, cb.data());
  const auto m = static_cast<std::uint32_t>(contributors);
  const unsigned width = width_for_contributors(m);
  const std::uint32_t mask = width == 32 ? 0xffffffffu : (1u << width) - 1u;
  ByteWriter writer(payload_size(a.n, a.lengths.size(), m));
  write_table(writer, a.n, m, a.lengths, a.scales);
  std::uint8_t* codes = writer.extend(bits::packed_size(a.n, width));
  bits::pack_with(a.n, width, codes, [&](std::size_t i) {
    return static_cast<std::uint32_t>(ca[i] + cb[i]) & mask;
  });
  acc = writer.take();
}

CodecWork TernGradCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode:
      return CodecWork::memory(8 * n + bytes) + CodecWork::compute(n * (7 + kFlopsPerRandomNumber));
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::compute(n);
    case CodecOp::kAccumulate: return CodecWork::memory(3 * bytes) + CodecWork::compute(2 * n);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
