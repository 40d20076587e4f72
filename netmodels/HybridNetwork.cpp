#include "netmodels/HybridNetwork.h"

#include <sstream>
#include <variant>

#include <ns3/internet-stack-helper.h>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "common/DeclaredFields.h"
#include "common/FieldTable.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/FamilyKeys.h"
#include "netmodels/HostTcpSocketFactory.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/NetworkParts.h"
#include "netmodels/TcpDefaults.h"
#include "netmodels/WifiChannels.h"

namespace gradwire {

namespace {

using namespace params;

// An Ethernet group's keys, each bound to the member that holds it: read, written and listed
// from here.
const FieldTable<EthernetGroupConfig>& ethernet_group_members() {
  static const FieldTable<EthernetGroupConfig> kMembers =
      FieldTable<EthernetGroupConfig>()
          .add(ethernet_rate_param(), &EthernetGroupConfig::rate_bps)
          .add(ethernet_delay_param(), &EthernetGroupConfig::delay_s)
          .add(integer("queue", 1000, 1, 1000000,
                       "drop-tail queue per device (host NIC and switch port), packets"),
               &EthernetGroupConfig::queue_packets)
          .add(rate("backhaul_rate", "10Gbps", "switch <-> core router"),
               &EthernetGroupConfig::backhaul_rate_bps)
          .add(duration("backhaul_delay", "100us", "one-way delay of the backhaul"),
               &EthernetGroupConfig::backhaul_delay_s)
          .add(impairments_param(false), &EthernetGroupConfig::impairments,
               ImpairmentsConfig::reader(false), ImpairmentsConfig::writer(false));
  return kMembers;
}

EthernetGroupConfig read_ethernet_group(const nlohmann::json& object, const std::string& path) {
  JsonFields g(object, path);
  g.allow(allowed_keys(param_names(hybrid_group_params()), ethernet_group_params()));
  EthernetGroupConfig e;
  ethernet_group_members().read(g, e);
  return e;
}

/// `groups`: every entry read by its family's keys as a group.
std::vector<HybridGroup> read_groups(const JsonFields& f, const ParamSpec& spec) {
  const std::string where = f.path_of(spec.name);
  const nlohmann::json& object = f.object();
  if (!f.has(spec.name) || !object.at(spec.name).is_array() || object.at(spec.name).empty()) {
    throw ConfigError(where, "expected a non-empty list of worker groups, e.g. "
                             "[{\"family\": \"wifi\", \"workers\": 4}, {\"family\": \"lte\", "
                             "\"workers\": 2}]");
  }
  const ParamSpec& family_spec = param_named(hybrid_group_params(), "family");
  const ParamSpec& workers_spec = param_named(hybrid_group_params(), "workers");
  bool lte_seen = false;
  std::vector<HybridGroup> out;
  const auto& groups = object.at(spec.name);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string gp = where + "[" + std::to_string(i) + "]";
    JsonFields g(groups[i], gp);
    HybridGroup group;
    // One of the declared choices: "wifi", "lte" or "ethernet".
    const std::string family = declared_required_string(g, family_spec);
    group.workers = static_cast<std::uint32_t>(declared_required_integer(g, workers_spec));
    if (family == "wifi") {
      group.config = WifiConfig::from_json(groups[i], gp, true);
    } else if (family == "lte") {
      if (lte_seen) {
        throw ConfigError(g.path_of("family"), "at most one \"lte\" group (one EPC)");
      }
      lte_seen = true;
      group.config = LteConfig::from_json(groups[i], gp, true);
    } else {
      group.config = read_ethernet_group(groups[i], gp);
    }
    out.push_back(group);
  }
  if (out.size() > 200) throw ConfigError(where, "at most 200 groups");
  // Cells on one medium share its channel object, and with it one propagation.
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto* wifi = std::get_if<WifiConfig>(&out[i].config);
    for (std::size_t j = 0; wifi != nullptr && j < i; ++j) {
      const auto* earlier = std::get_if<WifiConfig>(&out[j].config);
      if (earlier == nullptr || !wifi->shares_medium_with(*earlier)) continue;
      const std::string key = wifi->propagation_differs_from(*earlier);
      if (key.empty()) break;
      throw ConfigError(where + "[" + std::to_string(i) + "]." + key,
                        "this group shares the medium of groups[" + std::to_string(j) +
                            "] (both have an ap_position, the same band, channel and width): "
                            "expected the same `" + key + "` as it");
    }
  }
  return out;
}

