#include "netmodels/EthernetNetwork.h"

#include <sstream>

#include <ns3/internet-stack-helper.h>
#include <ns3/ipv4-address-helper.h>
#include <ns3/ipv4-global-routing-helper.h>
#include <ns3/point-to-point-helper.h>
#include <ns3/point-to-point-net-device.h>
#include <ns3/queue.h>
#include <ns3/queue-size.h>
#include <ns3/net-device-queue-interface.h>
#include <ns3/nstime.h>
#include <ns3/string.h>
#include <ns3/traffic-control-helper.h>
#include <ns3/uinteger.h>

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "common/FieldTable.h"
#include "netmodels/FamilyKeys.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/OffloadChannel.h"
#include "netmodels/OffloadNetDevice.h"
#include "netmodels/OffloadSwitch.h"
#include "netmodels/HostTcpSocketFactory.h"
#include "netmodels/TcpDefaults.h"

namespace gradwire {

namespace {

using namespace params;

// Every key of the family, each bound to the member that holds it: read, written and listed
// from here.
const FamilyKeys<EthernetConfig>& keys() {
  static const FamilyKeys<EthernetConfig> kKeys(
      "ethernet",
      FieldTable<EthernetConfig>()
          .add(ethernet_rate_param(), &EthernetConfig::rate_bps)
          .add(ethernet_delay_param(), &EthernetConfig::delay_s)
          .add(integer("mtu", 1500, 576, 9216,
                       "largest IP packet on every link, bytes: 576 is the IPv4 minimum, 9000 "
                       "gives jumbo frames (about 10x fewer simulated packets); TCP segments "
                       "are MTU - 52"),
               &EthernetConfig::mtu)
          .add(integer("queue", 1000, 1, 1000000,
                       "drop-tail queue per switch port, packets (frames with `offload`); a "
                       "host's NIC never drops its own TCP's segments, whose sockets keep "
                       "small queues below them as Linux's TSQ does"),
               &EthernetConfig::queue_packets)
          .add(tcp_buffer_param(), &EthernetConfig::tcp_buffer_bytes)
          .add(choice("framing", "ethernet", {"ethernet", "ppp"},
                      "what each frame costs on the wire beyond its IP packet: `ethernet` 38 "
                      "bytes (14 header, 4 FCS, 8 preamble, 12 inter-frame gap), as a "
                      "switched LAN; `ppp` 2 bytes (ns-3's point-to-point header only, a few "
                      "percent faster than real Ethernet)"),
               &EthernetConfig::framing)
          .add(boolean("offload", true,
                       "segment offload (TSO/GRO): TCP stays per-frame but sends bulk data in "
                       "super-segments of up to 44 frames (64 KB, at most 1/32 of its window) "
                       "that each link serialises in exactly their frames' time, forwarded "
                       "cut-through by the switch; within 0.25 % of per-frame simulation over "
                       "most of the accuracy grid, up to 1 % in a few rows, more where "
                       "per-frame simulation waits out retransmission timeouts that offload "
                       "does not (two phase-locked pushes of 100 MB; netmodels/README.md), "
                       "with many times fewer "
                       "simulated packets for large gradients. false: pure per-frame "
                       "simulation. Ignored when `impairments` shape packets"),
               &EthernetConfig::offload)
          .add(impairments_param(false), &EthernetConfig::impairments,
               ImpairmentsConfig::reader(false), ImpairmentsConfig::writer(false)));
  return kKeys;
}

}  // namespace

ParamSpec ethernet_rate_param() {
  return rate("rate", "1Gbps", "every host <-> switch link (full duplex)");
}

ParamSpec ethernet_delay_param() {
  return at_most(duration("delay", "50us",
                          "one-way propagation delay per link (at most 1s: a geostationary hop "
                          "is 0.27s, and TCP's handshake gives up on much longer ones)"),
                 1.0);
}

const std::vector<ParamSpec>& ethernet_params() { return keys().params(); }

EthernetConfig EthernetConfig::from_json(const nlohmann::json& object, const std::string& path) {
  return keys().read(object, path);
}

nlohmann::json EthernetConfig::to_json() const { return keys().write(*this); }

std::uint32_t EthernetConfig::host_queue_packets(std::size_t hosts) const {
  const std::uint64_t payload = mtu - kTcpIpHeaderBytes;
  const std::uint64_t per_connection = (tcp_buffer_bytes + payload - 1) / payload;
  const std::uint64_t peers = hosts > 1 ? hosts - 1 : 1;
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(queue_packets + 2 * peers * per_connection, 1u << 30));
}

