// Which bytes of a payload a lossy transport may lose. The UDP transport (nodes/transport/DatagramTransport)
// cuts a message into datagrams; datagrams that start at or after `from` are sent once and, if
// lost, arrive as zero bytes. A codec declares this only when zero bytes there decode to zero
// at exactly the elements they held (dense fp32, fp16, random-k values), so a lost datagram is
// lost gradient information and nothing worse. Everything before `from` (the header) is
// retransmitted until it arrives, as is every byte of a payload that declares no tolerance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace gradwire {

struct LossTolerance {
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
  /// First byte that may be lost; kNone: the payload must arrive whole.
  std::uint64_t from = kNone;
  /// Size of one element after `from`: datagram cuts fall on element boundaries, so a lost
  /// datagram never leaves half a float behind.
  std::uint32_t element_bytes = 1;

  bool tolerant() const { return from != kNone; }
};

}  // namespace gradwire
