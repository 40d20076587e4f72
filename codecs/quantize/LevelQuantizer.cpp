#include "codecs/quantize/LevelQuantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/kernels/DitherKernels.h"
#include "codecs/quantize/QuantizerTensorOps.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

/// Bucket size actually written for n elements: the configured one, or the whole tensor.
std::uint32_t effective_bucket(std::uint32_t configured, std::uint64_t n) {
  if (configured != 0) return configured;
  if (n == 0) return 1;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, 0xffffffffu));
}

std::uint64_t bucket_count(std::uint64_t n, std::uint32_t bucket) {
  return n == 0 ? 0 : (n - 1) / bucket + 1;
}

inline std::uint32_t float_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

inline float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// Comparisons of non-negative floats are done on their bit patterns as int32 (the order is
// the same): integer compares and selects vectorise, while float ones are kept as branches
// under GCC's default -ftrapping-math.
inline std::int32_t ordered(float non_negative) { return static_cast<std::int32_t>(float_bits(non_negative)); }

/// min(t, limit) for t >= 0 (NaN, whose bits exceed every finite value's, gives limit).
inline float clamp_ratio(float t, float limit) {
  const std::int32_t tb = ordered(t), lb = ordered(limit);
  return from_bits(static_cast<std::uint32_t>(tb < lb ? tb : lb));
}

// Codes are made and packed this many at a time (a whole default bucket of 512).
constexpr std::uint32_t kChunk = 512;

// QSGD codes for m elements starting at element index `first`: t = |v| scale in [0, s],
// level = floor(t) + [u < t - floor(t)] (P(up) = t - floor(t): unbiased), sign in bit
// `level_bits`.
// Written once as a template over the code type and instantiated in the vector kernels
// below: one byte per code when codes fit 8 bits (the defaults: 4 and 5 bits), so the packer
// can take 8 at a time; 32-bit codes for many levels.
template <typename Code>
inline void uniform_codes(const float* x, std::uint32_t first, std::uint32_t m, float scale, std::uint32_t key,
                          std::uint32_t levels, unsigned level_bits, Code* out) {
  const float fs = static_cast<float>(levels);
  for (std::uint32_t i = 0; i < m; ++i) {
    const float v = x[i];
    // t <= s (a NaN or infinite product clamps to s), so level <= s: at t == s the fraction
    // is 0 and never rounds up.
    const float t = clamp_ratio(std::fabs(v) * scale, fs);
    const auto floor_t = static_cast<std::int32_t>(t);
    const float u = quant::Dither::uniform(key, first + i);
    const std::int32_t level = floor_t + (ordered(u) < ordered(t - static_cast<float>(floor_t)) ? 1 : 0);
    out[i] = static_cast<Code>(static_cast<std::uint32_t>(level) | ((float_bits(v) >> 31) << level_bits));
  }
}

// Natural dithering codes. r = |v| scale in [0, 1]. For r >= 2^(1-s), r = 2^a (1 + f) with f
// the mantissa fraction: the neighbouring levels are 2^a (index a + s) and 2^(a+1), and
// P(up) = (r - 2^a) / 2^a = f, read straight from the float's bits as in natural compression.
// Below 2^(1-s) the neighbours are 0 and 2^(1-s): P(up) = r / 2^(1-s) = r 2^(s-1).
template <typename Code>
inline void power_of_two_codes(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                               std::uint32_t key, std::uint32_t levels, unsigned level_bits, Code* out) {
  const auto s = static_cast<std::int32_t>(levels);
  const float min_level = std::ldexp(1.0f, 1 - s);
  const float below_scale = std::ldexp(1.0f, s - 1);
  for (std::uint32_t i = 0; i < m; ++i) {
    const float v = x[i];
    const float raw = std::fabs(v) * scale;
    const float r = clamp_ratio(raw, 1.0f);
    // Only used below 2^(1-s), where raw == r; computed from raw so the multiply does not sit
    // behind the clamp (GCC would then branch around it and not vectorise).
    const float below_p = raw * below_scale;
    const std::uint32_t rb = float_bits(r);
    const std::uint32_t h = quant::Dither::hash(key, first + i);
    const std::int32_t exponent = static_cast<std::int32_t>(rb >> 23) - 127;
    const std::int32_t up = static_cast<std::int32_t>(static_cast<std::int32_t>(h >> 9) <
                                                      static_cast<std::int32_t>(rb & 0x7fffffu));
    std::int32_t above = exponent + s + up;
    above = above > s ? s : above;
    const float u = static_cast<float>(static_cast<std::int32_t>(h >> 8)) * 0x1p-24f;
    const std::int32_t below = static_cast<std::int32_t>(ordered(u) < ordered(below_p));
    const std::int32_t use_above = -static_cast<std::int32_t>(ordered(r) >= ordered(min_level));
    const std::int32_t level = (above & use_above) | (below & ~use_above);
    out[i] = static_cast<Code>(static_cast<std::uint32_t>(level) | ((float_bits(v) >> 31) << level_bits));
  }
}

