#include "codecs/ComposedCodec.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "compose payload";
constexpr std::uint64_t kMaxAddressable = std::uint64_t{1} << 32;  // u32 k and indices

unsigned index_width(std::uint64_t n) { return bits::width_for(n > 0 ? n - 1 : 0); }

/// Fast path for selections in the `topk` wire format (topk and the sparsifiers sharing it):
/// reads (index, value) pairs straight from the payload instead of decoding to a dense
/// tensor and scanning it. Returns false for any other format. Keeps the same rule as the
/// slow path (entries whose value is +0.0 are dropped) and checks what it reads.
bool read_topk_format(const Bytes& payload, std::uint64_t n, std::vector<std::uint32_t>& indices,
                      std::vector<float>& values) {
  if (payload.size() < kPayloadHeaderSize || peek_header(payload).codec != CodecId::kTopK) return false;
  ByteReader reader(payload, "compose selection");
  if (read_header(reader, CodecId::kTopK, "topk", 1).numel != n) reader.fail("element count differs from the gradient");
  const std::uint32_t k = reader.u32("k");
  const std::uint8_t* idx = reader.take(k, 4, "indices");
  const std::uint8_t* val = reader.take(k, 4, "values");
  reader.expect_end();
  indices.reserve(k);
  values.reserve(k);
  std::uint64_t previous = 0;
  for (std::uint32_t j = 0; j < k; ++j) {
    const std::uint32_t i = load_u32_le(idx + 4 * j);
    if (i >= n || (j > 0 && i <= previous)) reader.fail("selection indices out of range or unsorted");
    previous = i;
    const float v = load_f32_le(val + 4 * j);
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    if (b == 0) continue;  // +0.0: decodes to 0 either way
    indices.push_back(i);
    values.push_back(v);
  }
  return true;
}
CodecTraits composed_traits(std::string name, const std::unique_ptr<Codec>& select,
                            const std::unique_ptr<Codec>& quantize) {
  if (!select || !quantize) {
    throw std::invalid_argument("compose: select and quantize codecs are required");
  }
  CodecTraits t;
  t.name = std::move(name);
  t.applies_momentum = select->traits().applies_momentum;
  return t;
}

}  // namespace

ComposedCodec::ComposedCodec(std::string name, std::unique_ptr<Codec> select,
                             std::unique_ptr<Codec> quantize, std::uint64_t max_elements)
    : Codec(composed_traits(std::move(name), select, quantize)),
      select_(std::move(select)),
      quantize_(std::move(quantize)),
      max_elements_(std::min(max_elements, kMaxAddressable)) {}

ComposedCodec::~ComposedCodec() = default;

Bytes ComposedCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, name() + " encode");
  const auto n = static_cast<std::uint64_t>(grad.numel());
  if (n > kMaxAddressable) {
    throw std::invalid_argument(name() + " encode: " + std::to_string(n) +
                                " elements do not fit u32 indices (at most 2^32)");
  }
  const Bytes selection = select_->encode(grad);
  std::vector<std::uint32_t> indices;
  std::vector<float> values;
  last_select_bytes_ = selection.size();
  last_select_decoded_ = !read_topk_format(selection, n, indices, values);
  if (last_select_decoded_) {
    // Any other selection format: decode it and keep the entries that are not +0.0.
    const torch::Tensor selected = select_->decode(selection);
    if (selected.numel() != grad.numel()) {
      throw std::logic_error(name() + ": select codec '" + select_->name() + "' decoded " +
                             std::to_string(selected.numel()) + " elements from " + std::to_string(n));
    }
    const float* v = selected.data_ptr<float>();
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint32_t b;
      std::memcpy(&b, v + i, 4);
      if (b != 0) {
        indices.push_back(static_cast<std::uint32_t>(i));
        values.push_back(v[i]);
      }
    }
  }
  const std::uint64_t k = indices.size();
  set_last_density(n > 0 ? static_cast<double>(k) / static_cast<double>(n) : 1.0);
  const Bytes quantized = quantize_->encode(
      k == 0 ? torch::empty({0}, torch::kFloat)
             : torch::from_blob(values.data(), {static_cast<std::int64_t>(k)}, torch::kFloat));

  last_k_ = k;
  last_quantized_bytes_ = quantized.size();
  const unsigned w = index_width(n);
  ByteWriter writer(kPayloadHeaderSize + 5 + bits::packed_size(k, w) + quantized.size());
  write_header(writer, CodecId::kCompose, kFormatVersion, n);
  writer.u32(static_cast<std::uint32_t>(k));
  writer.u8(static_cast<std::uint8_t>(w));
  bits::pack(indices.data(), k, w, writer.extend(bits::packed_size(k, w)));
  writer.raw(quantized.data(), quantized.size());
  return writer.take();
}

