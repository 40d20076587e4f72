#include "netmodels/OffloadSwitch.h"

#include <ns3/log.h>
#include <ns3/node.h>

#include "netmodels/OffloadNetDevice.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("OffloadSwitch");

namespace {

constexpr std::uint16_t kIpv4 = 0x0800;
constexpr std::uint32_t kDestinationOffset = 16;  // in the IPv4 header

}  // namespace

void OffloadSwitch::AddPort(ns3::Ipv4Address host, OffloadNetDevice* port) {
  NS_LOG_FUNCTION(this << host << port);
  ports_[host.Get()] = port;
}

bool OffloadSwitch::Forward(const ns3::Ptr<ns3::Packet>& packet, std::uint16_t protocol,
                            const OffloadNetDevice* ingress) const {
  if (protocol != kIpv4 || packet->GetSize() < kDestinationOffset + 4) return false;
  std::uint8_t head[kDestinationOffset + 4];
  packet->CopyData(head, sizeof head);
  const auto it = ports_.find(ns3::Ipv4Address::Deserialize(head + kDestinationOffset).Get());
  if (it == ports_.end() || it->second == ingress) {
    NS_LOG_LOGIC("packet " << packet->GetUid() << " goes up to the switch node");
    return false;
  }
  NS_LOG_LOGIC("packet " << packet->GetUid() << " forwarded to port " << it->second);
  // A full egress queue drops the packet, as IP forwarding into it would.
  it->second->Send(packet, it->second->GetBroadcast(), protocol);
  return true;
}

}  // namespace gradwire
