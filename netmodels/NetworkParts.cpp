#include "netmodels/NetworkParts.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <ns3/config.h>
#include <ns3/constant-position-mobility-model.h>
#include <ns3/double.h>
#include <ns3/ipv4-address-helper.h>
#include <ns3/ipv4-static-routing-helper.h>
#include <ns3/ipv4.h>
#include <ns3/mobility-helper.h>
#include <ns3/point-to-point-helper.h>
#include <ns3/pointer.h>
#include <ns3/position-allocator.h>
#include <ns3/queue-size.h>
#include <ns3/random-variable-stream.h>
#include <ns3/rectangle.h>
#include <ns3/string.h>
#include <ns3/traffic-control-helper.h>
#include <ns3/uinteger.h>
#include <ns3/waypoint-mobility-model.h>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "common/DeclaredFields.h"
#include "netmodels/NetworkParams.h"

namespace gradwire {

std::function<PlacementSpec(const nlohmann::json&, const std::string&)> PlacementSpec::reader(
    double default_distance_m) {
  return [default_distance_m](const nlohmann::json& object, const std::string& path) {
    return from_json(object, path, default_distance_m);
  };
}

const FieldTable<PlacementSpec>& PlacementSpec::keys() {
  using namespace params;
  static const FieldTable<PlacementSpec> kKeys = [] {
    const auto kind_is = [](const char* k) {
      return [k](const PlacementSpec& p) { return p.kind == k; };
    };
    FieldTable<PlacementSpec> t;
    t.add(choice("kind", "distance", {"distance", "distances", "grid", "disc"},
                 "`distance`: every node `distance_m` away, spread on a circle; `distances`: "
                 "node i at entry i mod length of `distances_m`; `grid`: rows of `columns` "
                 "nodes `spacing_m` apart, centred on the AP / eNodeB; `disc`: uniformly at "
                 "random within `radius_m` (seeded)"),
          &PlacementSpec::kind)
        .add(derived(number("distance_m", 5.0, 0.0, 100000.0,
                            "`distance`: metres from the AP / eNodeB"),
                     "5 in wifi, 100 in lte"),
             [](const JsonFields& f, const ParamSpec& s, PlacementSpec& p) {
               p.distance_m = declared_number(f, s, p.distance_m);
             },
             [](const PlacementSpec& p, const ParamSpec& s, nlohmann::json& out) {
               out[s.name] = p.distance_m;
             })
        .only_when(kind_is("distance"))
        .add(required_key(list("distances_m",
                               "`distances`: a non-empty list of metres, each in [0, 100000]")),
             [](const JsonFields& f, const ParamSpec& s, PlacementSpec& p) {
               const std::string where = f.path_of(s.name);
               if (!f.has(s.name) || !f.object().at(s.name).is_array() ||
                   f.object().at(s.name).empty()) {
                 throw ConfigError(where, "expected a non-empty list of distances in metres");
               }
               const auto& list = f.object().at(s.name);
               for (std::size_t i = 0; i < list.size(); ++i) {
                 if (!list[i].is_number() || list[i].get<double>() < 0 ||
                     list[i].get<double>() > 100000) {
                   throw ConfigError(where + "[" + std::to_string(i) + "]",
                                     "expected a distance in metres in [0, 100000], got " +
                                         json_brief(list[i]));
                 }
                 p.distances_m.push_back(list[i].get<double>());
               }
             },
             [](const PlacementSpec& p, const ParamSpec& s, nlohmann::json& out) {
               out[s.name] = p.distances_m;
             })
        .only_when(kind_is("distances"))
        .add(number("spacing_m", 2.0, 0.0, 100000.0, "`grid`: metres between neighbours", true),
             &PlacementSpec::spacing_m)
        .only_when(kind_is("grid"))
        .add(integer("columns", 4, 1, 1000, "`grid`: nodes per row"), &PlacementSpec::columns)
        .only_when(kind_is("grid"))
        .add(number("radius_m", 10.0, 0.0, 100000.0, "`disc`: radius, metres", true),
             &PlacementSpec::radius_m)
        .only_when(kind_is("disc"));
    return t;
  }();
  return kKeys;
}

PlacementSpec PlacementSpec::from_json(const nlohmann::json& object, const std::string& path,
                                       double default_distance_m) {
  PlacementSpec p;
  p.distance_m = default_distance_m;
  return keys().read_object(object, path, p);
}

nlohmann::json PlacementSpec::to_json() const { return keys().write_object(*this); }

std::vector<ns3::Vector> PlacementSpec::positions(std::size_t count, ns3::Vector center,
                                                  StreamAllocator& streams) const {
  std::vector<ns3::Vector> out;
  const double kPi = 3.14159265358979323846;
  if (kind == "disc") {
    auto disc = ns3::CreateObject<ns3::UniformDiscPositionAllocator>();
    disc->SetAttribute("rho", ns3::DoubleValue(radius_m));
    disc->SetAttribute("X", ns3::DoubleValue(center.x));
    disc->SetAttribute("Y", ns3::DoubleValue(center.y));
    disc->AssignStreams(streams.reserve(2));
    for (std::size_t i = 0; i < count; ++i) out.push_back(disc->GetNext());
    return out;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (kind == "grid") {
      const auto rows = static_cast<double>((count + columns - 1) / columns);
      const double col = static_cast<double>(i % columns), row = static_cast<double>(i / columns);
      const double cols = static_cast<double>(std::min<std::size_t>(count, columns));
      // Centred on the AP, which sits in a gap of the grid (never on top of a station).
      out.emplace_back(center.x + (col - (cols - 1) / 2.0) * spacing_m + spacing_m / 4,
                       center.y + (row - (rows - 1) / 2.0) * spacing_m + spacing_m / 4,
                       center.z);
    } else {
      const double d = kind == "distances" ? distances_m[i % distances_m.size()] : distance_m;
      const double angle = 2 * kPi * static_cast<double>(i) / static_cast<double>(count);
      out.emplace_back(center.x + d * std::cos(angle), center.y + d * std::sin(angle), center.z);
    }
  }
  return out;
}

void place_fixed(const ns3::NodeContainer& nodes, const std::vector<ns3::Vector>& positions) {
  for (std::uint32_t i = 0; i < nodes.GetN(); ++i) {
    auto m = nodes.Get(i)->GetObject<ns3::MobilityModel>();
    if (!m) {
      m = ns3::CreateObject<ns3::ConstantPositionMobilityModel>();
      nodes.Get(i)->AggregateObject(m);
    }
    m->SetPosition(positions.at(i));
  }
}

void place_mobile(const ns3::NodeContainer& nodes, const std::vector<ns3::Vector>& positions,
                  const MobilitySpec& spec, ns3::Vector center, StreamAllocator& streams) {
  if (spec.model == "static") {
    place_fixed(nodes, positions);
    return;
  }
  const double b = spec.bounds_m;
  if (spec.model == "straight") {
    // Nothing random: each node walks from its place to where its line leaves the square,
    // then stands there (a node placed outside the square stays put).
    const double kPi = 3.14159265358979323846;
    const double dx = std::cos(spec.heading_deg * kPi / 180.0);
    const double dy = std::sin(spec.heading_deg * kPi / 180.0);
    const auto reach = [](double from, double step, double low, double high) {
      if (std::abs(step) < 1e-12) return from >= low && from <= high ? 1e300 : 0.0;
      return ((step > 0 ? high : low) - from) / step;
    };
    for (std::uint32_t i = 0; i < nodes.GetN(); ++i) {
      const ns3::Vector start = positions.at(i);
      const bool inside = std::abs(start.x - center.x) <= b && std::abs(start.y - center.y) <= b;
      const double length =
          inside ? std::min(reach(start.x, dx, center.x - b, center.x + b),
                            reach(start.y, dy, center.y - b, center.y + b))
                 : 0.0;
      auto walk = ns3::CreateObject<ns3::WaypointMobilityModel>();
      walk->AddWaypoint(ns3::Waypoint(ns3::Seconds(0), start));
      if (length > 0) {
        walk->AddWaypoint(ns3::Waypoint(
            ns3::Seconds(length / spec.speed_mps),
            ns3::Vector(start.x + length * dx, start.y + length * dy, start.z)));
      }
      nodes.Get(i)->AggregateObject(walk);
    }
    return;
  }
  auto speed = ns3::CreateObject<ns3::ConstantRandomVariable>();
  speed->SetAttribute("Constant", ns3::DoubleValue(spec.speed_mps));
  speed->SetStream(streams.reserve(1));
  ns3::MobilityHelper mobility;
  if (spec.model == "random-walk") {
    mobility.SetMobilityModel(
        "ns3::RandomWalk2dMobilityModel", "Bounds",
        ns3::RectangleValue(ns3::Rectangle(center.x - b, center.x + b, center.y - b, center.y + b)),
        "Speed", ns3::PointerValue(speed), "Mode", ns3::StringValue("Time"), "Time",
        ns3::TimeValue(ns3::Seconds(1.0)));
  } else {
    auto pause = ns3::CreateObject<ns3::ConstantRandomVariable>();
    pause->SetAttribute("Constant", ns3::DoubleValue(spec.pause_s));
    auto area = ns3::CreateObject<ns3::RandomRectanglePositionAllocator>();
    auto x = ns3::CreateObject<ns3::UniformRandomVariable>();
    x->SetAttribute("Min", ns3::DoubleValue(center.x - b));
    x->SetAttribute("Max", ns3::DoubleValue(center.x + b));
    auto y = ns3::CreateObject<ns3::UniformRandomVariable>();
    y->SetAttribute("Min", ns3::DoubleValue(center.y - b));
    y->SetAttribute("Max", ns3::DoubleValue(center.y + b));
    x->SetStream(streams.reserve(1));
    y->SetStream(streams.reserve(1));
    pause->SetStream(streams.reserve(1));
    area->SetX(x);
    area->SetY(y);
    mobility.SetMobilityModel("ns3::RandomWaypointMobilityModel", "Speed",
                              ns3::PointerValue(speed), "Pause", ns3::PointerValue(pause),
                              "PositionAllocator", ns3::PointerValue(area));
  }
  auto start = ns3::CreateObject<ns3::ListPositionAllocator>();
  for (const auto& p : positions) start->Add(p);
  mobility.SetPositionAllocator(start);
  mobility.Install(nodes);
  mobility.AssignStreams(nodes, streams.reserve(static_cast<std::int64_t>(nodes.GetN()) * 4 + 4));
}

WiredLink connect_p2p(ns3::Ptr<ns3::Node> a, ns3::Ptr<ns3::Node> b, double rate_bps,
                      double delay_s, std::uint32_t mtu, const std::string& subnet,
                      const std::string& mask, std::uint32_t queue_packets) {
  ns3::PointToPointHelper link;
  link.SetDeviceAttribute("DataRate", ns3::StringValue(format_bps(rate_bps)));
  link.SetDeviceAttribute("Mtu", ns3::UintegerValue(mtu));
  link.SetChannelAttribute("Delay", ns3::TimeValue(ns3::Seconds(delay_s)));
  link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                ns3::QueueSizeValue(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, queue_packets)));
  ns3::NetDeviceContainer devices = link.Install(a, b);
  ns3::Ipv4AddressHelper ip;
  ip.SetBase(subnet.c_str(), mask.c_str());
  ns3::Ipv4InterfaceContainer ifaces = ip.Assign(devices);
  ns3::TrafficControlHelper tc;
  tc.Uninstall(devices);
  WiredLink out;
  out.a_device = devices.Get(0);
  out.b_device = devices.Get(1);
  out.a_address = ifaces.GetAddress(0);
  out.b_address = ifaces.GetAddress(1);
  out.a_interface = interface_of(out.a_device);
  out.b_interface = interface_of(out.b_device);
  return out;
}

