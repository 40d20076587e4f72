#include "netmodels/SmallQueuesTcpSocket.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <unordered_map>

#include <ns3/boolean.h>
#include <ns3/log.h>
#include <ns3/packet.h>
#include <ns3/queue-disc.h>
#include <ns3/rtt-estimator.h>
#include <ns3/simulator.h>
#include <ns3/tcp-header.h>
#include <ns3/tcp-tx-buffer.h>
#include <ns3/traffic-control-layer.h>
#include <ns3/uinteger.h>

#include "netmodels/SmallQueuesTag.h"
#include "netmodels/TcpDefaults.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("SmallQueuesTcpSocket");

namespace {

/// Which socket each segment below a socket belongs to, by its SmallQueuesTag serial. One
/// simulation runs at a time.
std::unordered_map<std::uint64_t, SmallQueuesTcpSocket*>& owners() {
  static std::unordered_map<std::uint64_t, SmallQueuesTcpSocket*> map;
  return map;
}

}  // namespace

ns3::TypeId SmallQueuesTcpSocket::GetTypeId() {
  static ns3::TypeId tid =
      ns3::TypeId("gradwire::SmallQueuesTcpSocket")
          .SetParent<ns3::TcpSocketBase>()
          .SetGroupName("Internet")
          .AddConstructor<SmallQueuesTcpSocket>()
          .AddAttribute("SmallQueues", "limit the socket's bytes below it as Linux's TSQ",
                        ns3::BooleanValue(true),
                        ns3::MakeBooleanAccessor(&SmallQueuesTcpSocket::enabled_),
                        ns3::MakeBooleanChecker())
          .AddAttribute("LimitOutputBytes",
                        "net.ipv4.tcp_limit_output_bytes: the most bytes below a socket",
                        ns3::UintegerValue(4u << 20),
                        ns3::MakeUintegerAccessor(&SmallQueuesTcpSocket::limit_output_bytes_),
                        ns3::MakeUintegerChecker<std::uint32_t>(1))
          .AddAttribute("PacingShift",
                        "the limit is the pacing rate over 2^PacingShift seconds (10: ~1 ms)",
                        ns3::UintegerValue(10),
                        ns3::MakeUintegerAccessor(&SmallQueuesTcpSocket::pacing_shift_),
                        ns3::MakeUintegerChecker<std::uint32_t>(0, 30));
  return tid;
}

ns3::TypeId SmallQueuesTcpSocket::GetInstanceTypeId() const { return GetTypeId(); }

SmallQueuesTcpSocket::SmallQueuesTcpSocket() {
  TraceConnectWithoutContext("Tx", ns3::MakeCallback(&SmallQueuesTcpSocket::RecordSent));
}

SmallQueuesTcpSocket::SmallQueuesTcpSocket(const SmallQueuesTcpSocket& other)
    : ns3::TcpSocketBase(other),
      enabled_(other.enabled_),
      limit_output_bytes_(other.limit_output_bytes_),
      pacing_shift_(other.pacing_shift_) {}

SmallQueuesTcpSocket::~SmallQueuesTcpSocket() { ForgetAll(); }

void SmallQueuesTcpSocket::DoDispose() {
  resume_.Cancel();
  ForgetAll();
  ns3::TcpSocketBase::DoDispose();
}

void SmallQueuesTcpSocket::ForgetAll() {
  for (const Below& entry : below_) owners().erase(entry.serial);
  below_.clear();
  below_bytes_ = 0;
}

ns3::Ptr<ns3::TcpSocketBase> SmallQueuesTcpSocket::Fork() {
  return ns3::CopyObject<SmallQueuesTcpSocket>(this);
}

std::uint64_t SmallQueuesTcpSocket::SmallQueueLimit() const {
  const std::uint64_t ceiling = limit_output_bytes_;
  // Before the first RTT sample Linux divides by nothing: the rate is unbounded.
  if (m_rtt->GetNSamples() == 0) return ceiling;
  const double srtt_s = m_rtt->GetEstimate().GetSeconds();
  if (srtt_s <= 0) return ceiling;
  // Linux grows the window only while the window limits sending (tcp_is_cwnd_limited): in
  // slow start up to twice what is in flight, after it to what is in flight. ns-3 grows it on
  // every ACK, also while small queues hold the socket back, so the window the rate is taken
  // from is bounded so.
  const bool slow_start = m_tcb->m_cWnd.Get() < m_tcb->m_ssThresh.Get() / 2;
  const std::uint32_t segment = m_tcb->m_segmentSize;
  const double in_flight = std::max(UnAckDataCount(), segment);
  const double cwnd =
      std::min<double>(m_tcb->m_cWnd.Get(), slow_start ? 2 * in_flight : in_flight);
  const double ratio = slow_start ? 2.0 : 1.2;
  const auto rate = static_cast<std::uint64_t>(cwnd * ratio / srtt_s);
  const std::uint64_t floor = 2ull * (segment + kTcpIpHeaderBytes);
  return std::min(std::max(floor, rate >> pacing_shift_), ceiling);
}

std::uint64_t SmallQueuesTcpSocket::SmallQueueRoom() const {
  if (!enabled_) return std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t limit = SmallQueueLimit();
  return limit > below_bytes_ ? limit - below_bytes_ : 0;
}

