// ns-3's TCP socket with Linux's TCP Small Queues (TSQ): a socket keeps at most a limited
// number of its own bytes below it, in the host's queues (queue disc and NIC); the rest of what
// its window allows waits in the socket until some of those bytes have left the host. Without
// it, a host's NIC queue holds a whole congestion window of its own data, and the ACKs and
// small messages the host owes others wait behind megabytes of bulk data; in a ring, where
// every host sends and receives, that slows every neighbour's transfer.
//
// The limit is Linux's (net/ipv4/tcp_output.c, tcp_small_queue_check), in bytes of packets
// (headers included) where Linux counts skb truesize:
//
//   limit = min(max(2 segments, pacing rate >> PacingShift), LimitOutputBytes)
//
// - pacing rate: what Linux sets for every TCP socket (tcp_update_pacing_rate), congestion
//   window over smoothed RTT, times 2 in slow start (cwnd below half ssthresh), 1.2 after;
// - PacingShift 10 (about 1 ms of that rate);
// - LimitOutputBytes: net.ipv4.tcp_limit_output_bytes, 4 MiB, Linux 6.x's default.
//
// A socket with more than one segment unacknowledged stops sending new segments while more
// than the limit of its bytes are below it (with one or none, it always sends, as Linux does).
// The window the pacing rate is taken from counts at most twice the bytes in flight in slow
// start and the bytes in flight after it: Linux grows a window only while it limits sending
// (tcp_is_cwnd_limited), ns-3 on every ACK. Its bytes leave the host when the device starts putting them on the wire (Linux
// frees them at transmit completion; a veth with a shaping qdisc, when they leave the qdisc),
// or when the device drops them; a segment acknowledged by the peer has left in any case.
// The socket then resumes at once, as TSQ's tasklet does.
//
// Only hosts whose devices FollowDevice accepted open these sockets (HostTcpSocketFactory):
// wired hosts, on point-to-point and offloading Ethernet devices (Ethernet, an LTE cell's
// server, a hybrid network's wired groups). An LTE UE hands its packets to the modem's RLC
// buffer at once, below which Linux cannot see either. A Wi-Fi station's driver frees frames
// at its own pace (mac80211 when the frame is acknowledged, with a 4 ms shift), which neither
// the emulator's kernel behind a TAP device nor the wireless references this simulation is
// checked against do: both keep ns-3's socket, their MAC queue bounding what they hold.
#pragma once

#include <cstdint>
#include <deque>

#include <ns3/event-id.h>
#include <ns3/net-device.h>
#include <ns3/tcp-socket-base.h>

namespace gradwire {

class SmallQueuesTcpSocket : public ns3::TcpSocketBase {
 public:
  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override;
  SmallQueuesTcpSocket();
  SmallQueuesTcpSocket(const SmallQueuesTcpSocket& other);
  ~SmallQueuesTcpSocket() override;

  /// Follows a host's device: each packet a SmallQueuesTcpSocket sent through it is credited
  /// back to its socket when the device starts transmitting it or drops it (or its queue disc
  /// drops it, or netem takes it to delay it). False when the device is not a wired one (its
  /// host then keeps ns-3's socket).
  static bool FollowDevice(ns3::Ptr<ns3::NetDevice> device);
  /// A followed device transmitted or dropped `packet`: its socket, if any, is credited.
  static void PacketLeftHost(ns3::Ptr<const ns3::Packet> packet);

  /// Bytes of this socket's segments still in its host's queues.
  std::uint64_t BytesBelow() const { return below_bytes_; }
  /// The most bytes the socket may have below it now before it stops sending new segments.
  std::uint64_t SmallQueueLimit() const;

 protected:
  std::uint32_t AvailableWindow() const override;
  void ReceivedAck(ns3::Ptr<ns3::Packet> packet, const ns3::TcpHeader& header) override;
  ns3::Ptr<ns3::TcpSocketBase> Fork() override;
  void DoDispose() override;
  /// Bytes the socket may still put below it before it reaches its limit (all it likes with
  /// small queues off). An offloading socket cuts its super-segments to it: it counts as
  /// per-frame TCP does.
  std::uint64_t SmallQueueRoom() const;
  /// Payload bytes the socket would send next if nothing held it back: one segment; an
  /// offloading socket's super-segment.
  virtual std::uint32_t DesiredTransmissionBytes() const { return m_tcb->m_segmentSize; }

 private:
  struct Below {
    std::uint64_t serial;  ///< its SmallQueuesTag
    ns3::SequenceNumber32 end;
    std::uint32_t bytes;
  };

  /// Tx trace of every socket of this class (a forked socket inherits its listener's callback:
  /// the sender comes as an argument).
  static void RecordSent(ns3::Ptr<const ns3::Packet> packet, const ns3::TcpHeader& header,
                         ns3::Ptr<const ns3::TcpSocketBase> socket);
  /// Small queues hold the socket back now (AvailableWindow closes the window).
  bool Held() const;
  void Credit(std::uint64_t serial);
  /// Stops counting `entry`; the entry after it.
  std::deque<Below>::iterator Forget(std::deque<Below>::iterator entry);
  void ForgetAll();
  void Resume();

  bool enabled_ = true;
  std::uint32_t limit_output_bytes_ = 4u << 20;
  std::uint32_t pacing_shift_ = 10;
  std::deque<Below> below_;
  std::uint64_t below_bytes_ = 0;
  /// AvailableWindow closed the window for the limit: a credit resumes sending.
  mutable bool throttled_ = false;
  ns3::EventId resume_;
};

}  // namespace gradwire