std::uint32_t interface_of(ns3::Ptr<ns3::NetDevice> device) {
  auto ipv4 = device->GetNode()->GetObject<ns3::Ipv4>();
  return static_cast<std::uint32_t>(ipv4->GetInterfaceForDevice(device));
}

void add_default_route(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address next_hop,
                       std::uint32_t interface) {
  ns3::Ipv4StaticRoutingHelper helper;
  helper.GetStaticRouting(node->GetObject<ns3::Ipv4>())->SetDefaultRoute(next_hop, interface);
}

void add_network_route(ns3::Ptr<ns3::Node> node, ns3::Ipv4Address network, ns3::Ipv4Mask mask,
                       ns3::Ipv4Address next_hop, std::uint32_t interface) {
  ns3::Ipv4StaticRoutingHelper helper;
  helper.GetStaticRouting(node->GetObject<ns3::Ipv4>())
      ->AddNetworkRouteTo(network, mask, next_hop, interface);
}

void apply_wireless_tcp_defaults() {
  ns3::Config::SetDefault("ns3::TcpSocket::ConnTimeout", ns3::TimeValue(ns3::Seconds(1.0)));
}

std::string nth_subnet(const std::string& base, std::uint32_t index, std::uint32_t size) {
  const std::uint32_t value = ns3::Ipv4Address(base.c_str()).Get() + index * size;
  std::ostringstream out;
  ns3::Ipv4Address(value).Print(out);
  return out.str();
}

}  // namespace gradwire
