// The UDP transport's datagram format and how a message is cut into datagrams.
//
// Every datagram starts with the same 60-byte little-endian header:
//   u32 magic 0x47445747 ("GWDG") | u8 type | u8 version (1) | u16 zero |
//   u32 source host | u32 message id (per source -> destination, from 0) |
//   u32 kind | u32 round | u64 step | u64 payload length | u64 lossy_from |
//   u32 element bytes | u32 fragment data bytes (the cut size) | u32 index
// then, by type:
//   kData: the payload bytes of fragment `index` (offsets follow from the plan below);
//   kEnd:  nothing — "every fragment of this message has been sent" (index: how many times);
//   kAck:  nothing — "the message is complete or given up; stop sending it";
//   kNack: u32 count, then `count` pairs (u32 first fragment, u32 number of fragments) that
//          the receiver still needs.
// A receiver derives the cuts from the header alone (fragment_plan), so every datagram can
// be checked on its own: a wrong offset, size or header never reaches a buffer.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/LossTolerance.h"
#include "nodes/transport/Message.h"

namespace gradwire {

constexpr std::uint32_t kDatagramMagic = 0x47445747u;
constexpr std::uint8_t kDatagramVersion = 1;
constexpr std::size_t kDatagramHeaderBytes = 60;
/// IPv4 (20) + UDP (8) headers in front of every datagram.
constexpr std::uint32_t kUdpIpHeaderBytes = 28;

enum class DatagramType : std::uint8_t { kData = 1, kEnd = 2, kAck = 3, kNack = 4 };

struct DatagramHeader {
  DatagramType type = DatagramType::kData;
  std::uint32_t source = 0;
  std::uint32_t message_id = 0;
  std::uint32_t kind = 0;
  std::uint32_t round = 0;
  std::uint64_t step = 0;
  std::uint64_t payload_length = 0;
  std::uint64_t lossy_from = LossTolerance::kNone;
  std::uint32_t element_bytes = 1;
  std::uint32_t fragment_bytes = 0;
  std::uint32_t index = 0;

  /// True when both describe the same message (every field but type and index).
  bool same_message(const DatagramHeader& other) const;
};

/// One cut of a payload: bytes [offset, offset + size); `reliable` when it starts before
/// lossy_from (it holds header bytes the codec cannot lose).
struct Fragment {
  std::uint64_t offset = 0;
  std::uint32_t size = 0;
  bool reliable = true;
};

/// Cuts `length` bytes into fragments of at most `fragment_bytes`; one cut falls at
/// `lossy_from` (no fragment mixes reliable and loss-tolerant bytes) and past it every cut
/// falls on a multiple of `element_bytes` from lossy_from. An empty payload is one empty
/// fragment (a message always has at least one datagram). Throws std::invalid_argument when
/// the parameters cannot describe a real message (checked first by parse_datagram).
std::vector<Fragment> fragment_plan(std::uint64_t length, std::uint64_t lossy_from,
                                    std::uint32_t element_bytes, std::uint32_t fragment_bytes);

/// Writes the header followed by `body` (data bytes or NACK ranges).
std::vector<std::uint8_t> build_datagram(const DatagramHeader& header, const std::uint8_t* body,
                                         std::size_t body_size);

/// A parsed datagram: header and a view of its body inside the caller's buffer.
struct ParsedDatagram {
  DatagramHeader header;
  const std::uint8_t* body = nullptr;
  std::size_t body_size = 0;
};

/// Parses and validates a datagram: magic, version, type, sizes that a real message can have
/// (`max_payload` bounds what a header may make a receiver allocate), a body that matches the
/// type. Throws FrameError (nodes/transport/FrameReader.h) on anything else; never reads out of bounds.
ParsedDatagram parse_datagram(const std::uint8_t* data, std::size_t size,
                              std::uint64_t max_payload);

/// NACK body: (first, count) ranges of fragment indices; at most what fits `max_body` bytes.
std::vector<std::uint8_t> encode_ranges(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& ranges,
                                        std::size_t max_body);
/// Reads a NACK body; every range must lie within [0, fragment_count). FrameError otherwise.
std::vector<std::pair<std::uint32_t, std::uint32_t>> decode_ranges(const std::uint8_t* body,
                                                                   std::size_t size,
                                                                   std::uint32_t fragment_count);

}  // namespace gradwire
