#include "nodes/transport/Datagram.h"

#include <stdexcept>
#include <string>

#include "common/ByteIo.h"
#include "nodes/transport/FrameReader.h"

namespace gradwire {

namespace {

bool valid_element_bytes(std::uint32_t e) { return e == 1 || e == 2 || e == 4 || e == 8; }

/// The smallest cut size that still leaves room for a whole element of any supported size.
constexpr std::uint32_t kMinFragmentBytes = 8;
constexpr std::uint32_t kMaxFragmentBytes = 65000;

}  // namespace

bool DatagramHeader::same_message(const DatagramHeader& o) const {
  return source == o.source && message_id == o.message_id && kind == o.kind &&
         round == o.round && step == o.step && payload_length == o.payload_length &&
         lossy_from == o.lossy_from && element_bytes == o.element_bytes &&
         fragment_bytes == o.fragment_bytes;
}

std::vector<Fragment> fragment_plan(std::uint64_t length, std::uint64_t lossy_from,
                                    std::uint32_t element_bytes, std::uint32_t fragment_bytes) {
  if (!valid_element_bytes(element_bytes) || fragment_bytes < kMinFragmentBytes ||
      fragment_bytes > kMaxFragmentBytes) {
    throw std::invalid_argument("fragment_plan: element size " + std::to_string(element_bytes) +
                                ", fragment size " + std::to_string(fragment_bytes));
  }
  std::vector<Fragment> plan;
  plan.reserve(static_cast<std::size_t>(length / fragment_bytes + 2));
  std::uint64_t at = 0;
  do {
    std::uint64_t end = std::min<std::uint64_t>(length, at + fragment_bytes);
    // The reliable head (the codec's header) gets datagrams of its own, so every value
    // datagram is loss-tolerant and a link's loss rate is the rate at which values are lost.
    if (at < lossy_from && end > lossy_from) end = lossy_from;
    // Inside the lossy region a cut must not split an element; fragment_bytes >= 8 >= any
    // element size, so the aligned cut still moves forward.
    if (end < length && end > lossy_from) {
      end = lossy_from + (end - lossy_from) / element_bytes * element_bytes;
      if (end <= at) end = std::min<std::uint64_t>(length, at + element_bytes);
    }
    plan.push_back({at, static_cast<std::uint32_t>(end - at), at < lossy_from});
    at = end;
  } while (at < length);
  return plan;
}

std::vector<std::uint8_t> build_datagram(const DatagramHeader& h, const std::uint8_t* body,
                                         std::size_t body_size) {
  ByteWriter w(kDatagramHeaderBytes + body_size);
  w.u32(kDatagramMagic);
  w.u8(static_cast<std::uint8_t>(h.type));
  w.u8(kDatagramVersion);
  w.u16(0);
  w.u32(h.source);
  w.u32(h.message_id);
  w.u32(h.kind);
  w.u32(h.round);
  w.u64(h.step);
  w.u64(h.payload_length);
  w.u64(h.lossy_from);
  w.u32(h.element_bytes);
  w.u32(h.fragment_bytes);
  w.u32(h.index);
  if (body_size != 0) w.raw(body, body_size);
  return w.take();
}

ParsedDatagram parse_datagram(const std::uint8_t* data, std::size_t size,
                              std::uint64_t max_payload) {
  ParsedDatagram out;
  DatagramHeader& h = out.header;
  try {
    ByteReader r(ByteSpan(data, size), "datagram");
    if (r.u32("magic") != kDatagramMagic) r.fail("bad magic");
    const std::uint8_t type = r.u8("type");
    if (type < 1 || type > 4) r.fail("unknown type " + std::to_string(type));
    h.type = static_cast<DatagramType>(type);
    if (r.u8("version") != kDatagramVersion) r.fail("unsupported version");
    r.u16("reserved");
    h.source = r.u32("source");
    h.message_id = r.u32("message id");
    h.kind = r.u32("kind");
    h.round = r.u32("round");
    h.step = r.u64("step");
    h.payload_length = r.u64("payload length");
    h.lossy_from = r.u64("lossy_from");
    h.element_bytes = r.u32("element bytes");
    h.fragment_bytes = r.u32("fragment bytes");
    h.index = r.u32("index");
    if (h.payload_length > max_payload) r.fail("payload length over the limit");
    if (!valid_element_bytes(h.element_bytes)) r.fail("bad element size");
    if (h.fragment_bytes < kMinFragmentBytes || h.fragment_bytes > kMaxFragmentBytes) {
      r.fail("bad fragment size");
    }
    // Fragments number at most length / (fragment_bytes - 7) + 1 (cuts lose < one element).
    const std::uint64_t max_fragments = h.payload_length / (h.fragment_bytes - 7) + 2;
    if (max_fragments > 0xFFFFFFFFu) r.fail("too many fragments");
    out.body = data + r.offset();
    out.body_size = r.remaining();
    if ((h.type == DatagramType::kEnd || h.type == DatagramType::kAck) && out.body_size != 0) {
      r.fail("unexpected body");
    }
  } catch (const DecodeError& e) {
    throw FrameError(e.what());
  }
  return out;
}

std::vector<std::uint8_t> encode_ranges(
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& ranges, std::size_t max_body) {
  const std::size_t fit = max_body < 4 ? 0 : (max_body - 4) / 8;
  const std::size_t count = std::min(fit, ranges.size());
  ByteWriter w(4 + 8 * count);
  w.u32(static_cast<std::uint32_t>(count));
  for (std::size_t i = 0; i < count; ++i) {
    w.u32(ranges[i].first);
    w.u32(ranges[i].second);
  }
  return w.take();
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> decode_ranges(const std::uint8_t* body,
                                                                   std::size_t size,
                                                                   std::uint32_t fragment_count) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
  try {
    ByteReader r(ByteSpan(body, size), "nack");
    const std::uint32_t count = r.u32("count");
    if (static_cast<std::uint64_t>(count) * 8 != r.remaining()) r.fail("range count mismatch");
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint32_t first = r.u32("first");
      const std::uint32_t n = r.u32("count");
      if (n == 0 || first >= fragment_count || n > fragment_count - first) {
        r.fail("range outside the message");
      }
      ranges.emplace_back(first, n);
    }
  } catch (const DecodeError& e) {
    throw FrameError(e.what());
  }
  return ranges;
}

}  // namespace gradwire
