#include "netmodels/OffloadNetDevice.h"

#include <algorithm>
#include <cmath>

#include <ns3/log.h>
#include <ns3/node.h>
#include <ns3/simulator.h>

#include "netmodels/AckFramesTag.h"
#include "netmodels/OffloadChannel.h"
#include "netmodels/OffloadSwitch.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("OffloadNetDevice");

NS_OBJECT_ENSURE_REGISTERED(OffloadNetDevice);

ns3::TypeId OffloadNetDevice::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::OffloadNetDevice")
                               .SetParent<ns3::NetDevice>()
                               .SetGroupName("gradwire")
                               .AddConstructor<OffloadNetDevice>()
                               .AddTraceSource(
                                   "PhyTxBegin", "a packet (all its frames) starts on the wire",
                                   ns3::MakeTraceSourceAccessor(&OffloadNetDevice::phy_tx_begin_),
                                   "ns3::Packet::TracedCallback")
                               .AddTraceSource(
                                   "MacTxDrop", "a packet the full queue dropped",
                                   ns3::MakeTraceSourceAccessor(&OffloadNetDevice::mac_tx_drop_),
                                   "ns3::Packet::TracedCallback");
  return tid;
}

OffloadNetDevice::OffloadNetDevice() : address_(ns3::Mac48Address::Allocate()) {}

WireFrames OffloadNetDevice::frames_of(const std::uint8_t* head, std::uint32_t head_len,
                                       std::uint32_t ip_bytes, std::uint32_t frame_mtu,
                                       double framing_bytes) {
  WireFrames w;
  if (ip_bytes <= frame_mtu) {
    w.bytes = w.first_bytes = ip_bytes + framing_bytes;
    return w;
  }
  // Every frame repeats the IP header and the transport header (options included), as TSO
  // does; only the payload is cut.
  std::uint32_t header = 20;
  if (head_len >= 1) header = static_cast<std::uint32_t>(head[0] & 0x0f) * 4;
  if (head_len >= 10 && head[9] == 6 && head_len >= header + 13) {
    header += static_cast<std::uint32_t>(head[header + 12] >> 4) * 4;
  } else if (head_len >= 10 && head[9] == 17) {
    header += 8;
  }
  header = std::min(header, frame_mtu - 1);
  const std::uint32_t payload = ip_bytes - header;
  const std::uint32_t per_frame = frame_mtu - header;
  w.frames = (payload + per_frame - 1) / per_frame;
  w.bytes = payload + w.frames * (header + framing_bytes);
  w.first_bytes = frame_mtu + framing_bytes;
  return w;
}

void OffloadNetDevice::Configure(ns3::DataRate rate, std::uint32_t frame_mtu,
                                 double framing_bytes, double bytes_before_arrival,
                                 std::uint32_t queue_frames) {
  NS_LOG_FUNCTION(this << rate << frame_mtu << framing_bytes << bytes_before_arrival
                       << queue_frames);
  rate_ = rate;
  frame_mtu_ = frame_mtu;
  framing_bytes_ = framing_bytes;
  bytes_before_arrival_ = bytes_before_arrival;
  queue_limit_frames_ = queue_frames;
}

void OffloadNetDevice::SetSwitch(ns3::Ptr<OffloadSwitch> fabric) { switch_ = fabric; }

void OffloadNetDevice::Attach(ns3::Ptr<OffloadChannel> channel) {
  NS_LOG_FUNCTION(this << channel);
  channel_ = channel;
  channel_->Attach(this);
  link_change_();
}

ns3::Ptr<ns3::Channel> OffloadNetDevice::GetChannel() const { return channel_; }

void OffloadNetDevice::SetAddress(ns3::Address address) {
  address_ = ns3::Mac48Address::ConvertFrom(address);
}

bool OffloadNetDevice::SetMtu(const std::uint16_t mtu) {
  mtu_ = mtu;
  return true;
}

void OffloadNetDevice::AddLinkChangeCallback(ns3::Callback<void> callback) {
  link_change_.ConnectWithoutContext(callback);
}

ns3::Address OffloadNetDevice::GetBroadcast() const {
  return ns3::Mac48Address("ff:ff:ff:ff:ff:ff");
}

ns3::Address OffloadNetDevice::GetMulticast(ns3::Ipv4Address) const {
  return ns3::Mac48Address("01:00:5e:00:00:00");
}

ns3::Address OffloadNetDevice::GetMulticast(ns3::Ipv6Address) const {
  return ns3::Mac48Address("33:33:00:00:00:00");
}

