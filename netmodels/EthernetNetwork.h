// A switched Ethernet star: every host has its own full-duplex link to one store-and-forward
// switch, with a drop-tail output queue per port. This is the lab cluster on 1/10 GbE that the
// DGC paper compares against.
//
// Modelled with ns-3 point-to-point links (full duplex, per-device drop-tail queue) to a switch
// node that forwards at IP level: per-port rate, propagation delay, MTU and queue size are the
// knobs a switched LAN has, and a CSMA bus would wrongly make each link half duplex.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/node-container.h>

#include "common/ParamSpec.h"
#include "netmodels/Impairments.h"
#include "netmodels/Network.h"
#include "netmodels/StreamAllocator.h"

namespace gradwire {

/// Bytes an Ethernet frame occupies on the wire beyond its IP packet: 14 header + 4 FCS +
/// 8 preamble and start delimiter + 12 inter-frame gap.
constexpr double kEthernetFramingBytes = 38;
/// Of those, the bytes before the frame's last bit arrives (all but the inter-frame gap).
constexpr double kEthernetFrameBytesBeforeArrival = 26;
/// ns-3's point-to-point device frames packets with PPP's 2-byte header.
constexpr double kPppFramingBytes = 2;

/// The family's own keys, each bound to its EthernetConfig member (common/FieldTable.h): the
/// one declaration from_json, to_json, `gradwire networks` and docs/networks.md read.
const std::vector<ParamSpec>& ethernet_params();
/// `rate` and `delay`, declared alike for the family and its hybrid groups.
ParamSpec ethernet_rate_param();
ParamSpec ethernet_delay_param();

struct EthernetConfig {
  double rate_bps = 1e9;          ///< every host <-> switch link
  double delay_s = 50e-6;         ///< one-way propagation delay per link
  std::uint32_t mtu = 1500;       ///< bytes; 9000 for jumbo frames
  std::uint32_t queue_packets = 1000;  ///< drop-tail queue per switch port (and host NIC)
  std::uint32_t tcp_buffer_bytes = 4 << 20;  ///< socket send/receive buffers
  /// What a frame costs on the wire beyond its IP packet: "ethernet" (38 bytes) or "ppp" (2).
  std::string framing = "ethernet";
  /// Segment offload: TCP sends super-segments of up to `offload_frames` frames
  /// (OffloadTcpSocket), serialised as those frames (OffloadNetDevice), cut-through at the
  /// switch.
  bool offload = true;
  /// Most frames per super-segment: 44 x 1448 bytes is the 64 KB a Linux TSO segment
  /// carries at most. Not a scenario key: the accuracy bench's grid was measured with it.
  std::uint32_t offload_frames = 44;
  ImpairmentsConfig impairments;  ///< applied to both directions of each impaired host's link

  /// Reads a resolved or partial `network` object (family "ethernet"); missing keys take the
  /// declared defaults (ethernet_params()). Throws ConfigError naming `path`.key for bad values.
  /// Every key but `impairments` is read and written through its declaration.
  static EthernetConfig from_json(const nlohmann::json& object, const std::string& path);
  nlohmann::json to_json() const;
  /// Whether the links offload: asked for and no impairment shapes packets (netem delays,
  /// drops and rate-limits whole packets, which must then be frames).
  bool offload_active() const {
    return offload && segment_frames() > 1 && !impairments.shapes_packets();
  }
  /// The drop-tail limit of a host's NIC among `hosts`: `queue_packets` plus what the
  /// host's TCP connections to every other host may have in flight (a socket buffer's
  /// frames each way, data and ACKs).
  std::uint32_t host_queue_packets(std::size_t hosts) const;
  /// Most frames per super-segment when offloading: `offload_frames`, or fewer where that
  /// segment would not fit an IP packet (65535 bytes).
  std::uint32_t segment_frames() const;
};

class EthernetNetwork : public Network {
 public:
  /// Builds the star into the current ns-3 simulation. Sets ns-3's TCP defaults (segment size
  /// from the MTU, buffers) for sockets created afterwards.
  EthernetNetwork(const EthernetConfig& config, std::size_t hosts);

  std::string family() const override { return "ethernet"; }
  std::size_t host_count() const override { return hosts_.GetN(); }
  ns3::Ptr<ns3::Node> host(std::size_t index) const override;
  ns3::Ipv4Address address(std::size_t index) const override;
  std::string describe() const override;

  const EthernetConfig& config() const { return config_; }
  /// Impairment queue discs installed (for counters in tests).
  const std::vector<ns3::Ptr<NetemQueueDisc>>& netems() const { return netems_; }

 private:
  EthernetConfig config_;
  StreamAllocator streams_;
  ns3::NodeContainer hosts_;
  ns3::Ptr<ns3::Node> switch_;
  std::vector<ns3::Ipv4Address> addresses_;
  std::vector<ns3::Ptr<NetemQueueDisc>> netems_;
};

}  // namespace gradwire
