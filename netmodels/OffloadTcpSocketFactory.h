// The stream-socket factory of a host whose links offload segments: it makes the host's TCP
// sockets OffloadTcpSocket, set up as ns-3's TcpL4Protocol sets up its own (the protocol's
// congestion control, recovery and RTT estimator types). ns-3.37's TcpL4Protocol always makes
// a TcpSocketBase, so the network aggregates this factory to each offloading host, and
// applications open their TCP sockets through CreateTcpSocket.
#pragma once

#include <cstdint>

#include <ns3/socket-factory.h>
#include <ns3/socket.h>

namespace gradwire {

class OffloadTcpSocketFactory : public ns3::SocketFactory {
 public:
  static ns3::TypeId GetTypeId();
  /// `max_segment_frames`: most frames a super-segment of this host's sockets carries (the
  /// link's offload size).
  explicit OffloadTcpSocketFactory(std::uint32_t max_segment_frames)
      : max_segment_frames_(max_segment_frames) {}
  ns3::Ptr<ns3::Socket> CreateSocket() override;

  /// A TCP socket on `node`: an OffloadTcpSocket where the node has this factory, else ns-3's.
  static ns3::Ptr<ns3::Socket> CreateTcpSocket(ns3::Ptr<ns3::Node> node);

 private:
  std::uint32_t max_segment_frames_;
};

}  // namespace gradwire
