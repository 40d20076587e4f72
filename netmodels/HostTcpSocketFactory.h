// The stream-socket factory of a host whose transmissions the network follows
// (SmallQueuesTcpSocket::FollowDevice): it makes the host's TCP sockets SmallQueuesTcpSocket,
// or OffloadTcpSocket where its link offloads segments, set up as ns-3's TcpL4Protocol sets up
// its own (the protocol's congestion control, recovery and RTT estimator types). ns-3.37's
// TcpL4Protocol always makes a TcpSocketBase, so each network, as the last step of building
// itself, aggregates this factory to each such host (FollowHostQueues), and applications open
// their TCP sockets through CreateTcpSocket.
#pragma once

#include <cstdint>

#include <ns3/socket-factory.h>
#include <ns3/socket.h>

namespace gradwire {

class Network;

class HostTcpSocketFactory : public ns3::SocketFactory {
 public:
  static ns3::TypeId GetTypeId();
  /// `max_segment_frames`: most frames a super-segment of this host's sockets carries (the
  /// link's offload size; 1: no offload).
  explicit HostTcpSocketFactory(std::uint32_t max_segment_frames)
      : max_segment_frames_(max_segment_frames) {}
  ns3::Ptr<ns3::Socket> CreateSocket() override;

  /// A TCP socket on `node`: this factory's where the node has it, else ns-3's.
  static ns3::Ptr<ns3::Socket> CreateTcpSocket(ns3::Ptr<ns3::Node> node);

  /// Follows every host's devices (SmallQueuesTcpSocket::FollowDevice) and gives each host
  /// with a followed device this factory (keeping an offloading host's), so that its sockets
  /// keep small queues below them. Hosts without one (LTE UEs, Wi-Fi stations) keep ns-3's
  /// sockets.
  static void FollowHostQueues(const Network& network);

 private:
  std::uint32_t max_segment_frames_;
};

}  // namespace gradwire
