#include "codecs/CodecCallLog.h"

#include <algorithm>

#include "codecs/wire/WireFormat.h"

namespace gradwire {

PayloadShape PayloadShape::of(ByteSpan payload) {
  PayloadShape shape;
  shape.bytes = payload.size;
  const std::size_t head = std::min<std::size_t>(payload.size, kPayloadHeaderSize);
  shape.head.assign(payload.data, payload.data + head);
  return shape;
}

Bytes PayloadShape::materialise() const {
  Bytes out(static_cast<std::size_t>(bytes), 0);
  std::copy(head.begin(), head.end(), out.begin());
  return out;
}

void CodecCallLog::add_stateless_work(CodecOp op, std::int64_t numel, std::uint64_t bytes,
                                      const CodecWork& w) {
  const WorkKey key{static_cast<std::uint8_t>(op), numel, bytes};
  const auto [it, added] = stateless_work.emplace(key, w);
  if (!added && !(it->second == w)) ambiguous_work = true;
}

void CodecCallLog::add_decoded(ByteSpan payload, std::int64_t numel) {
  if (static_cast<std::uint64_t>(numel) == peek_header(payload).numel) return;
  const PayloadShape shape = PayloadShape::of(payload);
  const auto [it, added] = decoded_numel.emplace(std::make_pair(shape.bytes, shape.head), numel);
  // One size and header, two lengths: the length is not in what a replay keeps of a payload.
  if (!added && it->second != numel) it->second = -1;
}

std::int64_t CodecCallLog::decoded(ByteSpan payload) const {
  const PayloadShape shape = PayloadShape::of(payload);
  const auto it = decoded_numel.find({shape.bytes, shape.head});
  if (it != decoded_numel.end()) {
    if (it->second < 0) {
      throw ReplayMismatch("payloads of " + std::to_string(shape.bytes) +
                           " bytes with one header decoded to different lengths in the recorded "
                           "run: their length is not in what the trace keeps of them");
    }
    return it->second;
  }
  return static_cast<std::int64_t>(peek_header(payload).numel);
}

CodecWork CodecCallLog::stateless(CodecOp op, std::int64_t numel, std::uint64_t bytes) const {
  const auto it = stateless_work.find(WorkKey{static_cast<std::uint8_t>(op), numel, bytes});
  if (it == stateless_work.end()) {
    throw ReplayMismatch(std::string("the trace holds no declared work for a ") +
                         codec_op_name(op) + " of " + std::to_string(numel) + " elements and " +
                         std::to_string(bytes) + " payload bytes");
  }
  return it->second;
}

}  // namespace gradwire