Bytes ComposedCodec::save_state() const {
  CodecState st(name());
  st.put_bytes("select", select_->save_state());
  st.put_bytes("quantize", quantize_->save_state());
  return st.serialize();
}

void ComposedCodec::load_state(ByteSpan state) {
  if (state.size == 0) {
    select_->load_state(ByteSpan());
    quantize_->load_state(ByteSpan());
    return;
  }
  const CodecState st = CodecState::parse(state, name());
  const Bytes select = st.bytes("select");
  const Bytes quantize = st.bytes("quantize");
  select_->load_state(ByteSpan(select));
  quantize_->load_state(ByteSpan(quantize));
}

torch::Tensor ComposedCodec::decode(ByteSpan payload) const {
  ByteReader reader(payload, kWhat);
  const std::uint64_t n = read_header(reader, CodecId::kCompose, "compose", kFormatVersion).numel;
  if (n > max_elements_) {
    reader.fail("element count " + std::to_string(n) + " exceeds this decoder's limit of " +
                std::to_string(max_elements_));
  }
  const std::uint64_t k = reader.u32("k");
  if (k > n) reader.fail("k = " + std::to_string(k) + " exceeds the element count " + std::to_string(n));
  const unsigned w = reader.u8("index width");
  if (w != index_width(n)) {
    reader.fail("index width " + std::to_string(w) + " is not " + std::to_string(index_width(n)) +
                " (the bits of n - 1)");
  }
  const std::uint8_t* packed = reader.take(bits::packed_size(k, w), 1, "indices");
  if (!bits::padding_is_zero(packed, k, w)) reader.fail("non-zero padding bits after the last index");
  const std::size_t nested_at = reader.offset();
  const ByteSpan nested(payload.data + nested_at, payload.size - nested_at);
  const PayloadHeader inner = peek_header(nested);  // DecodeError if truncated / not ours
  if (inner.numel != k) {
    reader.fail("nested " + quantize_->name() + " payload holds " + std::to_string(inner.numel) +
                " values for k = " + std::to_string(k) + " indices");
  }
  const torch::Tensor values = quantize_->decode(nested);  // validates its own bytes
  if (static_cast<std::uint64_t>(values.numel()) != k) {
    reader.fail("nested payload decoded to " + std::to_string(values.numel()) + " values, expected " +
                std::to_string(k));
  }
  std::vector<std::uint32_t> indices(k);
  bits::unpack(packed, k, w, indices.data());
  torch::Tensor out = torch::zeros({static_cast<std::int64_t>(n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  const float* src = values.data_ptr<float>();
  for (std::uint64_t j = 0; j < k; ++j) {
    const std::uint64_t index = indices[j];
    if (index >= n || (j > 0 && index <= indices[j - 1])) {
      reader.fail("index " + std::to_string(index) + " at position " + std::to_string(j) +
                  " is out of range or not strictly increasing");
    }
    dst[index] = src[j];
  }
  return out;
}

CodecWork ComposedCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  const bool encoded = last_select_bytes_ > 0;
  const auto k = static_cast<std::int64_t>(encoded ? last_k_ : static_cast<std::uint64_t>(numel));
  const double kd = static_cast<double>(k);
  const std::uint64_t quantized = encoded ? last_quantized_bytes_ : payload_bytes;
  switch (op) {
    case CodecOp::kEncode:
      // A top-k format selection is read directly; any other is decoded and scanned.
      return select_->work(CodecOp::kEncode, numel, last_select_bytes_) +
             (last_select_decoded_ ? select_->work(CodecOp::kDecode, numel, last_select_bytes_)
                                   : CodecWork{}) +
             CodecWork::memory(4 * n + bytes) + CodecWork::compute(n) + CodecWork::gather(n, kd) +
             quantize_->work(CodecOp::kEncode, k, quantized);
    case CodecOp::kDecode:
      return quantize_->work(CodecOp::kDecode, k, quantized) +
             CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, kd);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
