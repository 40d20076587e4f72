// One application-level message between hosts, and its framing on a TCP byte stream.
//
// Frame (little-endian, 32 bytes then the payload):
//   u32 magic 0x534D5747 ("GWMS") | u32 source host | u32 kind | u32 round | u64 step |
//   u64 payload length | payload bytes
// TCP delivers a byte stream, so the receiver reassembles frames from whatever segments
// arrived; a frame is handed over only when its last byte is in.
#pragma once

#include <cstdint>
#include <vector>

#include "common/LossTolerance.h"

namespace gradwire {

struct Message {
  std::uint32_t source = 0;  ///< sending host index
  std::uint32_t kind = 0;    ///< protocol-defined (collectives number their message kinds)
  std::uint32_t round = 0;   ///< sub-step within a step (ring hop, PowerSGD round, ...)
  std::uint64_t step = 0;    ///< training step the message belongs to (top 16 bits: the
                             ///< channel, nodes/transport/EndpointChannels.h)
  std::vector<std::uint8_t> payload;
  /// What the UDP transport may lose of `payload` (a codec's declaration for gradient
  /// payloads; nothing for parameters and control messages). Not part of the TCP frame.
  LossTolerance loss;
};

constexpr std::uint32_t kFrameMagic = 0x534D5747u;
constexpr std::size_t kFrameHeaderBytes = 32;
/// Frames claiming more than this are treated as corrupt stream state.
constexpr std::uint64_t kMaxFramePayload = std::uint64_t{1} << 36;

/// Writes the frame header of `message` (kFrameHeaderBytes) to `out`.
void write_frame_header(const Message& message, std::uint8_t* out);
/// Appends the frame of `message` to `out`.
void append_frame(const Message& message, std::vector<std::uint8_t>& out);

}  // namespace gradwire
