#include "codecs/HalfPrecisionCodec.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/WireFormat.h"

namespace gradwire {

namespace {

// ATen's conversion kernels (vectorised) work in place on the payload when it is 2-byte
// aligned and the host is little-endian; otherwise a scalar loop does the same rounding.
bool aten_usable(const void* p) {
#ifdef GRADWIRE_BIG_ENDIAN
  (void)p;
  return false;
#else
  return reinterpret_cast<std::uintptr_t>(p) % 2 == 0;
#endif
}

std::uint16_t to_bits(float f, HalfPrecisionCodec::Format format) {
  return format == HalfPrecisionCodec::Format::kFp16 ? c10::detail::fp16_ieee_from_fp32_value(f)
                                                     : c10::detail::round_to_nearest_even(f);
}

float from_bits(std::uint16_t h, HalfPrecisionCodec::Format format) {
  return format == HalfPrecisionCodec::Format::kFp16 ? c10::detail::fp16_ieee_to_fp32_value(h)
                                                     : c10::detail::f32_from_bits(h);
}

inline std::uint16_t load_u16_le(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
inline void store_u16_le(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}

}  // namespace

std::uint64_t HalfPrecisionCodec::read(ByteSpan payload, const std::uint8_t** values) const {
  ByteReader reader(payload, name() + " payload");
  const std::uint64_t n = read_header(reader, id(), name(), kFormatVersion).numel;
  *values = reader.take(n, 2, "values");
  reader.expect_end();
  return n;
}

Bytes HalfPrecisionCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  ByteWriter writer(payload_size(n));
  write_header(writer, id(), kFormatVersion, n);
  std::uint8_t* dst = writer.extend(2 * n);
  const auto dtype = format_ == Format::kFp16 ? torch::kHalf : torch::kBFloat16;
  if (n > 0 && aten_usable(dst)) {
    torch::from_blob(dst, {static_cast<std::int64_t>(n)}, torch::TensorOptions().dtype(dtype)).copy_(grad);
  } else {
    const float* x = grad.data_ptr<float>();
    for (std::uint64_t i = 0; i < n; ++i) store_u16_le(dst + 2 * i, to_bits(x[i], format_));
  }
  return writer.take();
}

torch::Tensor HalfPrecisionCodec::decode(ByteSpan payload) const {
  const std::uint8_t* values = nullptr;
  const std::uint64_t n = read(payload, &values);
  const auto dtype = format_ == Format::kFp16 ? torch::kHalf : torch::kBFloat16;
  if (n > 0 && aten_usable(values)) {
    // from_blob does not own or modify the bytes; to() allocates the float32 result.
    return torch::from_blob(const_cast<std::uint8_t*>(values), {static_cast<std::int64_t>(n)},
                            torch::TensorOptions().dtype(dtype))
        .to(torch::kFloat);
  }
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  for (std::uint64_t i = 0; i < n; ++i) dst[i] = from_bits(load_u16_le(values + 2 * i), format_);
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
  // Sum in float32, round once to 16 bits (what ATen's half/bfloat16 add does too).
  for (std::uint64_t i = 0; i < na; ++i) {
    const float sum = from_bits(load_u16_le(a + 2 * i), format_) + from_bits(load_u16_le(b + 2 * i), format_);
    store_u16_le(a + 2 * i, to_bits(sum, format_));
  }
}

LossTolerance HalfPrecisionCodec::loss_tolerance() const { return {kPayloadHeaderSize, 2}; }

}  // namespace gradwire