/// Codes of m elements: `uniform` picks QSGD's or natural dithering's levels.
template <typename Code>
inline void scheme_codes(bool uniform, const float* x, std::uint32_t first, std::uint32_t m, float scale,
                         std::uint32_t key, std::uint32_t levels, unsigned level_bits, Code* out) {
  if (uniform) {
    uniform_codes(x, first, m, scale, key, levels, level_bits, out);
  } else {
    power_of_two_codes(x, first, m, scale, key, levels, level_bits, out);
  }
}

// The vector kernels: scheme_codes built per instruction set, for byte and 32-bit codes.
GRADWIRE_VECTOR_KERNEL void codes8_portable(bool uniform, const float* x, std::uint32_t first, std::uint32_t m,
                                            float scale, std::uint32_t key, std::uint32_t levels, unsigned level_bits,
                                            std::uint8_t* out) {
  scheme_codes(uniform, x, first, m, scale, key, levels, level_bits, out);
}

GRADWIRE_VECTOR_KERNEL void codes32(bool uniform, const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                    std::uint32_t key, std::uint32_t levels, unsigned level_bits, std::uint32_t* out) {
  scheme_codes(uniform, x, first, m, scale, key, levels, level_bits, out);
}

/// Codes of m elements packed at `width` = level_bits + 1 <= 8 bits into the stream at dst
/// (a whole byte): one byte per code from the AVX-512 / AVX2 kernels where the CPU has them
/// (identical results) and the portable loop for the rest, then packed.
void pack_codes8(bool uniform, const float* x, std::uint32_t first, std::uint32_t m, float scale, std::uint32_t key,
                 std::uint32_t levels, unsigned level_bits, std::uint8_t* dst) {
  std::uint8_t narrow[kChunk];
  const std::uint32_t done = uniform ? quant::uniform_codes_simd(x, first, m, scale, key, levels, level_bits, narrow)
                                     : quant::power_of_two_codes_simd(x, first, m, scale, key, levels, level_bits, narrow);
  if (done < m) {
    codes8_portable(uniform, x + done, first + done, m - done, scale, key, levels, level_bits, narrow + done);
  }
  bits::pack_bytes(narrow, m, level_bits + 1, dst);
}

// Decoded values of m codes: uniform l (norm / s), sign applied by flipping the sign bit.
// Returns the largest level seen (the caller rejects one above s).
GRADWIRE_VECTOR_KERNEL std::uint32_t uniform_values(const std::uint32_t* codes, std::uint32_t m, unsigned level_bits,
                                                    float step, float* out) {
  const std::uint32_t level_mask = (1u << level_bits) - 1u;
  std::uint32_t worst = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    const std::uint32_t level = codes[i] & level_mask;
    worst = level > worst ? level : worst;
    const std::uint32_t bits = float_bits(static_cast<float>(level) * step) ^ ((codes[i] >> level_bits) << 31);
    std::memcpy(out + i, &bits, 4);
  }
  return worst;
}

