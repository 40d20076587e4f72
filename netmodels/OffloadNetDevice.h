// A full-duplex wired port that carries TCP segments larger than the link's MTU, as a NIC with
// segment offload (TSO/GRO) does: the host hands it a super-segment, the wire carries it as the
// MTU-sized Ethernet frames it stands for. The link is busy for exactly those frames' time
// (each frame's IP/TCP headers and framing included) and the drop-tail queue counts frames, so
// the simulated timeline is that of per-frame traffic while ns-3 handles one packet per
// super-segment. Packets no larger than the MTU are one frame, as on a plain link.
//
// Modelled on ns-3's PointToPointNetDevice, whose transmit timing cannot be changed from
// outside (TransmitStart is not virtual).
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

#include <ns3/data-rate.h>
#include <ns3/mac48-address.h>
#include <ns3/net-device.h>
#include <ns3/nstime.h>
#include <ns3/packet.h>
#include <ns3/trace-source-accessor.h>
#include <ns3/traced-callback.h>

namespace gradwire {

class OffloadChannel;
class OffloadSwitch;

/// Where a packet's frames fall on the wire, from the start of its transmission.
struct WireFrames {
  std::uint32_t frames = 1;  ///< MTU-sized frames the packet stands for
  double bytes = 0;          ///< wire bytes of all frames: headers, payload and framing
  double first_bytes = 0;    ///< wire bytes of the first frame
};

class OffloadNetDevice : public ns3::NetDevice {
 public:
  static ns3::TypeId GetTypeId();
  OffloadNetDevice();

  /// The frames an IP packet of `ip_bytes` (its first bytes in `head`) stands for on a link
  /// with this frame MTU: payload beyond the IP and transport headers is cut into frames of
  /// at most `frame_mtu` IP bytes, each repeating the headers and paying `framing_bytes`.
  static WireFrames frames_of(const std::uint8_t* head, std::uint32_t head_len,
                              std::uint32_t ip_bytes, std::uint32_t frame_mtu,
                              double framing_bytes);

  /// Link rate, frame MTU (IP bytes per frame), wire bytes per frame beyond the IP packet, and
  /// how many of those precede a frame's last bit (the rest is the inter-frame gap).
  void Configure(ns3::DataRate rate, std::uint32_t frame_mtu, double framing_bytes,
                 double bytes_before_arrival, std::uint32_t queue_frames);
  /// A forwarding port (a cut-through switch's) hands a packet up once its first frame has
  /// arrived, so the egress starts while the rest streams in; hosts take it whole.
  void SetCutThrough(bool cut_through) { cut_through_ = cut_through; }
  bool cut_through() const { return cut_through_; }
  /// A switch port forwards what it receives through `fabric` to the destination's port;
  /// packets the fabric has no port for go up to the node as on a host.
  void SetSwitch(ns3::Ptr<OffloadSwitch> fabric);

  void Attach(ns3::Ptr<OffloadChannel> channel);
  /// Called by the channel when the packet is due at this end.
  void Receive(ns3::Ptr<ns3::Packet> packet, std::uint16_t protocol);

  /// Frames waiting in the queue (not counting the one on the wire).
  std::uint32_t queued_frames() const { return queued_frames_; }
  std::uint64_t dropped_packets() const { return dropped_; }

  // ns3::NetDevice
  void SetIfIndex(const std::uint32_t index) override { if_index_ = index; }
  std::uint32_t GetIfIndex() const override { return if_index_; }
  ns3::Ptr<ns3::Channel> GetChannel() const override;
  void SetAddress(ns3::Address address) override;
  ns3::Address GetAddress() const override { return address_; }
  bool SetMtu(const std::uint16_t mtu) override;
  std::uint16_t GetMtu() const override { return mtu_; }
  bool IsLinkUp() const override { return channel_ != nullptr; }
  void AddLinkChangeCallback(ns3::Callback<void> callback) override;
  bool IsBroadcast() const override { return true; }
  ns3::Address GetBroadcast() const override;
  bool IsMulticast() const override { return true; }
  ns3::Address GetMulticast(ns3::Ipv4Address group) const override;
  ns3::Address GetMulticast(ns3::Ipv6Address group) const override;
  bool IsBridge() const override { return false; }
  bool IsPointToPoint() const override { return true; }
  bool Send(ns3::Ptr<ns3::Packet> packet, const ns3::Address& dest,
            std::uint16_t protocol) override;
  bool SendFrom(ns3::Ptr<ns3::Packet>, const ns3::Address&, const ns3::Address&,
                std::uint16_t) override {
    return false;
  }
  ns3::Ptr<ns3::Node> GetNode() const override { return node_; }
  void SetNode(ns3::Ptr<ns3::Node> node) override { node_ = node; }
  bool NeedsArp() const override { return false; }
  void SetReceiveCallback(ns3::NetDevice::ReceiveCallback cb) override { rx_ = cb; }
  void SetPromiscReceiveCallback(ns3::NetDevice::PromiscReceiveCallback cb) override {
    promisc_rx_ = cb;
  }
  bool SupportsSendFrom() const override { return false; }

 protected:
  void DoDispose() override;

 private:
  void TransmitStart(ns3::Ptr<ns3::Packet> packet, std::uint16_t protocol, const WireFrames& wire);
  void TransmitComplete();
  WireFrames FramesOf(const ns3::Packet& packet) const;
  /// How long `bytes` take on the wire at the link's rate.
  ns3::Time WireTime(double bytes) const;
  ns3::Address Remote() const;

  ns3::Ptr<ns3::Node> node_;
  ns3::Ptr<OffloadChannel> channel_;
  ns3::Mac48Address address_;
  std::uint32_t if_index_ = 0;
  std::uint16_t mtu_ = 65535;
  ns3::DataRate rate_{1000000000};
  std::uint32_t frame_mtu_ = 1500;
  double framing_bytes_ = 38;
  double bytes_before_arrival_ = 26;
  std::uint32_t queue_limit_frames_ = 1000;
  bool cut_through_ = false;
  ns3::Ptr<OffloadSwitch> switch_;

  bool busy_ = false;
  struct Queued {
    ns3::Ptr<ns3::Packet> packet;
    std::uint16_t protocol;
    WireFrames wire;
  };
  std::deque<Queued> queue_;
  std::uint32_t queued_frames_ = 0;
  std::uint64_t dropped_ = 0;

  ns3::NetDevice::ReceiveCallback rx_;
  ns3::NetDevice::PromiscReceiveCallback promisc_rx_;
  ns3::TracedCallback<> link_change_;
  // Named as on ns-3's point-to-point device, so one tracing script reads both.
  ns3::TracedCallback<ns3::Ptr<const ns3::Packet>> phy_tx_begin_;
  ns3::TracedCallback<ns3::Ptr<const ns3::Packet>> mac_tx_drop_;
};

}  // namespace gradwire
