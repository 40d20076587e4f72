#include "netmodels/WifiNetwork.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include <ns3/boolean.h>
#include <ns3/double.h>
#include <ns3/internet-stack-helper.h>
#include <ns3/ipv4-address-helper.h>
#include <ns3/neighbor-cache-helper.h>
#include <ns3/nstime.h>
#include <ns3/qos-txop.h>
#include <ns3/ssid.h>
#include <ns3/string.h>
#include <ns3/uinteger.h>
#include <ns3/wifi-helper.h>
#include <ns3/wifi-mac-helper.h>
#include <ns3/wifi-mac.h>
#include <ns3/wifi-net-device.h>
#include <ns3/wifi-phy-operating-channel.h>
#include <ns3/yans-wifi-helper.h>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "common/DeclaredFields.h"
#include "common/FieldTable.h"
#include "netmodels/BlockAckRecipientSync.h"
#include "netmodels/FamilyKeys.h"
#include "netmodels/HostTcpSocketFactory.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/TcpDefaults.h"
#include "netmodels/WifiChannels.h"

namespace gradwire {

namespace {

// ns-3.37 gives up on an ADDBA response after 1 ms and meanwhile sends normal-ack MPDUs; when
// the late response then arrives the originator moves its window past them, while the
// recipient's window stays at the request's starting sequence number and holds every later
// MPDU for the missing ones forever. One A-MPDU in the air outlasts 1 ms, so two flows in a
// cell (both directions of a TCP connection) hit this often. Waiting 1 s, as Linux's mac80211
// does, makes a late response establish the agreement it asked for.
void wait_for_addba_responses(const ns3::NetDeviceContainer& devices) {
  for (auto it = devices.Begin(); it != devices.End(); ++it) {
    auto device = ns3::DynamicCast<ns3::WifiNetDevice>(*it);
    if (device == nullptr || !device->GetMac()->GetQosSupported()) continue;
    for (auto ac : {ns3::AC_BE, ns3::AC_BK, ns3::AC_VI, ns3::AC_VO}) {
      device->GetMac()->GetQosTxop(ac)->SetAttribute("AddBaResponseTimeout",
                                                     ns3::TimeValue(ns3::Seconds(1)));
    }
  }
}

// null, the declared default, means no position.
void read_ap_position(const JsonFields& f, const ParamSpec& spec, WifiConfig& c) {
  if (!f.has(spec.name) || f.object().at(spec.name).is_null()) return;
  const nlohmann::json& v = f.object().at(spec.name);
  const auto coordinate = [](const nlohmann::json& x) {
    return x.is_number() && x.get<double>() >= -100000 && x.get<double>() <= 100000;
  };
  if (!v.is_array() || v.size() != 2 || !coordinate(v[0]) || !coordinate(v[1])) {
    throw ConfigError(f.path_of(spec.name),
                      "expected [x, y] in metres, each in [-100000, 100000], or null, got " +
                          json_brief(v));
  }
  c.ap_position = std::array<double, 2>{v[0].get<double>(), v[1].get<double>()};
}

using namespace params;

std::string two_decimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Every key of the family, each bound to the member that holds it: read, written and listed
// from here. The band, the width and the MCS narrow with the standard (and the band).
const FamilyKeys<WifiConfig>& keys() {
  static const FamilyKeys<WifiConfig> kKeys(
      "wifi",
      FieldTable<WifiConfig>()
          .add(choice("standard", "ax", {"n", "ac", "ax"},
                      "802.11n (HT), 802.11ac (VHT) or 802.11ax (HE)"),
               &WifiConfig::standard)
          .add(choice("band", "5GHz", {"2.4GHz", "5GHz", "6GHz"},
                      "`2.4GHz` or `5GHz` with n, `5GHz` with ac, any with ax"),
               &WifiConfig::band,
               [](ParamSpec s, const WifiConfig& c) {
                 if (c.standard == "n") s.choices = {"2.4GHz", "5GHz"};
                 if (c.standard == "ac") s.choices = {"5GHz"};
                 return s;
               })
          .add(derived(integer("width_mhz", 80, 20, 160,
                               "channel width: 20, 40, 80 or 160 MHz; at most 40 with n or at "
                               "2.4GHz"),
                       "80 (20 with n or at 2.4GHz)"),
               &WifiConfig::width_mhz,
               [](ParamSpec s, const WifiConfig& c) {
                 const bool narrow = c.standard == "n" || c.band == "2.4GHz";
                 s.default_value = narrow ? 20 : 80;
                 s.max = narrow ? 40 : 160;
                 return s;
               })
          .add(integer("channel", 0, 0, 233,
                       "channel number; 0: the band's default channel for the width"),
               &WifiConfig::channel)
          .add(integer("spatial_streams", 1, 1, 4, "antennas and spatial streams on every node"),
               &WifiConfig::spatial_streams)
          .add(choice("rate_control", "ideal", {"ideal", "minstrel-ht", "constant"},
                      "`ideal` (ns-3's IdealWifiManager: the best MCS for the SNR), "
                      "`minstrel-ht` (sampling, as Linux does) or `constant` (`mcs`)"),
               &WifiConfig::rate_control)
          .add(integer("mcs", 7, 0, 11,
                       "with `rate_control` `constant`: the MCS index, n 0-7 (per spatial "
                       "stream), ac 0-9, ax 0-11"),
               &WifiConfig::mcs,
               [](ParamSpec s, const WifiConfig& c) {
                 s.max = c.standard == "n" ? 7 : c.standard == "ac" ? 9 : 11;
                 return s;
               })
          .add(choice("propagation", "log-distance", {"log-distance", "friis"},
                      "path loss: `log-distance` (`exponent`, `reference_loss_db`) or `friis` "
                      "(free space at the band's centre frequency)"),
               &WifiConfig::propagation)
          .add(number("exponent", 3.0, 1.0, 8.0, "log-distance path-loss exponent"),
               &WifiConfig::exponent)
          .add(derived(number("reference_loss_db", wifi_default_reference_loss_db("5GHz"), 0.0,
                              200.0, "log-distance: the loss at 1 m, dB"),
                       "Friis loss at 1 m for the band: " +
                           two_decimals(wifi_default_reference_loss_db("2.4GHz")) + " (2.4GHz), " +
                           two_decimals(wifi_default_reference_loss_db("5GHz")) + " (5GHz), " +
                           two_decimals(wifi_default_reference_loss_db("6GHz")) + " (6GHz)"),
               &WifiConfig::reference_loss_db,
               [](ParamSpec s, const WifiConfig& c) {
                 s.default_value = wifi_default_reference_loss_db(c.band);
                 return s;
               })
          .add(fading_param("fast fading after the path loss: `nakagami` (ns-3's "
                            "NakagamiPropagationLossModel: each frame's received power is "
                            "drawn from a Nakagami-m distribution around the path loss's, "
                            "`nakagami_m`) or `none`"),
               &WifiConfig::fading)
          .add(nakagami_m_param("`fading` `nakagami`: the shape m; 1 is Rayleigh fading (no "
                                "line of sight), larger is milder (line of sight: m = (K + 1)^2 "
                                "/ (2K + 1) for Rician factor K)"),
               &WifiConfig::nakagami_m)
          .add(number("tx_power_dbm", 20.0, -10.0, 40.0, "transmit power of every radio, dBm"),
               &WifiConfig::tx_power_dbm)
          .add(derived(key_with_default(
                           list("ap_position",
                                "where the AP stands, [x, y] metres; its stations stand and "
                                "move around it. null: at the origin, on a medium of its own. "
                                "In a `hybrid` network the Wi-Fi groups that have a position "
                                "share one medium per band, channel and width: they hear, defer "
                                "to and interfere with each other's frames (their propagation "
                                "keys must agree); a group without one hears no other group"),
                           nullptr),
                       "null"),
               read_ap_position,
               [](const WifiConfig& c, const ParamSpec& s, nlohmann::json& out) {
                 out[s.name] =
                     c.ap_position ? nlohmann::json(*c.ap_position) : nlohmann::json(nullptr);
               })
          .add(object("placement",
                      "where worker stations stand around the AP (`placement` below; default "
                      "5 m away)"),
               &WifiConfig::placement, PlacementSpec::reader(5.0), &PlacementSpec::to_json)
          .add(rate("backhaul_rate", "1Gbps",
                    "AP <-> wired server (`server` `wired`) or, in a hybrid group, AP <-> core "
                    "router"),
               &WifiConfig::backhaul_rate_bps)
          .add(duration("backhaul_delay", "500us", "one-way delay of the backhaul"),
               &WifiConfig::backhaul_delay_s)
          .add(impairments_param(true), &WifiConfig::impairments, ImpairmentsConfig::reader(true),
               ImpairmentsConfig::writer(true))
          .add(object("radio_energy",
                      "the radios' power draw, for the energy each host's radio used "
                      "(`radio_energy` below); measures only, changes nothing in the "
                      "simulation"),
               &WifiConfig::radio_energy, &WifiRadioEnergyConfig::from_json,
               &WifiRadioEnergyConfig::to_json)
          .add(choice("server", "station", {"station", "ap", "wired"},
                      "where the last host sits: another `station`, the `ap` itself, or a host "
                      "`wired` behind the AP. Under topology `ps` that host is the parameter "
                      "server; under `ring` it is the last worker, so keep `station` for "
                      "rings"),
               &WifiConfig::server)
          .add(tcp_buffer_param(), &WifiConfig::tcp_buffer_bytes));
  return kKeys;
}

}  // namespace

const std::vector<ParamSpec>& wifi_params() { return keys().params(); }

const std::vector<ParamSpec>& wifi_group_params() { return keys().params(true); }

WifiConfig WifiConfig::from_json(const nlohmann::json& object, const std::string& path,
                                 bool group) {
  WifiConfig c = keys().read(object, path, group);
  if (c.width_mhz != 20 && c.width_mhz != 40 && c.width_mhz != 80 && c.width_mhz != 160) {
    throw ConfigError(JsonFields(object, path).path_of("width_mhz"),
                      "expected 20, 40, 80 or 160");
  }
  return c;
}

nlohmann::json WifiConfig::to_json(bool group) const { return keys().write(*this, group); }

double WifiConfig::peak_phy_rate_bps() const {
  // One spatial stream, 800 ns guard interval: HT MCS 7, VHT MCS 8 (20 MHz) / 9, HE MCS 11.
  double mbps = 0;
  const int w = static_cast<int>(width_mhz);
  if (standard == "n") mbps = w == 20 ? 65.0 : 135.0;
  if (standard == "ac") mbps = w == 20 ? 78.0 : w == 40 ? 180.0 : w == 80 ? 390.0 : 780.0;
  if (standard == "ax") mbps = w == 20 ? 143.4 : w == 40 ? 286.8 : w == 80 ? 600.5 : 1201.0;
  return mbps * 1e6 * spatial_streams;
}

namespace {

ns3::WifiStandard wifi_standard(const std::string& standard) {
  return standard == "n"    ? ns3::WIFI_STANDARD_80211n
         : standard == "ac" ? ns3::WIFI_STANDARD_80211ac
                            : ns3::WIFI_STANDARD_80211ax;
}

}  // namespace

std::uint32_t WifiConfig::channel_number() const {
  if (channel != 0) return channel;
  const ns3::WifiPhyBand phy_band = band == "2.4GHz" ? ns3::WIFI_PHY_BAND_2_4GHZ
                                    : band == "6GHz" ? ns3::WIFI_PHY_BAND_6GHZ
                                                     : ns3::WIFI_PHY_BAND_5GHZ;
  return ns3::WifiPhyOperatingChannel::GetDefaultChannelNumber(
      static_cast<std::uint16_t>(width_mhz), wifi_standard(standard), phy_band);
}

ns3::Vector WifiConfig::ap_origin() const {
  return ap_position ? ns3::Vector((*ap_position)[0], (*ap_position)[1], 0) : ns3::Vector(0, 0, 0);
}

bool WifiConfig::shares_medium_with(const WifiConfig& other) const {
  return ap_position && other.ap_position && band == other.band &&
         channel_number() == other.channel_number() && width_mhz == other.width_mhz;
}

std::string WifiConfig::propagation_differs_from(const WifiConfig& other) const {
  if (propagation != other.propagation) return "propagation";
  if (propagation == "log-distance" && exponent != other.exponent) return "exponent";
  if (propagation == "log-distance" && reference_loss_db != other.reference_loss_db) {
    return "reference_loss_db";
  }
  if (fading != other.fading) return "fading";
  if (fading == "nakagami" && nakagami_m != other.nakagami_m) return "nakagami_m";
  return "";
}

WifiCell build_wifi_cell(const WifiConfig& config, std::size_t worker_stations,
                         const std::string& subnet, ns3::Ptr<ns3::YansWifiChannel> channel,
                         const std::string& ssid_name, StreamAllocator& streams) {
  const std::size_t extra = config.impairments.background.size();
  if (worker_stations + extra > 250) {
    throw ConfigError("network", "a Wi-Fi cell holds at most 250 stations");
  }
  WifiCell cell;
  cell.stations.Create(static_cast<std::uint32_t>(worker_stations + extra));
  cell.ap = ns3::CreateObject<ns3::Node>();

  ns3::YansWifiPhyHelper phy;
  phy.SetChannel(channel);
  const std::string band = config.band == "2.4GHz" ? "BAND_2_4GHZ"
                           : config.band == "6GHz" ? "BAND_6GHZ"
                                                   : "BAND_5GHZ";
  phy.Set("ChannelSettings", ns3::StringValue("{" + std::to_string(config.channel) + ", " +
                                              std::to_string(config.width_mhz) + ", " + band +
                                              ", 0}"));
  phy.Set("TxPowerStart", ns3::DoubleValue(config.tx_power_dbm));
  phy.Set("TxPowerEnd", ns3::DoubleValue(config.tx_power_dbm));
  phy.Set("Antennas", ns3::UintegerValue(config.spatial_streams));
  phy.Set("MaxSupportedTxSpatialStreams", ns3::UintegerValue(config.spatial_streams));
  phy.Set("MaxSupportedRxSpatialStreams", ns3::UintegerValue(config.spatial_streams));

  ns3::WifiHelper wifi;
  wifi.SetStandard(wifi_standard(config.standard));
  if (config.rate_control == "ideal") {
    wifi.SetRemoteStationManager("ns3::IdealWifiManager");
  } else if (config.rate_control == "minstrel-ht") {
    wifi.SetRemoteStationManager("ns3::MinstrelHtWifiManager");
  } else {
    std::string mode;
    if (config.standard == "n") {
      mode = "HtMcs" + std::to_string(config.mcs + 8 * (config.spatial_streams - 1));
    } else {
      mode = (config.standard == "ac" ? "VhtMcs" : "HeMcs") + std::to_string(config.mcs);
    }
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager", "DataMode",
                                 ns3::StringValue(mode), "ControlMode", ns3::StringValue(mode));
  }
  // HE data with the 800 ns guard interval (2x HE-LTF), as HT/VHT use and as the PHY rates
  // gradwire states (peak_phy_rate_bps) assume; ns-3's HeConfiguration defaults to 3200 ns.
  wifi.ConfigHeOptions("GuardInterval", ns3::TimeValue(ns3::NanoSeconds(800)));
  ns3::WifiMacHelper mac;
  const ns3::Ssid ssid(ssid_name);
  // Stations drop traffic until associated: probe at once (within 5 ms, not ns-3's 50 ms) so
  // the cell is up within milliseconds of the start.
  mac.SetType("ns3::StaWifiMac", "Ssid", ns3::SsidValue(ssid), "ActiveProbing",
              ns3::BooleanValue(true), "ProbeDelay",
              ns3::StringValue("ns3::UniformRandomVariable[Min=0.0|Max=0.005]"));
  cell.station_devices = wifi.Install(phy, mac, cell.stations);
  mac.SetType("ns3::ApWifiMac", "Ssid", ns3::SsidValue(ssid));
  cell.ap_device = wifi.Install(phy, mac, cell.ap).Get(0);
  ns3::NetDeviceContainer all_devices(cell.station_devices);
  all_devices.Add(cell.ap_device);
  wait_for_addba_responses(all_devices);
  BlockAckRecipientSync::install(all_devices);
  // Energy only listens to the PHYs' states: no random draws, no change to what they do.
  cell.energy = install_wifi_radio_energy(config.radio_energy, all_devices);
  cell.station_energy.assign(cell.energy.models.begin(), cell.energy.models.end() - 1);
  cell.ap_energy = cell.energy.models.back();
  wifi.AssignStreams(all_devices, streams.reserve(64 * static_cast<std::int64_t>(all_devices.GetN())));

