#include "netmodels/OffloadTcpSocket.h"

#include <algorithm>
#include <limits>

#include <ns3/log.h>
#include <ns3/packet.h>
#include <ns3/tcp-header.h>
#include <ns3/uinteger.h>

#include "netmodels/AckFramesTag.h"
#include "netmodels/TcpDefaults.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("OffloadTcpSocket");

ns3::TypeId OffloadTcpSocket::GetTypeId() {
  static ns3::TypeId tid =
      ns3::TypeId("gradwire::OffloadTcpSocket")
          .SetParent<SmallQueuesTcpSocket>()
          .SetGroupName("Internet")
          .AddConstructor<OffloadTcpSocket>()
          .AddAttribute("MaxSegmentFrames", "most frames one super-segment carries",
                        ns3::UintegerValue(44),
                        ns3::MakeUintegerAccessor(&OffloadTcpSocket::max_segment_frames_),
                        ns3::MakeUintegerChecker<std::uint32_t>(1))
          .AddAttribute("WindowShare",
                        "a super-segment carries at most the congestion window over this",
                        ns3::UintegerValue(32),
                        ns3::MakeUintegerAccessor(&OffloadTcpSocket::window_share_),
                        ns3::MakeUintegerChecker<std::uint32_t>(1));
  return tid;
}

ns3::TypeId OffloadTcpSocket::GetInstanceTypeId() const { return GetTypeId(); }

OffloadTcpSocket::OffloadTcpSocket() {
  TraceConnectWithoutContext("Tx", ns3::MakeCallback(&OffloadTcpSocket::TagAcknowledgement));
}

OffloadTcpSocket::OffloadTcpSocket(const OffloadTcpSocket& other)
    : SmallQueuesTcpSocket(other),
      max_segment_frames_(other.max_segment_frames_),
      window_share_(other.window_share_) {}

void OffloadTcpSocket::SendEmptyPacket(std::uint8_t flags) {
  // The base raises m_highTxAck, the highest ACK sent so far, to this one's number: what this
  // ACK adds is measured before.
  if (flags == ns3::TcpHeader::ACK) {
    const ns3::SequenceNumber32 next = m_tcb->m_rxBuffer->NextRxSequence();
    if (next > m_highTxAck) {
      const std::uint32_t mss = m_tcb->m_segmentSize;
      const std::uint32_t frames = (static_cast<std::uint32_t>(next - m_highTxAck) + mss - 1) / mss;
      // One ACK per two frames (DelAckCount 2); an odd last frame gets its own.
      sending_ack_frames_ = (frames + 1) / 2;
    }
  }
  SmallQueuesTcpSocket::SendEmptyPacket(flags);
  sending_ack_frames_ = 1;
}

void OffloadTcpSocket::TagAcknowledgement(ns3::Ptr<const ns3::Packet> packet,
                                          const ns3::TcpHeader& header,
                                          ns3::Ptr<const ns3::TcpSocketBase> socket) {
  // Only pure ACKs: handshakes, data with a piggybacked ACK and duplicate ACKs are one frame in
  // both simulations.
  if (packet->GetSize() != 0 || header.GetFlags() != ns3::TcpHeader::ACK) return;
  const auto self = ns3::DynamicCast<const OffloadTcpSocket>(socket);
  if (self && self->sending_ack_frames_ > 1) {
    packet->AddPacketTag(AckFramesTag(self->sending_ack_frames_));
  }
}

ns3::Ptr<ns3::TcpSocketBase> OffloadTcpSocket::Fork() {
  return ns3::CopyObject<OffloadTcpSocket>(this);
}

std::uint32_t OffloadTcpSocket::SegmentFrames() const {
  const std::uint32_t mss = m_tcb->m_segmentSize;
  const std::uint32_t window_frames = m_tcb->m_cWnd.Get() / mss;
  return std::clamp(window_frames / window_share_, 1u, max_segment_frames_);
}

std::uint32_t OffloadTcpSocket::DesiredTransmissionBytes() const {
  return SegmentFrames() * m_tcb->m_segmentSize;
}

std::uint32_t OffloadTcpSocket::SendDataPacket(ns3::SequenceNumber32 seq, std::uint32_t maxSize,
                                               bool withAck) {
  const std::uint32_t mss = m_tcb->m_segmentSize;
  // New data only: a retransmission repairs a frame-sized hole, as per-frame TCP's does.
  if (seq == m_tcb->m_highTxMark.Get() && maxSize == mss) {
    const std::uint32_t frames = SegmentFrames();
    if (frames > 1) {
      // What the window lets go now, and what the receiver's window allows past `seq`.
      const std::uint32_t window = AvailableWindow();
      const ns3::SequenceNumber32 right = m_highRxAckMark.Get() + m_rWnd.Get();
      const std::uint32_t receiver = right > seq ? static_cast<std::uint32_t>(right - seq) : 0;
      // No further below the socket than per-frame TCP would go past its small queues' limit.
      const std::uint64_t room_frames =
          std::max<std::uint64_t>(1, SmallQueueRoom() / (mss + kTcpIpHeaderBytes));
      const auto room = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(room_frames * mss, std::numeric_limits<std::uint32_t>::max()));
      const std::uint32_t whole = std::min({window, receiver, frames * mss, room}) / mss * mss;
      maxSize = std::max(maxSize, whole);
      NS_LOG_LOGIC(this << " seq " << seq << ": up to " << frames << " frames, sends "
                        << maxSize << " bytes");
    }
  }
  return SmallQueuesTcpSocket::SendDataPacket(seq, maxSize, withAck);
}

void OffloadTcpSocket::ReceivedData(ns3::Ptr<ns3::Packet> packet, const ns3::TcpHeader& header) {
  // Per-frame TCP acknowledges every second frame; a super-segment of two or more frames has
  // passed that count by its last frame, so it is acknowledged at once.
  if (packet->GetSize() > m_tcb->m_segmentSize && m_delAckMaxCount > 0) {
    m_delAckCount = std::max(m_delAckCount, m_delAckMaxCount - 1);
  }
  SmallQueuesTcpSocket::ReceivedData(packet, header);
}

}  // namespace gradwire
