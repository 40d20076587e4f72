#include "codecs/quantize/HalfPrecisionCodec.h"

#include <algorithm>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/wire/HalfConversion.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

void to_half(HalfPrecisionCodec::Format format, const float* src, std::uint64_t n, std::uint8_t* dst) {
  if (format == HalfPrecisionCodec::Format::kFp16) {
    floats_to_fp16(src, n, dst);
  } else {
    floats_to_bf16(src, n, dst);
  }
}

void from_half(HalfPrecisionCodec::Format format, const std::uint8_t* src, std::uint64_t n, float* dst) {
  if (format == HalfPrecisionCodec::Format::kFp16) {
    fp16_to_floats(src, n, dst);
  } else {
    bf16_to_floats(src, n, dst);
  }
}

// A half or bfloat16 tensor's 16-bit words to and from little-endian payload bytes.
void copy_half_words(const torch::Tensor& half, std::uint64_t n, std::uint8_t* dst) {
  const auto* words = static_cast<const std::uint16_t*>(half.data_ptr());
  for (std::uint64_t i = 0; i < n; ++i) {
    dst[2 * i] = static_cast<std::uint8_t>(words[i] & 0xff);
    dst[2 * i + 1] = static_cast<std::uint8_t>(words[i] >> 8);
  }
}

void load_half_words(const std::uint8_t* src, std::uint64_t n, torch::Tensor& half) {
  auto* words = static_cast<std::uint16_t*>(half.data_ptr());
  for (std::uint64_t i = 0; i < n; ++i) {
    words[i] = static_cast<std::uint16_t>(src[2 * i] | (std::uint16_t{src[2 * i + 1]} << 8));
  }
}

CodecTraits half_traits(HalfPrecisionCodec::Format format) {
  CodecTraits t;
  t.name = format == HalfPrecisionCodec::Format::kFp16 ? "fp16" : "bf16";
  t.aggregation = Aggregation::kSummable;
  t.encodes_on_device = true;
  t.loss_tolerance = {kPayloadHeaderSize, 2};
  return t;
}

}  // namespace

HalfPrecisionCodec::HalfPrecisionCodec(Format format) : Codec(half_traits(format)), format_(format) {}

std::uint64_t HalfPrecisionCodec::read(ByteSpan payload, const std::uint8_t** values) const {
  ByteReader reader(payload, name() + " payload");
  const std::uint64_t n = read_header(reader, id(), name(), kFormatVersion).numel;
  *values = reader.take(n, 2, "values");
  reader.expect_end();
  return n;
}

Bytes HalfPrecisionCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " encode", /*on_device=*/true);
  if (!grad.device().is_cpu()) return encode_with_tensor_ops(grad);
  const auto n = static_cast<std::uint64_t>(grad.numel());
  ByteWriter writer(payload_size(n));
  write_header(writer, id(), kFormatVersion, n);
  std::uint8_t* dst = writer.extend(2 * n);
  to_half(format_, grad.data_ptr<float>(), n, dst);
  return writer.take();
}

Bytes HalfPrecisionCodec::encode_with_tensor_ops(const torch::Tensor& grad) const {
  const auto n = static_cast<std::uint64_t>(grad.numel());
  ByteWriter writer(payload_size(n));
  write_header(writer, id(), kFormatVersion, n);
  // LibTorch rounds to nearest, ties to even, as to_half does. NaN is the one value whose
  // bits it writes otherwise (CUDA gives 0x7fff): the host's quiet NaN replaces it, with the
  // sign for fp16 (0x7e00 | sign, as the F16C instruction) and without for bf16 (0x7fc0).
  torch::Tensor words = grad.to(torch_type()).view(torch::kShort);
  const torch::Tensor nan = grad.isnan();
  torch::Tensor quiet = torch::full_like(words, format_ == Format::kFp16 ? 0x7e00 : 0x7fc0);
  if (format_ == Format::kFp16) {
    quiet.masked_fill_(grad.view(torch::kInt) < 0, static_cast<std::int16_t>(0xfe00 - 0x10000));
  }
  words = torch::where(nan, quiet, words).to(torch::kCPU).contiguous();
  copy_half_words(words, n, writer.extend(2 * n));
  return writer.take();
}

torch::Tensor HalfPrecisionCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  if (device.is_cpu()) return decode(payload);
  const std::uint8_t* values = nullptr;
  const std::uint64_t n = read(payload, &values);
  torch::Tensor half = torch::empty({static_cast<std::int64_t>(n)}, torch_type());
  load_half_words(values, n, half);
  // Widening is exact, so converting on the accelerator gives decode()'s values.
  return half.to(device).to(torch::kFloat);
}

c10::ScalarType HalfPrecisionCodec::torch_type() const {
  return format_ == Format::kFp16 ? torch::kHalf : torch::kBFloat16;
}

torch::Tensor HalfPrecisionCodec::decode(ByteSpan payload) const {
  const std::uint8_t* values = nullptr;
  const std::uint64_t n = read(payload, &values);
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  from_half(format_, values, n, out.data_ptr<float>());
  return out;
}

void HalfPrecisionCodec::accumulate(Bytes& acc, ByteSpan other) const {
  const std::uint8_t* b = nullptr;
  const std::uint8_t* a_const = nullptr;
  const std::uint64_t nb = read(other, &b);
  const std::uint64_t na = read(ByteSpan(acc), &a_const);
  if (na != nb) {
    throw DecodeError(name() + " accumulate: payloads describe different sizes: " +
                      std::to_string(na) + " vs " + std::to_string(nb) + " elements");
  }
  std::uint8_t* a = acc.data() + kPayloadHeaderSize;
  // Sum in float32, round once to 16 bits (what ATen's half/bfloat16 add does too), block by
  // block so both operands stay in L1.
  constexpr std::uint64_t kBlock = 2048;
  float fa[kBlock], fb[kBlock];
  for (std::uint64_t i = 0; i < na; i += kBlock) {
    const std::uint64_t m = std::min(kBlock, na - i);
    from_half(format_, a + 2 * i, m, fa);
    from_half(format_, b + 2 * i, m, fb);
    for (std::uint64_t j = 0; j < m; ++j) fa[j] += fb[j];
    to_half(format_, fa, m, a + 2 * i);
  }
}

CodecWork HalfPrecisionCodec::work(CodecOp op, std::int64_t numel,
                                   std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode: return CodecWork::memory(4 * n + bytes) + CodecWork::compute(n);
    case CodecOp::kDecode: return CodecWork::memory(bytes + 4 * n) + CodecWork::compute(n);
    case CodecOp::kAccumulate: return CodecWork::memory(3 * bytes) + CodecWork::compute(4 * n);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