WireFrames OffloadNetDevice::FramesOf(const ns3::Packet& packet) const {
  const std::uint32_t size = packet.GetSize();
  if (size <= frame_mtu_) {
    WireFrames w = frames_of(nullptr, 0, size, frame_mtu_, framing_bytes_);
    AckFramesTag acks;
    if (packet.PeekPacketTag(acks) && acks.frames() > 1) {
      w.frames = acks.frames();
      w.bytes = w.first_bytes * acks.frames();
    }
    return w;
  }
  std::uint8_t head[128];
  const std::uint32_t len = packet.CopyData(head, sizeof head);
  return frames_of(head, len, size, frame_mtu_, framing_bytes_);
}

bool OffloadNetDevice::Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address&,
                            std::uint16_t protocol) {
  NS_LOG_FUNCTION(this << packet << protocol);
  if (!channel_) return false;
  const WireFrames wire = FramesOf(*packet);
  if (!busy_) {
    TransmitStart(packet, protocol, wire);
    return true;
  }
  // Drop-tail on frames, as the per-frame link's packet-counted queue would be.
  if (queued_frames_ + wire.frames > queue_limit_frames_) {
    NS_LOG_LOGIC("queue full (" << queued_frames_ << " of " << queue_limit_frames_
                                << " frames): dropping " << wire.frames << " frames");
    ++dropped_;
    mac_tx_drop_(packet);
    return false;
  }
  queued_frames_ += wire.frames;
  queue_.push_back(Queued{packet, protocol, wire});
  return true;
}

ns3::Time OffloadNetDevice::WireTime(double bytes) const {
  const std::uint64_t rate = rate_.GetBitRate();
  // ns3::Seconds(bytes * 8 / rate) goes through long double and 128-bit conversions, a few
  // percent of a bulk run's wall time. For a whole number of bytes the same nanoseconds,
  // rounded to nearest, come from integers.
  if (bytes >= 0 && bytes < 1e9 && bytes == std::floor(bytes) && rate > 0) {
    const auto bits_ns = static_cast<std::uint64_t>(bytes) * 8u * 1'000'000'000u;
    return ns3::NanoSeconds(static_cast<std::int64_t>((bits_ns + rate / 2) / rate));
  }
  return ns3::Seconds(bytes * 8.0 / static_cast<double>(rate));
}

void OffloadNetDevice::TransmitStart(ns3::Ptr<ns3::Packet> packet, std::uint16_t protocol,
                                     const WireFrames& w) {
  NS_LOG_LOGIC("packet " << packet->GetUid() << ": " << w.frames << " frames, " << w.bytes
                         << " wire bytes");
  busy_ = true;
  phy_tx_begin_(packet);
  // The inter-frame gap follows each frame's last bit.
  const double gap = framing_bytes_ - bytes_before_arrival_;
  ns3::Simulator::Schedule(WireTime(w.bytes), &OffloadNetDevice::TransmitComplete, this);
  channel_->TransmitStart(packet, protocol, this, WireTime(w.first_bytes - gap),
                          WireTime(w.bytes - gap));
}

void OffloadNetDevice::TransmitComplete() {
  busy_ = false;
  if (queue_.empty()) return;
  Queued next = std::move(queue_.front());
  queue_.pop_front();
  queued_frames_ -= next.wire.frames;
  TransmitStart(next.packet, next.protocol, next.wire);
}

ns3::Address OffloadNetDevice::Remote() const {
  for (std::size_t i = 0; i < channel_->GetNDevices(); ++i) {
    const auto device = channel_->GetDevice(i);
    if (ns3::PeekPointer(device) != this) return device->GetAddress();
  }
  return ns3::Address();
}

void OffloadNetDevice::Receive(ns3::Ptr<ns3::Packet> packet, std::uint16_t protocol) {
  const ns3::Address remote = Remote();
  if (!promisc_rx_.IsNull()) {
    promisc_rx_(this, packet, protocol, remote, address_, ns3::NetDevice::PACKET_HOST);
  }
  if (switch_ && switch_->Forward(packet, protocol, this)) return;
  rx_(this, packet, protocol, remote);
}

void OffloadNetDevice::DoDispose() {
  node_ = nullptr;
  channel_ = nullptr;
  queue_.clear();
  switch_ = nullptr;
  rx_ = ns3::NetDevice::ReceiveCallback();
  promisc_rx_ = ns3::NetDevice::PromiscReceiveCallback();
  ns3::NetDevice::DoDispose();
}

}  // namespace gradwire