nlohmann::json groups_json(const std::vector<HybridGroup>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : groups) {
    nlohmann::json j;
    if (const auto* wifi = std::get_if<WifiConfig>(&g.config)) {
      j = wifi->to_json(true);
    } else if (const auto* lte = std::get_if<LteConfig>(&g.config)) {
      j = lte->to_json(true);
    } else {
      j = {{"family", "ethernet"}};
      ethernet_group_members().write(std::get<EthernetGroupConfig>(g.config), j);
    }
    j["workers"] = g.workers;
    out.push_back(j);
  }
  return out;
}

// Every key of the family, each bound to the member that holds it: read, written and listed
// from here.
const FamilyKeys<HybridConfig>& keys() {
  static const FamilyKeys<HybridConfig> kKeys(
      "hybrid",
      FieldTable<HybridConfig>()
          .add(
              required_key(list("groups",
                                "the worker groups (`groups` entries below), at most 200 and "
                                "at most one `lte` (one EPC). Hosts are numbered group by "
                                "group in list order, the server last; the groups' `workers` "
                                "add up to `training.workers`")),
              [](const JsonFields& f, const ParamSpec& s, HybridConfig& c) {
                c.groups = read_groups(f, s);
              },
              [](const HybridConfig& c, const ParamSpec& s, nlohmann::json& out) {
                out[s.name] = groups_json(c.groups);
              })
          .add(rate("server_rate", "10Gbps",
                    "core router <-> server host (when the topology has one)"),
               &HybridConfig::server_rate_bps)
          .add(duration("server_delay", "100us", "one-way delay of that link"),
               &HybridConfig::server_delay_s)
          .add(tcp_buffer_param(), &HybridConfig::tcp_buffer_bytes));
  return kKeys;
}

}  // namespace

const std::vector<ParamSpec>& hybrid_params() { return keys().params(); }

const std::vector<ParamSpec>& ethernet_group_params() {
  static const std::vector<ParamSpec> kParams = ethernet_group_members().params();
  return kParams;
}

std::string HybridGroup::family() const {
  if (std::holds_alternative<WifiConfig>(config)) return "wifi";
  if (std::holds_alternative<LteConfig>(config)) return "lte";
  return "ethernet";
}

HybridConfig HybridConfig::from_json(const nlohmann::json& object, const std::string& path) {
  return keys().read(object, path);
}

nlohmann::json HybridConfig::to_json() const { return keys().write(*this); }

std::size_t HybridConfig::workers() const {
  std::size_t n = 0;
  for (const auto& g : groups) n += g.workers;
  return n;
}