// Powers of two: 0 for level 0, else norm 2^(l - s).
GRADWIRE_VECTOR_KERNEL std::uint32_t power_of_two_values(const std::uint32_t* codes, std::uint32_t m,
                                                         unsigned level_bits, std::int32_t top, float norm, float* out) {
  const std::uint32_t level_mask = (1u << level_bits) - 1u;
  std::uint32_t worst = 0;
  for (std::uint32_t i = 0; i < m; ++i) {
    const std::uint32_t level = codes[i] & level_mask;
    worst = level > worst ? level : worst;
    // 2^(l - s) built from its exponent bits; l = 0 gives 0. (l - s + 127 >= 64.)
    const std::int32_t e = static_cast<std::int32_t>(level) - top + 127;
    const std::uint32_t factor_bits = level == 0 ? 0u : static_cast<std::uint32_t>(e > 0 ? e : 0) << 23;
    float factor;
    std::memcpy(&factor, &factor_bits, 4);
    const std::uint32_t bits = float_bits(norm * factor) ^ ((codes[i] >> level_bits) << 31);
    std::memcpy(out + i, &bits, 4);
  }
  return worst;
}

CodecTraits level_traits(LevelQuantizer::Levels scheme) {
  CodecTraits t;
  t.name = scheme == LevelQuantizer::Levels::kUniform ? "qsgd" : "natural_dithering";
  // qsgd encodes a gradient on an accelerator with encode_with_tensor_ops.
  t.encodes_on_device = scheme == LevelQuantizer::Levels::kUniform;
  return t;
}

}  // namespace

LevelQuantizer::LevelQuantizer(Levels scheme, std::uint32_t levels, std::uint32_t bucket, Norm norm,
                               std::uint64_t seed, int rank)
    : Codec(level_traits(scheme)),
      scheme_(scheme),
      levels_(levels),
      bucket_(bucket),
      norm_(norm),
      dither_(seed, rank, scheme == Levels::kUniform ? CodecId::kQsgd : CodecId::kNaturalDithering),
      initial_dither_(dither_.state()) {
  if (levels == 0 || levels > max_levels(scheme)) {
    throw std::invalid_argument(name() + ": levels must be in [1, " +
                                std::to_string(max_levels(scheme)) + "], got " +
                                std::to_string(levels));
  }
}

std::size_t LevelQuantizer::payload_size(std::uint64_t n) const {
  const std::uint32_t b = effective_bucket(bucket_, n);
  const unsigned width = bits::width_for(levels_) + 1;
  return kPayloadHeaderSize + 8 + 4 * bucket_count(n, b) + bits::packed_size(n, width);
}