  // Positions: the AP at its position, workers around it by placement (and mobility),
  // background stations at their own distances from it.
  const ns3::Vector origin = config.ap_origin();
  place_fixed(ns3::NodeContainer(cell.ap), {origin});
  ns3::NodeContainer workers, background;
  for (std::size_t i = 0; i < worker_stations + extra; ++i) {
    (i < worker_stations ? workers : background).Add(cell.stations.Get(static_cast<std::uint32_t>(i)));
  }
  place_mobile(workers, config.placement.positions(worker_stations, origin, streams),
               config.impairments.mobility, origin, streams);
  std::vector<ns3::Vector> bg_positions;
  for (std::size_t i = 0; i < extra; ++i) {
    const double d = config.impairments.background[i].distance_m;
    const double angle = 0.5 + 2.0 * static_cast<double>(i);
    bg_positions.emplace_back(origin.x + d * std::cos(angle), origin.y + d * std::sin(angle),
                              origin.z);
  }
  place_fixed(background, bg_positions);

  ns3::InternetStackHelper stack;
  stack.SetIpv6StackInstall(false);  // no IPv6 router solicitations on the air
  stack.Install(cell.ap);
  stack.Install(cell.stations);
  stack.AssignStreams(ns3::NodeContainer(ns3::NodeContainer(cell.ap), cell.stations),
                      streams.reserve(8 * (cell.stations.GetN() + 1)));
  ns3::Ipv4AddressHelper ip;
  ip.SetBase(subnet.c_str(), "255.255.255.0");
  ns3::Ipv4InterfaceContainer all_ifaces = ip.Assign(ns3::NetDeviceContainer(cell.ap_device));
  cell.ap_address = all_ifaces.GetAddress(0);
  ns3::Ipv4InterfaceContainer sta_ifaces = ip.Assign(cell.station_devices);
  all_ifaces.Add(sta_ifaces);
  for (std::uint32_t i = 0; i < sta_ifaces.GetN(); ++i) {
    cell.station_addresses.push_back(sta_ifaces.GetAddress(i));
    add_default_route(cell.stations.Get(i), cell.ap_address,
                      interface_of(cell.station_devices.Get(i)));
  }
  cell.ap_interface = interface_of(cell.ap_device);
  // No ARP broadcasts racing association: every neighbour on the radio channel is known.
  ns3::NeighborCacheHelper neighbours;
  neighbours.PopulateNeighborCache(all_ifaces);
  return cell;
}

