#include "codecs/DenseCodec.h"

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {

constexpr const char* kWhat = "none (dense) payload";

/// Reads and validates a complete dense payload; returns the element count and where the
/// float32 values start. Sizes are exact: 12 + 4 * numel bytes, nothing trailing.
std::uint64_t read_dense(ByteSpan payload, const std::uint8_t** values) {
  ByteReader reader(payload, kWhat);
  const PayloadHeader h = read_header(reader, CodecId::kDense, "none", DenseCodec::kFormatVersion);
  *values = reader.take(h.numel, 4, "values");
  reader.expect_end();
  return h.numel;
}

CodecTraits dense_traits() {
  CodecTraits t;
  t.name = "none";
  t.aggregation = Aggregation::kSummable;
  t.encodes_on_device = true;
  t.loss_tolerance = {kPayloadHeaderSize, 4};
  return t;
}

}  // namespace

DenseCodec::DenseCodec() : Codec(dense_traits()) {}

Bytes DenseCodec::encode_dense(const torch::Tensor& grad) {
  check_gradient(grad, "none encode", /*on_device=*/true);
  const auto n = static_cast<std::uint64_t>(grad.numel());
  ByteWriter writer(payload_size(n));
  write_header(writer, CodecId::kDense, kFormatVersion, n);
  // On an accelerator the payload is the gradient itself: one copy to the host.
  const torch::Tensor host = grad.device().is_cpu() ? grad : grad.to(torch::kCPU);
  writer.f32_array(host.data_ptr<float>(), n);
  return writer.take();
}

torch::Tensor DenseCodec::decode_dense(ByteSpan payload) {
  const std::uint8_t* values = nullptr;
  const std::uint64_t n = read_dense(payload, &values);
  // The bytes for all n values are present (checked above), so this allocation is bounded by
  // the payload's own size: a corrupt header cannot make us allocate more than we received.
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
#ifdef GRADWIRE_BIG_ENDIAN
  for (std::uint64_t i = 0; i < n; ++i) dst[i] = load_f32_le(values + 4 * i);
#else
  if (n != 0) std::memcpy(dst, values, n * 4);
#endif
  return out;
}

Bytes DenseCodec::encode(const torch::Tensor& grad) { return encode_dense(grad); }

torch::Tensor DenseCodec::decode(ByteSpan payload) const { return decode_dense(payload); }

void DenseCodec::accumulate(Bytes& acc, ByteSpan other) const {
  const std::uint8_t* other_values = nullptr;
  const std::uint8_t* acc_values = nullptr;
  const std::uint64_t n_other = read_dense(other, &other_values);
  const std::uint64_t n_acc = read_dense(ByteSpan(acc), &acc_values);
  if (n_acc != n_other) {
    throw DecodeError("none (dense) accumulate: payloads describe different sizes: " +
                      std::to_string(n_acc) + " vs " + std::to_string(n_other) + " elements");
  }
  // acc's values start at a fixed offset inside acc; write through a mutable pointer to it.
  std::uint8_t* dst = acc.data() + kPayloadHeaderSize;
  // Unaligned-safe loads/stores; compiles to a vectorised add on little-endian hosts.
  add_f32_array_le(dst, other_values, n_acc);
}

}  // namespace gradwire