Bytes LevelQuantizer::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " encode", traits().encodes_on_device);
  if (!grad.device().is_cpu()) return encode_with_tensor_ops(grad);
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const std::uint32_t b = effective_bucket(bucket_, n);
  const std::uint64_t nb = bucket_count(n, b);
  const unsigned level_bits = bits::width_for(levels_);
  const unsigned width = level_bits + 1;  // sign in the top bit of each code
  const std::uint32_t key = dither_.next_key();
  const float* x = grad.data_ptr<float>();

  ByteWriter writer(payload_size(n));
  write_header(writer, id(), kFormatVersion, n);
  writer.u32(levels_);
  writer.u32(b);
  std::uint8_t* norms_out = writer.extend(4 * nb);
  std::uint8_t* codes_out = writer.extend(bits::packed_size(n, width));

  const float fs = static_cast<float>(levels_);
  const bool uniform = scheme_ == Levels::kUniform;
  // Norm of a bucket (double accumulation: a whole-tensor bucket can hold millions of
  // elements) and the factor that maps |v| to t (uniform: |v| s / norm) or r (powers of two:
  // |v| / norm). A zero, NaN or overflowing factor sends level 0 everywhere (a NaN norm then
  // still decodes to NaN, as dense would).
  const auto norm_of = [&](const quant::Moments& m) {
    return norm_ == Norm::kL2 ? static_cast<float>(std::sqrt(m.sum_sq))
                              : (m.nan ? std::nanf("") : m.max_abs);
  };
  const auto factor_of = [&](float norm) {
    const float scale = (uniform ? fs : 1.0f) / norm;
    return norm > 0.0f && std::isfinite(scale) ? scale : 0.0f;
  };
  // Codes of [begin, end) with one factor, kChunk at a time into a local array by a loop the
  // compiler vectorises (no captures, no branches), then bit-packed. A chunk starting on a
  // whole byte of the stream is written with plain stores; one starting mid-byte ORs into the
  // byte its predecessor left partly zero (ByteWriter::extend zero-fills).
  const auto codes_of = [&](std::uint64_t begin, std::uint64_t end, float scale) {
    std::uint32_t codes[kChunk];
    for (std::uint64_t c = begin; c < end; c += kChunk) {
      const auto m = static_cast<std::uint32_t>(std::min<std::uint64_t>(kChunk, end - c));
      const std::uint64_t bit = c * width;
      if (scale == 0.0f) {
        // |v| * 0 is 0 (level 0), or NaN for an infinite or NaN v (clamped to level s). Written
        // out because the NaN of inf * 0 carries the sign bit on x86, which the clamp's
        // comparison of bits would take for a small value.
        for (std::uint32_t i = 0; i < m; ++i) {
          const std::uint32_t b = float_bits(x[c + i]);
          const std::uint32_t level = (b & 0x7fffffffu) >= 0x7f800000u ? levels_ : 0u;
          codes[i] = level | ((b >> 31) << level_bits);
        }
        bits::pack_at(codes, m, width, codes_out, bit);
      } else if (width <= 8 && bit % 8 == 0) {
        pack_codes8(uniform, x + c, quant::dither_index(c), m, scale, key, levels_, level_bits, codes_out + bit / 8);
      } else {
        codes32(uniform, x + c, quant::dither_index(c), m, scale, key, levels_, level_bits, codes);
        bits::pack_at(codes, m, width, codes_out, bit);
      }
    }
  };
  // The L2 norm needs only the sum of squares (the same sum moments() would give).
  const auto bucket_norm = [&](const float* p, std::uint64_t len) {
    return norm_ == Norm::kL2 ? static_cast<float>(std::sqrt(quant::sum_squares(p, len)))
                              : norm_of(quant::moments(p, len));
  };

  if (nb == 1) {
    // One bucket (the whole tensor): a norm pass, then the codes, both split over threads
    // on large tensors; pieces start on multiples of 64 elements, i.e. on whole bytes.
    const float norm = norm_of(n >= quant::kParallelMin ? quant::moments_parallel(x, n) : quant::moments(x, n));
    store_f32_le(norms_out, norm);
    const float scale = factor_of(norm);
    quant::parallel_ranges(n, 64, n, [&](std::uint64_t begin, std::uint64_t end) { codes_of(begin, end, scale); });
  } else {
    // One pass: each bucket's norm, then its codes while the bucket is still in L1. Pieces of
    // buckets go to threads on large tensors; they start on whole bytes of the code stream
    // (every bucket does when b * width is a multiple of 8, else every eighth).
    const std::uint64_t align = (static_cast<std::uint64_t>(b) * width) % 8 == 0 ? 1 : 8;
    quant::parallel_ranges(nb, align, n, [&](std::uint64_t first, std::uint64_t last) {
      for (std::uint64_t j = first; j < last; ++j) {
        const std::uint64_t begin = j * b;
        const std::uint64_t end = std::min<std::uint64_t>(n, begin + b);
        const float norm = bucket_norm(x + begin, end - begin);
        store_f32_le(norms_out + 4 * j, norm);
        codes_of(begin, end, factor_of(norm));
      }
    });
  }
  return writer.take();
}