std::map<std::size_t, double> WifiCell::station_joules(std::size_t hosts) const {
  std::map<std::size_t, double> out;
  for (std::size_t i = 0; i < hosts && i < station_energy.size(); ++i) {
    out[i] = station_energy[i]->GetTotalEnergyConsumption();
  }
  return out;
}

WifiNetwork::WifiNetwork(const WifiConfig& config, std::size_t hosts) : config_(config) {
  apply_tcp_defaults(1500, config_.tcp_buffer_bytes);
  apply_wireless_tcp_defaults();
  const bool server_apart = config_.server != "station";
  if (hosts < (server_apart ? 2u : 1u)) throw ConfigError("network", "too few hosts for Wi-Fi");
  const std::size_t stations = hosts - (server_apart ? 1 : 0);
  WifiChannels channels;
  cell_ = build_wifi_cell(config_, stations, "192.168.1.0", channels.channel_for(config_),
                          "gradwire", streams_);

  std::vector<HostAttachment> attachments;
  for (std::size_t i = 0; i < stations; ++i) {
    hosts_.push_back(cell_.stations.Get(static_cast<std::uint32_t>(i)));
    addresses_.push_back(cell_.station_addresses[i]);
    attachments.push_back(HostAttachment{cell_.station_devices.Get(static_cast<std::uint32_t>(i)),
                                         cell_.ap_device, true, cell_.station_addresses[i]});
  }
  if (config_.server == "ap") {
    hosts_.push_back(cell_.ap);
    addresses_.push_back(cell_.ap_address);
    attachments.push_back(HostAttachment{cell_.ap_device, nullptr, false, cell_.ap_address});
  } else if (config_.server == "wired") {
    auto server = ns3::CreateObject<ns3::Node>();
    ns3::InternetStackHelper stack;
    stack.SetIpv6StackInstall(false);  // no IPv6 router solicitations on the air
    stack.Install(server);
    const WiredLink link = connect_p2p(cell_.ap, server, config_.backhaul_rate_bps,
                                       config_.backhaul_delay_s, 1500, "192.168.200.0");
    add_default_route(server, link.a_address, link.b_interface);
    hosts_.push_back(server);
    addresses_.push_back(link.b_address);
    attachments.push_back(HostAttachment{link.b_device, link.a_device, false, link.b_address});
  }
  netems_ = apply_impairments(config_.impairments, attachments, streams_);

  for (std::size_t i = 0; i < config_.impairments.background.size(); ++i) {
    const auto& flow = config_.impairments.background[i];
    const long target = flow.target < 0 ? static_cast<long>(hosts_.size()) + flow.target : flow.target;
    if (target < 0 || target >= static_cast<long>(hosts_.size())) {
      throw ConfigError("network.impairments.background[" + std::to_string(i) + "].target",
                        "expected a host index in [-" + std::to_string(hosts_.size()) + ", " +
                            std::to_string(hosts_.size() - 1) + "]");
    }
    auto extra = cell_.stations.Get(static_cast<std::uint32_t>(stations + i));
    const ns3::Ipv4Address extra_address = cell_.station_addresses[stations + i];
    if (flow.direction == "uplink") {
      start_background_flow(flow, extra, hosts_[target], addresses_[target], streams_);
    } else {
      start_background_flow(flow, hosts_[target], extra, extra_address, streams_);
    }
  }
  channels.assign_streams(streams_);  // last: fading leaves every other draw as it was
  // Every host keeps Linux's small queues below its TCP sockets where its device allows.
  HostTcpSocketFactory::FollowHostQueues(*this);
}

std::map<std::size_t, double> WifiNetwork::radio_joules() const {
  const bool server_apart = config_.server != "station";
  std::map<std::size_t, double> out =
      cell_.station_joules(hosts_.size() - (server_apart ? 1 : 0));
  if (config_.server == "ap") out[hosts_.size() - 1] = cell_.ap_energy->GetTotalEnergyConsumption();
  return out;
}

std::string WifiNetwork::describe() const {
  std::ostringstream out;
  out << "wifi 802.11" << config_.standard << " " << config_.band << " " << config_.width_mhz
      << " MHz x" << config_.spatial_streams << " SS, " << cell_.stations.GetN()
      << " stations (" << config_.impairments.background.size() << " background), rate "
      << config_.rate_control << ", server " << config_.server;
  if (config_.fading == "nakagami") out << ", Nakagami fading m=" << config_.nakagami_m;
  if (config_.impairments.shapes_packets()) out << ", impaired";
  return out.str();
}

}  // namespace gradwire
