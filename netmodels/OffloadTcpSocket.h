// ns-3's TCP socket with segment offload as a NIC's TSO and GRO give it, sized by the window.
//
// TCP itself stays per-frame: its segment is one frame's payload, so the congestion window,
// slow start, HyStart and the delayed-ACK rule count frames exactly as per-frame simulation
// does. Only the sending changes: new data leaves in super-segments of up to
// `MaxSegmentFrames` frames (44: a Linux TSO segment's 64 KB) that the offloading link
// serialises as their frames. A receiver acknowledges a super-segment at once when its last
// frame has arrived (as Linux does for more than one full-sized segment), so a sender learns
// of its first frames later than per-frame TCP would: a window-limited sender keeps fewer
// frames in flight. The size therefore follows the window: a super-segment is at most
// 1/`WindowShare` of the congestion window, and single frames while the window is small.
// Small windows (slow start, short messages, the window-limited flows on a LAN) then run
// frame by frame, as per-frame TCP; bulk flows with windows of thousands of frames send
// 44-frame segments. Small queues (SmallQueuesTcpSocket) hold it to what per-frame TCP would
// have below it: the limit is per-frame TCP's, and a super-segment is cut to the room the
// limit leaves (one frame at least), so offload changes what the simulation costs, not how
// much a host queues. The receiver's one ACK for a super-segment occupies the wire as the ACKs
// per-frame TCP would have sent (AckFramesTag).
#pragma once

#include <cstdint>

#include "netmodels/SmallQueuesTcpSocket.h"

namespace gradwire {

class OffloadTcpSocket : public SmallQueuesTcpSocket {
 public:
  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override;
  OffloadTcpSocket();
  OffloadTcpSocket(const OffloadTcpSocket& other);

 protected:
  std::uint32_t SendDataPacket(ns3::SequenceNumber32 seq, std::uint32_t maxSize,
                               bool withAck) override;
  void ReceivedData(ns3::Ptr<ns3::Packet> packet, const ns3::TcpHeader& header) override;
  void SendEmptyPacket(std::uint8_t flags) override;
  ns3::Ptr<ns3::TcpSocketBase> Fork() override;
  std::uint32_t DesiredTransmissionBytes() const override;

 private:
  /// Frames the next super-segment may carry under the current congestion window.
  std::uint32_t SegmentFrames() const;
  /// Tx trace of every OffloadTcpSocket (a forked socket inherits its listener's callback, so
  /// the sending socket comes as an argument): tags the pure ACK SendEmptyPacket is sending
  /// with the ACK frames it stands for (AckFramesTag).
  static void TagAcknowledgement(ns3::Ptr<const ns3::Packet> packet,
                                 const ns3::TcpHeader& header,
                                 ns3::Ptr<const ns3::TcpSocketBase> socket);

  std::uint32_t max_segment_frames_ = 44;
  std::uint32_t window_share_ = 32;
  /// Per-frame ACKs the pure ACK being sent stands for; 1 outside SendEmptyPacket.
  std::uint32_t sending_ack_frames_ = 1;
};

}  // namespace gradwire