Bytes LevelQuantizer::encode_with_tensor_ops(const torch::Tensor& grad) {
  if (scheme_ != Levels::kUniform) {
    throw std::logic_error(name() + ": only qsgd's uniform levels are encoded with tensor operations");
  }
  const auto n = static_cast<std::uint64_t>(grad.numel());
  const std::uint32_t b = effective_bucket(bucket_, n);
  const std::uint64_t nb = bucket_count(n, b);
  const unsigned level_bits = bits::width_for(levels_);
  const std::uint32_t key = dither_.next_key();
  const auto count = static_cast<std::int64_t>(n);
  const auto rows = static_cast<std::int64_t>(nb);
  const c10::Device device = grad.device();

  ByteWriter writer(payload_size(n));
  write_header(writer, id(), kFormatVersion, n);
  writer.u32(levels_);
  writer.u32(b);
  if (n == 0) return writer.take();

  // Buckets as rows (the last padded with zeros, which add nothing to a norm).
  const torch::Tensor padded = torch::constant_pad_nd(grad, {0, rows * b - count}, 0).view({rows, b});
  torch::Tensor norms = norm_ == Norm::kL2 ? padded.to(torch::kDouble).square().sum(1).sqrt().to(torch::kFloat)
                                           : padded.abs().amax(1);
  // A NaN norm is written as std::nanf(""), whichever NaN the sum or maximum produced.
  norms = torch::where(norms.isnan(), torch::full_like(norms, std::nanf("")), norms);
  const float fs = static_cast<float>(levels_);
  torch::Tensor scale = torch::full_like(norms, fs).div_(norms);
  scale = torch::where(norms.gt(0).logical_and(scale.isfinite()), scale, torch::zeros_like(scale));
  // t = min(|v| scale, s), with a NaN or infinite product clamped to s (the host compares bits).
  torch::Tensor t = padded.abs().mul(scale.unsqueeze(1)).view({-1}).slice(0, 0, count);
  const float limit = fs;
  std::int32_t limit_bits;
  std::memcpy(&limit_bits, &limit, 4);
  // The sign bit is cleared before comparing: inf * 0 may be a NaN with it set.
  t = torch::where(t.view(torch::kInt).bitwise_and(0x7fffffff).lt(limit_bits), t, torch::full_like(t, fs));
  const torch::Tensor floor_t = t.to(torch::kInt);
  const torch::Tensor fraction = t.sub(floor_t.to(torch::kFloat));
  const torch::Tensor u =
      quant::dither_hashes_with_tensor_ops(key, 0, count, device).__rshift__(8).to(torch::kFloat).mul_(0x1p-24f);
  torch::Tensor level = floor_t.to(torch::kLong).add_(u.lt(fraction).to(torch::kLong));
  const torch::Tensor sign = grad.view(torch::kInt).lt(0).to(torch::kLong).__lshift__(static_cast<std::int64_t>(level_bits));
  const torch::Tensor codes = quant::pack_codes_with_tensor_ops(level.bitwise_or_(sign), level_bits + 1);

  const torch::Tensor host_norms = norms.to(torch::kCPU).contiguous();
  writer.f32_array(host_norms.data_ptr<float>(), nb);
  const std::size_t code_bytes = bits::packed_size(n, level_bits + 1);
  std::memcpy(writer.extend(code_bytes), codes.data_ptr<std::uint8_t>(), code_bytes);
  return writer.take();
}

LevelQuantizer::Parsed LevelQuantizer::parse(ByteSpan payload) const {
  const std::string label = name();
  ByteReader reader(payload, label + " payload");
  const PayloadHeader h = read_header(reader, id(), label, kFormatVersion);
  Parsed p;
  p.n = h.numel;
  p.s = reader.u32("levels");
  if (p.s == 0 || p.s > max_levels(scheme_)) {
    reader.fail("levels = " + std::to_string(p.s) + " outside [1, " +
                std::to_string(max_levels(scheme_)) + "]");
  }
  p.b = reader.u32("bucket size");
  if (p.b == 0) reader.fail("bucket size is 0");
  p.nb = bucket_count(p.n, p.b);
  p.level_bits = bits::width_for(p.s);
  const unsigned width = p.level_bits + 1;
  // Exact size before anything is allocated: norms and codes.
  const std::uint64_t need = 4 * p.nb + bits::packed_size(p.n, width);
  if (reader.remaining() != need) {
    reader.fail("size mismatch: " + std::to_string(p.n) + " elements in buckets of " +
                std::to_string(p.b) + " need " + std::to_string(need) + " bytes after offset " +
                std::to_string(reader.offset()) + ", have " + std::to_string(reader.remaining()));
  }
  p.norms = reader.take(p.nb, 4, "norms");
  p.codes = reader.take(bits::packed_size(p.n, width), 1, "codes");
  reader.expect_end();
  if (!bits::padding_is_zero(p.codes, p.n, width)) reader.fail("non-zero padding bits after the last code");
  return p;
}

void LevelQuantizer::reject_level(std::uint32_t worst, std::uint32_t s) const {
  throw DecodeError(name() + " payload: level " + std::to_string(worst) + " exceeds levels = " + std::to_string(s));
}

