// Building blocks the network families share: where wireless nodes stand (placement) and how
// they move (mobility), wired point-to-point links with addresses, and static routes. Every
// random choice draws from ns-3's RNG, which the engine seeds from the scenario seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/ipv4-address.h>
#include <ns3/net-device.h>
#include <ns3/node-container.h>
#include <ns3/node.h>
#include <ns3/vector.h>

#include "common/FieldTable.h"
#include "netmodels/Impairments.h"
#include "netmodels/StreamAllocator.h"

namespace gradwire {

/// Where worker stations / UEs stand around their access point or eNodeB.
struct PlacementSpec {
  std::string kind = "distance";   ///< "distance", "distances", "grid" or "disc"
  double distance_m = 5.0;         ///< distance: every node this far (spread on a circle)
  std::vector<double> distances_m; ///< distances: node i at distances_m[i % size]
  double spacing_m = 2.0;          ///< grid: spacing, centred on the AP
  std::uint32_t columns = 4;       ///< grid: nodes per row
  double radius_m = 10.0;          ///< disc: uniformly at random in a disc (seeded)

  /// Its keys, each bound to its member; a kind's own keys belong only with that kind.
  /// `distance_m`'s default is the family's (the config read into holds it).
  static const FieldTable<PlacementSpec>& keys();
  static PlacementSpec from_json(const nlohmann::json& object, const std::string& path,
                                 double default_distance_m);
  nlohmann::json to_json() const;
  /// from_json with that default, as a family's key table (common/FieldTable.h) binds it.
  static std::function<PlacementSpec(const nlohmann::json&, const std::string&)> reader(
      double default_distance_m);

  /// Positions of `count` nodes relative to `center` (disc: drawn from streams reserved in
  /// `streams`).
  std::vector<ns3::Vector> positions(std::size_t count, ns3::Vector center,
                                     StreamAllocator& streams) const;
};

/// Installs a constant-position model at each of `positions` (one per node).
void place_fixed(const ns3::NodeContainer& nodes, const std::vector<ns3::Vector>& positions);

/// Installs the mobility model of `spec` on `nodes`, starting at `positions`, moving inside
/// +-bounds_m around `center`; its random variables draw from streams reserved in `streams`.
void place_mobile(const ns3::NodeContainer& nodes, const std::vector<ns3::Vector>& positions,
                  const MobilitySpec& spec, ns3::Vector center, StreamAllocator& streams);

struct WiredLink {
  ns3::Ptr<ns3::NetDevice> a_device, b_device;
  ns3::Ipv4Address a_address, b_address;
  std::uint32_t a_interface = 0, b_interface = 0;
};

/// A full-duplex point-to-point link a <-> b on the /30 (or /24) `subnet` (e.g. "172.16.0.0"),
/// with a drop-tail device queue and no queue disc (like an Ethernet port).
WiredLink connect_p2p(ns3::Ptr<ns3::Node> a, ns3::Ptr<ns3::Node> b, double rate_bps,
                      double delay_s, std::uint32_t mtu, const std::string& subnet,
                      const std::string& mask = "255.255.255.252",
                      std::uint32_t queue_packets = 1000);

void add_default_route(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address next_hop,
                       std::uint32_t interface);
void add_network_route(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address network,
                       ns3::Ipv4Mask mask, ns3::Ipv4Address next_hop, std::uint32_t interface);
/// Interface index of `device` on its node's IPv4 stack.
std::uint32_t interface_of(ns3::Ptr<ns3::NetDevice> device);

/// "a.b.c.d" for the i-th /30 of 172.16.0.0/12 etc.: subnet_string(base, i) = base + 4 i.
std::string nth_subnet(const std::string& base, std::uint32_t index, std::uint32_t size);

/// A SYN lost while a station associates or a UE attaches is retried after 1 s, as Linux
/// does (TCP_TIMEOUT_INIT, RFC 6298), instead of ns-3's default 3 s.
void apply_wireless_tcp_defaults();

}  // namespace gradwire
