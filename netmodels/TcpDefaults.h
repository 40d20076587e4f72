// ns-3 TCP defaults derived from the link MTU. ns-3's SegmentSize defaults to 536 bytes, which
// makes every Ethernet transfer several percent slower than the real thing and multiplies the
// number of simulated packets; real stacks use MTU - IP/TCP headers.
#pragma once

#include <cstdint>

namespace gradwire {

/// IPv4 (20) + TCP (20) + timestamp option (12, on by default in ns-3 and Linux).
constexpr std::uint32_t kTcpIpHeaderBytes = 52;

/// Applies SegmentSize = mtu - 52 and the send/receive buffer sizes to sockets created later.
/// TCP's segment is one frame's payload with segment offload too (OffloadTcpSocket).
void apply_tcp_defaults(std::uint32_t mtu, std::uint32_t buffer_bytes);

}  // namespace gradwire
