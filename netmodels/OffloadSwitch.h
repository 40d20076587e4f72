// The star's switch for offloading links, forwarding as an Ethernet switch does: a packet that
// enters a port leaves by the port its destination host hangs on, without passing through the
// switch node's IP stack. IP forwarding in ns-3 takes no simulated time, so the timeline is the
// same; what goes is its per-packet work (route lookup over every port's address, a TTL
// rewrite that copies a super-segment's bytes), about a fifth of a bulk transfer's wall time.
#pragma once

#include <cstdint>
#include <unordered_map>

#include <ns3/ipv4-address.h>
#include <ns3/packet.h>
#include <ns3/ptr.h>
#include <ns3/simple-ref-count.h>

namespace gradwire {

class OffloadNetDevice;

class OffloadSwitch : public ns3::SimpleRefCount<OffloadSwitch> {
 public:
  /// `port` (a device on the switch node) reaches `host`.
  void AddPort(ns3::Ipv4Address host, OffloadNetDevice* port);
  /// Sends an IPv4 packet that arrived on `ingress` out of its destination's port. False when
  /// no port reaches the destination (the switch's own addresses, broadcasts): the caller
  /// hands it to the switch node's stack.
  bool Forward(const ns3::Ptr<ns3::Packet>& packet, std::uint16_t protocol,
               const OffloadNetDevice* ingress) const;

 private:
  std::unordered_map<std::uint32_t, OffloadNetDevice*> ports_;
};

}  // namespace gradwire
