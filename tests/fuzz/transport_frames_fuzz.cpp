// libFuzzer target: the transport's framing of messages (nodes/transport): the TCP frame
// stream (FrameReader) and the UDP datagrams (parse_datagram, fragment_plan, NACK ranges).
// The first byte picks the parser; the rest is what arrived from the network.
//
// What must hold: malformed bytes raise FrameError and nothing else. Every frame FrameReader
// hands over re-frames to exactly the bytes it consumed, whatever pieces the stream came in.
// A datagram parse_datagram accepts has a header fragment_plan can cut (its documented
// precondition), an index and body that the receiver can check against that plan, and
// rebuilds to the same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nodes/transport/Datagram.h"
#include "nodes/transport/FrameReader.h"
#include "nodes/transport/Message.h"

namespace {

using namespace gradwire;

/// What the fuzzer may make a datagram announce. The UDP transport accepts up to
/// kMaxFramePayload; the plan and the reassembly buffer of such a message are that large, so the
/// parser's checks are exercised here below a size this process can allocate.
constexpr std::uint64_t kFuzzMaxPayload = std::uint64_t{1} << 24;

void frame_stream(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  // The stream arrives in pieces of one size (1..64 bytes), as TCP segments would cut it.
  const std::size_t piece = data[0] % 64 + 1;
  ++data;
  --size;
  FrameReader reader;
  std::vector<std::uint8_t> reframed;
  std::size_t fed = 0;
  try {
    while (fed < size) {
      const std::size_t n = std::min(piece, size - fed);
      reader.feed(data + fed, n, [&](Message&& m) { append_frame(m, reframed); });
      fed += n;
    }
  } catch (const FrameError&) {
    return;  // a corrupt stream: the connection is given up
  }
  if (reframed.size() + reader.pending() != size) std::abort();
  if (!reframed.empty() && std::memcmp(reframed.data(), data, reframed.size()) != 0) std::abort();
}

void datagram(const std::uint8_t* data, std::size_t size) {
  ParsedDatagram d;
  try {
    d = parse_datagram(data, size, kFuzzMaxPayload);
  } catch (const FrameError&) {
    return;
  }
  const DatagramHeader& h = d.header;
  if (d.body_size > size || d.body + d.body_size != data + size) std::abort();
  // Throws std::invalid_argument only for headers parse_datagram must have refused.
  const std::vector<Fragment> plan =
      fragment_plan(h.payload_length, h.lossy_from, h.element_bytes, h.fragment_bytes);
  std::uint64_t covered = 0;
  for (const Fragment& f : plan) {
    if (f.offset != covered || f.size > h.fragment_bytes) std::abort();
    covered += f.size;
  }
  if (covered != h.payload_length) std::abort();
  if (h.type == DatagramType::kNack) {
    try {
      for (const auto& [first, count] : decode_ranges(d.body, d.body_size,
                                                      static_cast<std::uint32_t>(plan.size()))) {
        if (count == 0 || first >= plan.size() || count > plan.size() - first) std::abort();
      }
    } catch (const FrameError&) {
    }
  }
  const std::vector<std::uint8_t> rebuilt = build_datagram(h, d.body, d.body_size);
  // The reserved u16 is not kept; everything else must survive.
  if (rebuilt.size() != size || std::memcmp(rebuilt.data(), data, 6) != 0 ||
      std::memcmp(rebuilt.data() + 8, data + 8, size - 8) != 0) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    frame_stream(data + 1, size - 1);
  } else {
    datagram(data + 1, size - 1);
  }
  return 0;
}