HybridNetwork::HybridNetwork(const HybridConfig& config, std::size_t hosts) : config_(config) {
  apply_tcp_defaults(1500, config_.tcp_buffer_bytes);
  apply_wireless_tcp_defaults();
  const std::size_t workers = config_.workers();
  if (hosts != workers && hosts != workers + 1) {
    throw ConfigError("network.groups",
                      "the groups hold " + std::to_string(workers) +
                          " workers, but the scenario needs " + std::to_string(hosts) +
                          " hosts (training.workers, plus one for a parameter server)");
  }
  const bool with_server = hosts == workers + 1;
  ns3::InternetStackHelper stack;
  stack.SetIpv6StackInstall(false);  // no IPv6 router solicitations on the air
  auto core = ns3::CreateObject<ns3::Node>();
  stack.Install(core);

  struct PendingFlow {
    BackgroundFlowSpec flow;
    ns3::Ptr<ns3::Node> node;
    ns3::Ipv4Address address;
    std::string path;
  };
  std::vector<PendingFlow> flows;
  WifiChannels channels;

  for (std::size_t g = 0; g < config_.groups.size(); ++g) {
    const HybridGroup& group = config_.groups[g];
    const std::string backhaul_subnet = nth_subnet("172.16.0.0", static_cast<std::uint32_t>(g), 4);
    std::vector<HostAttachment> attachments;
    const ImpairmentsConfig* impairments = nullptr;
    auto bg_path = [&](std::size_t i) {
      return "network.groups[" + std::to_string(g) + "].impairments.background[" +
             std::to_string(i) + "]";
    };
    if (const auto* ethernet = std::get_if<EthernetGroupConfig>(&group.config)) {
      const EthernetGroupConfig& e = *ethernet;
      impairments = &e.impairments;
      auto sw = ns3::CreateObject<ns3::Node>();
      stack.Install(sw);
      const std::size_t extra = e.impairments.background.size();
      for (std::size_t i = 0; i < group.workers + extra; ++i) {
        auto node = ns3::CreateObject<ns3::Node>();
        stack.Install(node);
        std::ostringstream subnet;
        subnet << "10." << (g + 1) << "." << i << ".0";
        const WiredLink link = connect_p2p(node, sw, e.rate_bps, e.delay_s, 1500, subnet.str(),
                                           "255.255.255.0", e.queue_packets);
        add_default_route(node, link.b_address, link.a_interface);
        if (i < group.workers) {
          hosts_.push_back(node);
          addresses_.push_back(link.a_address);
          families_.push_back(group.family());
          attachments.push_back(HostAttachment{link.a_device, link.b_device, false, link.a_address});
        } else {
          flows.push_back({e.impairments.background[i - group.workers], node, link.a_address,
                           bg_path(i - group.workers)});
        }
      }
      const WiredLink up = connect_p2p(sw, core, e.backhaul_rate_bps, e.backhaul_delay_s, 1500,
                                       backhaul_subnet);
      add_default_route(sw, up.b_address, up.a_interface);
      std::ostringstream net;
      net << "10." << (g + 1) << ".0.0";
      add_network_route(core, ns3::Ipv4Address(net.str().c_str()), ns3::Ipv4Mask("255.255.0.0"),
                        up.a_address, up.b_interface);
    } else if (const auto* wifi = std::get_if<WifiConfig>(&group.config)) {
      impairments = &wifi->impairments;
      std::ostringstream subnet;
      subnet << "192.168." << (g + 1) << ".0";
      // A cell on a shared medium hears the others' beacons and probe responses: its own
      // network name keeps its stations from associating with another group's AP. A cell
      // alone is named as a `wifi` network's cell is, so its beacons (whose length the name
      // sets) take the same air time whatever its place in the list.
      const std::string ssid =
          wifi->ap_position ? "gradwire-" + std::to_string(g) : std::string("gradwire");
      const WifiCell cell = build_wifi_cell(*wifi, group.workers, subnet.str(),
                                            channels.channel_for(*wifi), ssid, streams_);
      wifi_cells_.push_back(cell);
      for (std::uint32_t i = 0; i < cell.stations.GetN(); ++i) {
        if (i < group.workers) {
          const auto energy = cell.station_energy[i];
          radios_[hosts_.size()] = [energy] { return energy->GetTotalEnergyConsumption(); };
          hosts_.push_back(cell.stations.Get(i));
          addresses_.push_back(cell.station_addresses[i]);
          families_.push_back(group.family());
          attachments.push_back(HostAttachment{cell.station_devices.Get(i), cell.ap_device, true,
                                               cell.station_addresses[i]});
        } else {
          flows.push_back({wifi->impairments.background[i - group.workers],
                           cell.stations.Get(i), cell.station_addresses[i],
                           bg_path(i - group.workers)});
        }
      }
      const WiredLink up = connect_p2p(cell.ap, core, wifi->backhaul_rate_bps,
                                       wifi->backhaul_delay_s, 1500, backhaul_subnet);
      add_default_route(cell.ap, up.b_address, up.a_interface);
      add_network_route(core, ns3::Ipv4Address(subnet.str().c_str()),
                        ns3::Ipv4Mask("255.255.255.0"), up.a_address, up.b_interface);
    } else {
      const LteConfig& lte = std::get<LteConfig>(group.config);
      impairments = &lte.impairments;
      const LteCell cell = build_lte_cell(lte, group.workers, streams_);
      lte_cells_.push_back(cell);
      for (std::uint32_t i = 0; i < cell.ues.GetN(); ++i) {
        if (i < group.workers) {
          const auto energy = cell.ue_energy[i];
          radios_[hosts_.size()] = [energy] { return energy->joules(); };
          hosts_.push_back(cell.ues.Get(i));
          addresses_.push_back(cell.ue_addresses[i]);
          families_.push_back(group.family());
          attachments.push_back(HostAttachment{cell.ue_devices.Get(i), cell.pgw_tun, true,
                                               cell.ue_addresses[i]});
        } else {
          flows.push_back({lte.impairments.background[i - group.workers], cell.ues.Get(i),
                           cell.ue_addresses[i], bg_path(i - group.workers)});
        }
      }
      const WiredLink up = connect_p2p(cell.pgw, core, lte.backhaul_rate_bps,
                                       lte.backhaul_delay_s, 1500, backhaul_subnet);
      add_default_route(cell.pgw, up.b_address, up.a_interface);
      add_network_route(core, ns3::Ipv4Address("7.0.0.0"), ns3::Ipv4Mask("255.0.0.0"),
                        up.a_address, up.b_interface);
    }
    // Host indices inside a group's `impairments` count within the group.
    auto netems = apply_impairments(*impairments, attachments, streams_);
    netems_.insert(netems_.end(), netems.begin(), netems.end());
  }

  if (with_server) {
    auto server = ns3::CreateObject<ns3::Node>();
    stack.Install(server);
    const WiredLink link = connect_p2p(core, server, config_.server_rate_bps,
                                       config_.server_delay_s, 1500, "172.31.255.0");
    add_default_route(server, link.a_address, link.b_interface);
    hosts_.push_back(server);
    addresses_.push_back(link.b_address);
    families_.push_back("server");
  }

  for (const auto& f : flows) {
    const long target =
        f.flow.target < 0 ? static_cast<long>(hosts_.size()) + f.flow.target : f.flow.target;
    if (target < 0 || target >= static_cast<long>(hosts_.size())) {
      throw ConfigError(f.path + ".target", "expected a host index in [-" +
                                                std::to_string(hosts_.size()) + ", " +
                                                std::to_string(hosts_.size() - 1) + "]");
    }
    if (f.flow.direction == "uplink") {
      start_background_flow(f.flow, f.node, hosts_[target], addresses_[target], streams_);
    } else {
      start_background_flow(f.flow, hosts_[target], f.node, f.address, streams_);
    }
  }
  // Last, Wi-Fi's then LTE's: fading draws from blocks of its own only when it is on, so
  // turning it on leaves every other draw as it was.
  channels.assign_streams(streams_);
  for (const LteCell& cell : lte_cells_) assign_fading_streams(cell, streams_);
  // Every host keeps Linux's small queues below its TCP sockets where its device allows.
  HostTcpSocketFactory::FollowHostQueues(*this);
}

std::map<std::string, std::uint64_t> HybridNetwork::event_counts() const {
  std::map<std::string, std::uint64_t> out;
  for (const LteCell& cell : lte_cells_) {
    for (const auto& [name, count] : cell.event_counts()) out[name] += count;
  }
  return out;
}

std::map<std::size_t, double> HybridNetwork::radio_joules() const {
  std::map<std::size_t, double> out;
  for (const auto& [host, joules] : radios_) out[host] = joules();
  return out;
}

std::string HybridNetwork::describe() const {
  std::ostringstream out;
  out << "hybrid edge:";
  for (std::size_t g = 0; g < config_.groups.size(); ++g) {
    out << (g ? " +" : " ") << config_.groups[g].workers << " " << config_.groups[g].family();
  }
  out << (hosts_.size() > config_.workers() ? ", server behind a core router" : ", no server");
  return out.str();
}

}  // namespace gradwire