std::uint32_t EthernetConfig::segment_frames() const {
  std::uint32_t frames = offload_frames;
  while (frames > 1 && static_cast<std::uint64_t>(frames) * (mtu - kTcpIpHeaderBytes) +
                               kTcpIpHeaderBytes > 65535) {
    --frames;
  }
  return frames;
}

namespace {

// One host <-> switch link of offloading devices; the switch's end forwards cut-through.
ns3::NetDeviceContainer install_offload_link(const EthernetConfig& config,
                                             ns3::Ptr<ns3::Node> host,
                                             ns3::Ptr<ns3::Node> port_owner,
                                             std::uint32_t host_queue_frames) {
  const bool ethernet = config.framing == "ethernet";
  auto channel = ns3::CreateObject<OffloadChannel>();
  channel->SetDelay(ns3::Seconds(config.delay_s));
  ns3::NetDeviceContainer devices;
  for (const auto& node : {host, port_owner}) {
    auto device = ns3::CreateObject<OffloadNetDevice>();
    device->Configure(ns3::DataRate(static_cast<std::uint64_t>(config.rate_bps)), config.mtu,
                      ethernet ? kEthernetFramingBytes : kPppFramingBytes,
                      ethernet ? kEthernetFrameBytesBeforeArrival : kPppFramingBytes,
                      node == port_owner ? config.queue_packets : host_queue_frames);
    device->SetMtu(static_cast<std::uint16_t>(
        config.segment_frames() * (config.mtu - kTcpIpHeaderBytes) + kTcpIpHeaderBytes));
    device->SetCutThrough(node == port_owner);
    // Traffic control expects a device queue interface (to remove the default queue disc
    // below); the device never stops it: its own queue drops what does not fit.
    device->AggregateObject(ns3::CreateObject<ns3::NetDeviceQueueInterface>());
    node->AddDevice(device);
    device->Attach(channel);
    devices.Add(device);
  }
  return devices;
}

}  // namespace