torch::Tensor LevelQuantizer::decode_to(ByteSpan payload, const c10::Device& device) const {
  if (scheme_ != Levels::kUniform) return Codec::decode_to(payload, device);
  const Parsed p = parse(payload);
  const auto n = static_cast<std::int64_t>(p.n);
  const unsigned width = p.level_bits + 1;
  const auto code_bytes = static_cast<std::int64_t>(bits::packed_size(p.n, width));
  // The payload's norms and codes cross; codes are unpacked and scaled there.
  torch::Tensor packed = torch::empty({code_bytes}, torch::kUInt8);
  if (code_bytes != 0) std::memcpy(packed.data_ptr<std::uint8_t>(), p.codes, static_cast<std::size_t>(code_bytes));
  std::vector<float> steps(p.nb);
  for (std::uint64_t j = 0; j < p.nb; ++j) steps[j] = load_f32_le(p.norms + 4 * j) / static_cast<float>(p.s);
  const auto options = torch::TensorOptions().dtype(torch::kInt).device(device);
  const torch::Tensor stream = packed.to(device).to(torch::kInt).unsqueeze(1)
                                   .__rshift__(torch::arange(8, options)).bitwise_and_(1).view({-1});
  const torch::Tensor codes = stream.slice(0, 0, n * width).view({n, static_cast<std::int64_t>(width)})
                                  .__lshift__(torch::arange(static_cast<std::int64_t>(width), options)).sum(1);
  const torch::Tensor level = codes.bitwise_and((std::int64_t{1} << p.level_bits) - 1);  // sum(): int64
  if (n != 0) {
    const auto worst = static_cast<std::uint32_t>(level.max().item<std::int64_t>());
    if (worst > p.s) reject_level(worst, p.s);
  }
  const torch::Tensor step = torch::tensor(at::ArrayRef<float>(steps), torch::kFloat).to(device)
                                 .repeat_interleave(static_cast<std::int64_t>(p.b)).slice(0, 0, n);
  // l (norm / s), the sign bit set where the code's top bit is (as the host XORs it in).
  const torch::Tensor magnitude = level.to(torch::kFloat).mul(step);
  return torch::where(codes.__rshift__(static_cast<std::int64_t>(p.level_bits)).ne(0), magnitude.neg(), magnitude);
}

torch::Tensor LevelQuantizer::decode(ByteSpan payload) const {
  const Parsed parsed = parse(payload);
  const std::uint64_t n = parsed.n;
  const std::uint32_t s = parsed.s;
  const std::uint32_t b = parsed.b;
  const std::uint64_t nb = parsed.nb;
  const unsigned level_bits = parsed.level_bits;
  const unsigned width = level_bits + 1;
  const std::uint8_t* norms_in = parsed.norms;
  const std::uint8_t* codes_in = parsed.codes;

  // Values: uniform l (norm / s); powers of two 0 and norm 2^(l - s). Decoded kChunk codes at a
  // time with branch-free arithmetic; a level above s is remembered and rejected at the end.
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  const auto top = static_cast<std::int32_t>(s);
  std::uint32_t worst = 0;
  std::uint32_t codes[kChunk];
  std::uint8_t narrow[kChunk];
  for (std::uint64_t j = 0; j < nb; ++j) {
    const std::uint64_t begin = j * b;
    const std::uint64_t end = std::min<std::uint64_t>(n, begin + b);
    const float norm = load_f32_le(norms_in + 4 * j);
    const float step = norm / static_cast<float>(s);
    for (std::uint64_t c = begin; c < end; c += kChunk) {
      const auto m = static_cast<std::uint32_t>(std::min<std::uint64_t>(kChunk, end - c));
      if (width <= 8 && (c * width) % 8 == 0) {
        bits::unpack_bytes(codes_in + c * width / 8, m, width, narrow);
        for (std::uint32_t i = 0; i < m; ++i) codes[i] = narrow[i];
      } else {
        bits::unpack_at(codes_in, m, width, c * width, codes);
      }
      const std::uint32_t w = scheme_ == Levels::kUniform ? uniform_values(codes, m, level_bits, step, dst + c)
                                                          : power_of_two_values(codes, m, level_bits, top, norm, dst + c);
      worst = w > worst ? w : worst;
    }
  }
  if (worst > s) reject_level(worst, s);
  return out;
}

CodecWork LevelQuantizer::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode:
      return CodecWork::memory(8 * n + bytes) +
             CodecWork::compute(n * ((norm_ == Norm::kL2 ? 2 : 1) + 4 + kFlopsPerRandomNumber));
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::compute(2 * n);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