bool SmallQueuesTcpSocket::Held() const {
  const std::uint32_t mss = m_tcb->m_segmentSize;
  // Linux always sends when at most one segment is unacknowledged: it cannot then be waiting
  // for its own queue.
  if (!enabled_ || UnAckDataCount() <= mss) return false;
  const std::uint64_t limit = SmallQueueLimit();
  if (below_bytes_ > limit) return true;
  const std::uint32_t desired = DesiredTransmissionBytes();
  if (desired <= mss || below_bytes_ == 0) return false;
  // An offloading socket waits for room for a whole super-segment while its NIC still has
  // its bytes to send, as Linux defers a TSO segment rather than send a sliver
  // (tcp_tso_should_defer); sending every sliver of room would shrink its segments to a few
  // frames. The segment waited for is at most half the limit: Linux sizes a TSO segment to
  // about 1 ms of the pacing rate (tcp_tso_autosize), half what small queues allow below.
  const std::uint64_t frame = mss + kTcpIpHeaderBytes;
  const std::uint64_t half_limit_frames = std::max<std::uint64_t>(1, limit / (2 * frame));
  const std::uint64_t wanted = std::min<std::uint64_t>(desired / mss, half_limit_frames) * frame;
  return limit - below_bytes_ < wanted;
}

std::uint32_t SmallQueuesTcpSocket::AvailableWindow() const {
  const std::uint32_t window = ns3::TcpSocketBase::AvailableWindow();
  if (window == 0 || !Held()) return window;
  NS_LOG_LOGIC(this << " held: " << below_bytes_ << " bytes below, limit " << SmallQueueLimit());
  throttled_ = true;
  return 0;
}

void SmallQueuesTcpSocket::RecordSent(ns3::Ptr<const ns3::Packet> packet,
                                      const ns3::TcpHeader& header,
                                      ns3::Ptr<const ns3::TcpSocketBase> socket) {
  if (packet->GetSize() == 0) return;
  auto* self = const_cast<SmallQueuesTcpSocket*>(
      dynamic_cast<const SmallQueuesTcpSocket*>(ns3::PeekPointer(socket)));
  if (self == nullptr || !self->enabled_) return;
  constexpr std::uint32_t kIpv4HeaderBytes = 20;
  static std::uint64_t next_serial = 0;
  const Below entry{++next_serial, header.GetSequenceNumber() + packet->GetSize(),
                    packet->GetSize() + header.GetSerializedSize() + kIpv4HeaderBytes};
  packet->AddPacketTag(SmallQueuesTag(entry.serial));
  self->below_.push_back(entry);
  self->below_bytes_ += entry.bytes;
  owners()[entry.serial] = self;
}

void SmallQueuesTcpSocket::PacketLeftHost(ns3::Ptr<const ns3::Packet> packet) {
  SmallQueuesTag tag;
  if (!packet->PeekPacketTag(tag)) return;
  const auto owner = owners().find(tag.serial());
  if (owner != owners().end()) owner->second->Credit(owner->first);
}

void SmallQueuesTcpSocket::Credit(std::uint64_t serial) {
  const auto entry = std::find_if(below_.begin(), below_.end(),
                                  [serial](const Below& b) { return b.serial == serial; });
  if (entry == below_.end()) return;
  Forget(entry);
  if (throttled_ && !Held() && !resume_.IsRunning()) {
    resume_ = ns3::Simulator::ScheduleNow(&SmallQueuesTcpSocket::Resume,
                                          ns3::Ptr<SmallQueuesTcpSocket>(this));
  }
}

std::deque<SmallQueuesTcpSocket::Below>::iterator SmallQueuesTcpSocket::Forget(
    std::deque<Below>::iterator entry) {
  below_bytes_ -= entry->bytes;
  owners().erase(entry->serial);
  return below_.erase(entry);
}

void SmallQueuesTcpSocket::Resume() {
  throttled_ = false;
  if (m_state == ESTABLISHED || m_state == CLOSE_WAIT) SendPendingData(m_connected);
}

void SmallQueuesTcpSocket::ReceivedAck(ns3::Ptr<ns3::Packet> packet,
                                       const ns3::TcpHeader& header) {
  // Acknowledged bytes have left the host, whatever happened to the packet that carried
  // them (a device whose drops are not followed, a loss below): they stop counting.
  if (header.GetFlags() & ns3::TcpHeader::ACK) {
    const ns3::SequenceNumber32 ack = header.GetAckNumber();
    for (auto it = below_.begin(); it != below_.end();) {
      it = it->end <= ack ? Forget(it) : std::next(it);
    }
  }
  ns3::TcpSocketBase::ReceivedAck(packet, header);
}

namespace {

void queue_disc_item_left_host(ns3::Ptr<const ns3::QueueDiscItem> item) {
  SmallQueuesTcpSocket::PacketLeftHost(item->GetPacket());
}

// A host's queue disc (gradwire's hosts have one only for impairments: netem) frees what it
// drops; what netem delays it takes off the socket's account itself (NetemQueueDisc).
void follow_queue_disc(const ns3::Ptr<ns3::NetDevice>& device) {
  const auto layer = device->GetNode()->GetObject<ns3::TrafficControlLayer>();
  const ns3::Ptr<ns3::QueueDisc> disc = layer ? layer->GetRootQueueDiscOnDevice(device) : nullptr;
  if (disc) disc->TraceConnectWithoutContext("Drop", ns3::MakeCallback(&queue_disc_item_left_host));
}

}  // namespace

bool SmallQueuesTcpSocket::FollowDevice(ns3::Ptr<ns3::NetDevice> device) {
  const auto left = ns3::MakeCallback(&SmallQueuesTcpSocket::PacketLeftHost);
  // Point-to-point and offloading Ethernet devices: a packet leaves when it starts on the wire.
  if (!device->TraceConnectWithoutContext("PhyTxBegin", left)) return false;
  device->TraceConnectWithoutContext("MacTxDrop", left);
  follow_queue_disc(device);
  return true;
}

}  // namespace gradwire