EthernetNetwork::EthernetNetwork(const EthernetConfig& config, std::size_t hosts)
    : config_(config) {
  const bool offload = config_.offload_active();
  apply_tcp_defaults(config_.mtu, config_.tcp_buffer_bytes);

  // Background-traffic sources are extra hosts on the switch, after the application hosts.
  const std::size_t extra = config_.impairments.background.size();
  ns3::NodeContainer all;
  all.Create(static_cast<std::uint32_t>(hosts + extra));
  for (std::size_t i = 0; i < hosts; ++i) hosts_.Add(all.Get(static_cast<std::uint32_t>(i)));
  switch_ = ns3::CreateObject<ns3::Node>();
  ns3::InternetStackHelper stack;
  stack.Install(all);
  stack.Install(switch_);
  // Offloading hosts' applications open OffloadTcpSocket: per-frame TCP that sends new data in
  // super-segments sized by its window.
  if (offload) {
    for (std::uint32_t i = 0; i < all.GetN(); ++i) {
      all.Get(i)->AggregateObject(
          ns3::CreateObject<HostTcpSocketFactory>(config_.segment_frames()));
    }
  }

  ns3::PointToPointHelper link;
  link.SetDeviceAttribute("DataRate", ns3::StringValue(format_bps(config_.rate_bps)));
  link.SetDeviceAttribute("Mtu", ns3::UintegerValue(config_.mtu));
  // ns-3's point-to-point device puts a packet plus PPP's 2 bytes on the wire. Ethernet framing
  // costs 38: the link stays idle for the other 36 before the next frame (an inter-frame gap
  // in ns-3's terms), and the frame's last bit arrives after 24 bytes more than PPP's, which
  // lengthen the propagation delay. Goodput and store-and-forward latency are then Ethernet's.
  double delay_s = config_.delay_s;
  if (config_.framing == "ethernet") {
    const double byte_s = 8.0 / config_.rate_bps;
    link.SetDeviceAttribute(
        "InterframeGap",
        ns3::TimeValue(ns3::Seconds((kEthernetFramingBytes - kPppFramingBytes) * byte_s)));
    delay_s += (kEthernetFrameBytesBeforeArrival - kPppFramingBytes) * byte_s;
  }
  link.SetChannelAttribute("Delay", ns3::TimeValue(ns3::Seconds(delay_s)));
  link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                ns3::QueueSizeValue(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS,
                                                   config_.queue_packets)));

  // A host never drops what its own TCP sends: Linux keeps a socket's segments in the socket
  // (TCP small queues: SmallQueuesTcpSocket, which HostTcpSocketFactory gives every host)
  // rather than overflow the NIC, so the NIC's queue holds a few milliseconds of each socket's
  // data. It is sized for every socket's whole buffer anyway, so that nothing is dropped with
  // small queues turned off, whereas an ns-3 NIC of `queue` packets dropped segments once a
  // connection's window passed the bandwidth-delay product plus the queue, and each such
  // burst of losses cost a 200 ms retransmission timeout. Background sources keep `queue`:
  // they send without a window.
  const std::uint32_t host_queue = config_.host_queue_packets(hosts);
  ns3::Ipv4AddressHelper ip;
  std::vector<HostAttachment> attachments;
  const auto fabric = offload ? ns3::Create<OffloadSwitch>() : nullptr;
  for (std::uint32_t i = 0; i < all.GetN(); ++i) {
    const std::uint32_t nic_queue = i < hosts ? host_queue : config_.queue_packets;
    ns3::NetDeviceContainer devices =
        offload ? install_offload_link(config_, all.Get(i), switch_, nic_queue)
                : link.Install(all.Get(i), switch_);
    if (!offload) {
      ns3::DynamicCast<ns3::PointToPointNetDevice>(devices.Get(0))
          ->GetQueue()
          ->SetMaxSize(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, nic_queue));
    }
    // One /24 per port: 10.(i/250+1).(i%250).0 keeps addresses valid for large clusters.
    std::ostringstream subnet;
    subnet << "10." << (i / 250 + 1) << "." << (i % 250) << ".0";
    ip.SetBase(subnet.str().c_str(), "255.255.255.0");
    ns3::Ipv4InterfaceContainer ifaces = ip.Assign(devices);
    // A switch port is a plain drop-tail buffer: remove the FqCoDel queue disc that address
    // assignment installs, so the device queue above is the only queue.
    ns3::TrafficControlHelper tc;
    tc.Uninstall(devices);
    addresses_.push_back(ifaces.GetAddress(0));
    if (fabric) {
      auto port = ns3::DynamicCast<OffloadNetDevice>(devices.Get(1));
      fabric->AddPort(ifaces.GetAddress(0), ns3::PeekPointer(port));
      port->SetSwitch(fabric);
    }
    if (i < hosts) {
      attachments.push_back(
          HostAttachment{devices.Get(0), devices.Get(1), false, ifaces.GetAddress(0)});
    }
  }
  ns3::Ipv4GlobalRoutingHelper::PopulateRoutingTables();
  netems_ = apply_impairments(config_.impairments, attachments, streams_);
  for (std::size_t i = 0; i < extra; ++i) {
    const auto& flow = config_.impairments.background[i];
    const long target = flow.target < 0 ? static_cast<long>(hosts) + flow.target : flow.target;
    if (target < 0 || target >= static_cast<long>(hosts)) {
      throw ConfigError("network.impairments.background[" + std::to_string(i) + "].target",
                        "expected a host index in [-" + std::to_string(hosts) + ", " +
                            std::to_string(hosts - 1) + "]");
    }
    auto source = all.Get(static_cast<std::uint32_t>(hosts + i));
    if (flow.direction == "uplink") {
      start_background_flow(flow, source, hosts_.Get(target), addresses_[target], streams_);
    } else {
      start_background_flow(flow, hosts_.Get(target), source, addresses_[hosts + i], streams_);
    }
  }
  addresses_.resize(hosts);
  // Every host keeps Linux's small queues below its TCP sockets where its device allows.
  HostTcpSocketFactory::FollowHostQueues(*this);
}

ns3::Ptr<ns3::Node> EthernetNetwork::host(std::size_t index) const {
  return hosts_.Get(static_cast<std::uint32_t>(index));
}

ns3::Ipv4Address EthernetNetwork::address(std::size_t index) const {
  return addresses_.at(index);
}

std::string EthernetNetwork::describe() const {
  std::ostringstream out;
  out << "ethernet star, " << hosts_.GetN() << " hosts, " << config_.rate_bps / 1e9
      << " Gbps, " << config_.delay_s * 1e6 << " us per link, MTU " << config_.mtu << " ("
      << config_.framing << " framing), queue "
      << config_.queue_packets << " packets";
  if (config_.offload_active()) {
    out << ", segment offload (" << config_.segment_frames() << " frames)";
  }
  if (config_.impairments.shapes_packets()) out << ", impaired";
  if (!config_.impairments.background.empty()) {
    out << ", " << config_.impairments.background.size() << " background flows";
  }
  return out.str();
}

}  // namespace gradwire
