#include "codecs/ZstdStage.h"

#include <stdexcept>

#include <torch/types.h>
#include <zstd.h>

#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "zstd payload";

const Codec& non_null(const std::unique_ptr<Codec>& inner) {
  if (!inner) throw std::invalid_argument("ZstdStage: inner codec is null");
  return *inner;
}

/// The inner codec's name and momentum; compressed bytes neither add nor survive a lost byte,
/// and the stage compresses on the host.
CodecTraits zstd_traits(const Codec& inner) {
  CodecTraits t;
  t.name = inner.name();
  t.applies_momentum = inner.traits().applies_momentum;
  return t;
}
}  // namespace

ZstdStage::ZstdStage(std::unique_ptr<Codec> inner, std::uint64_t max_elements)
    : Codec(zstd_traits(non_null(inner)), non_null(inner)),
      inner_(std::move(inner)),
      max_elements_(max_elements) {}

Bytes ZstdStage::compress(const Bytes& inner_payload) const {
  const PayloadHeader h = peek_header(ByteSpan(inner_payload));
  const std::size_t bound = ZSTD_compressBound(inner_payload.size());
  ByteWriter w(kPayloadHeaderSize + 4 + bound);
  write_header(w, CodecId::kZstd, kFormatVersion, h.numel);
  w.u32(static_cast<std::uint32_t>(inner_payload.size()));
  const std::size_t before = w.size();
  std::uint8_t* dst = w.extend(bound);
  const std::size_t written =
      ZSTD_compress(dst, bound, inner_payload.data(), inner_payload.size(), kLevel);
  if (ZSTD_isError(written)) {
    throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(written));
  }
  Bytes out = w.take();
  out.resize(before + written);
  return out;
}

Bytes ZstdStage::decompress(ByteSpan payload) const {
  ByteReader r(payload, kWhat);
  const PayloadHeader h = read_header(r, CodecId::kZstd, "zstd", kFormatVersion);
  if (h.numel > max_elements_) {
    r.fail("element count " + std::to_string(h.numel) + " exceeds this decoder's limit of " +
           std::to_string(max_elements_));
  }
  const std::uint64_t size = r.u32("inner payload size");
  // No codec writes more than ~16 bytes per element plus a small fixed part.
  const std::uint64_t limit = 1024 + 16 * h.numel;
  if (size > limit) {
    r.fail("inner payload size " + std::to_string(size) + " is implausible for " +
           std::to_string(h.numel) + " elements (limit " + std::to_string(limit) + ")");
  }
  const std::size_t frame_size = r.remaining();
  const std::uint8_t* frame = r.take(frame_size, 1, "zstd frame");
  const unsigned long long stated = ZSTD_getFrameContentSize(frame, frame_size);
  if (stated == ZSTD_CONTENTSIZE_ERROR || stated == ZSTD_CONTENTSIZE_UNKNOWN) {
    r.fail("not a zstd frame with a stated content size");
  }
  if (stated != size) {
    r.fail("zstd frame states " + std::to_string(stated) + " bytes, header says " + std::to_string(size));
  }
  const std::size_t exact = ZSTD_findFrameCompressedSize(frame, frame_size);
  if (ZSTD_isError(exact) || exact != frame_size) {
    r.fail("zstd frame is truncated or followed by extra bytes");
  }
  Bytes inner(static_cast<std::size_t>(size));
  const std::size_t got = ZSTD_decompress(inner.data(), inner.size(), frame, frame_size);
  if (ZSTD_isError(got)) r.fail(std::string("zstd frame is corrupt: ") + ZSTD_getErrorName(got));
  if (got != size) r.fail("zstd frame decompressed to " + std::to_string(got) + " bytes, expected " + std::to_string(size));
  const PayloadHeader ih = peek_header(ByteSpan(inner));
  if (ih.numel != h.numel) {
    r.fail("inner payload states " + std::to_string(ih.numel) + " elements, outer header " +
           std::to_string(h.numel));
  }
  return inner;
}

torch::Tensor ZstdStage::finalize(torch::Tensor sum, int workers) const {
  return inner_->finalize(std::move(sum), workers);
}

torch::Tensor ZstdStage::decode(ByteSpan payload) const {
  const Bytes inner = decompress(payload);
  return inner_->decode(ByteSpan(inner));
}

std::vector<Bytes> ZstdStage::encode_chunks(const torch::Tensor& grad,
                                            const std::vector<std::int64_t>& bounds) {
  std::vector<Bytes> out = inner_->encode_chunks(grad, bounds);
  last_inner_bytes_ = 0;
  last_outer_bytes_ = 0;
  for (Bytes& b : out) {
    last_inner_bytes_ += b.size();
    b = compress(b);
    last_outer_bytes_ += b.size();
  }
  return out;
}

Bytes ZstdStage::encode(const torch::Tensor& grad) {
  const Bytes inner = inner_->encode(grad);
  Bytes out = compress(inner);
  last_inner_bytes_ = inner.size();
  last_outer_bytes_ = out.size();
  return out;
}

CodecWork ZstdStage::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double outer = static_cast<double>(payload_bytes);
  const double ratio = last_outer_bytes_ > 0 ? static_cast<double>(last_inner_bytes_) /
                                                   static_cast<double>(last_outer_bytes_)
                                             : 1.0;
  const double inner = op == CodecOp::kEncode && last_outer_bytes_ == payload_bytes
                           ? static_cast<double>(last_inner_bytes_)
                           : outer * ratio;
  const auto inner_bytes = static_cast<std::uint64_t>(inner);
  switch (op) {
    case CodecOp::kEncode:
      return inner_->work(op, numel, inner_bytes) + CodecWork::memory(inner + outer) +
             CodecWork::compute(kZstdCompressOpsPerByte * inner);
    case CodecOp::kDecode:
      return inner_->work(op, numel, inner_bytes) + CodecWork::memory(inner + outer) +
             CodecWork::compute(kZstdDecompressOpsPerByte * inner);
    case CodecOp::kAccumulate: return Codec::work(op, numel, payload_bytes);
    default: return inner_->work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
