// Hybrid edge: groups of workers on different families (Wi-Fi cells, one LTE cell, switched
// Ethernet) reaching one server or one ring. Every group's gateway (AP, PGW, switch) has its
// own backhaul link to a core router; the server host (when the topology has one: the last
// host) hangs off that router. Hosts are numbered group by group in the order the groups are
// listed, the server last. Routing is static.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ParamSpec.h"
#include "netmodels/Impairments.h"
#include "netmodels/LteNetwork.h"
#include "netmodels/Network.h"
#include "netmodels/StreamAllocator.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {

/// The family's own keys, and an Ethernet group's (a switch with a backhaul to the core), each
/// bound to its config's member (common/FieldTable.h): the one declaration from_json,
/// to_json, `gradwire networks` and docs/networks.md read.
const std::vector<ParamSpec>& hybrid_params();
const std::vector<ParamSpec>& ethernet_group_params();

struct EthernetGroupConfig {
  double rate_bps = 1e9;
  double delay_s = 50e-6;
  std::uint32_t queue_packets = 1000;
  double backhaul_rate_bps = 10e9;
  double backhaul_delay_s = 100e-6;
  ImpairmentsConfig impairments;
};

struct HybridGroup {
  std::uint32_t workers = 1;
  /// The group's family, by the keys it holds: a switch, a Wi-Fi cell or an LTE cell.
  std::variant<EthernetGroupConfig, WifiConfig, LteConfig> config;

  /// `family` as the group names it: "ethernet", "wifi" or "lte".
  std::string family() const;
};

struct HybridConfig {
  std::vector<HybridGroup> groups;
  double server_rate_bps = 10e9;  ///< core router <-> server host
  double server_delay_s = 100e-6;
  std::uint32_t tcp_buffer_bytes = 4 << 20;

  static HybridConfig from_json(const nlohmann::json& object, const std::string& path);
  nlohmann::json to_json() const;
  std::size_t workers() const;
};

class HybridNetwork : public Network {
 public:
  /// `hosts` must be the groups' worker total (ring) or that plus one (a server host).
  HybridNetwork(const HybridConfig& config, std::size_t hosts);

  std::string family() const override { return "hybrid"; }
  std::size_t host_count() const override { return hosts_.size(); }
  ns3::Ptr<ns3::Node> host(std::size_t index) const override { return hosts_.at(index); }
  ns3::Ipv4Address address(std::size_t index) const override { return addresses_.at(index); }
  std::string describe() const override;
  /// Association / attach completes within ~0.1 s in ns-3.37 at these scales; 0.25 s leaves
  /// margin for many stations.
  double ready_time_s() const override { return 0.25; }

  /// The LTE group's (handover on: its handovers, as LteNetwork reports them).
  std::map<std::string, std::uint64_t> event_counts() const override;
  /// The Wi-Fi stations' and LTE UEs' radios (Ethernet hosts and the server have none).
  std::map<std::size_t, double> radio_joules() const override;

  /// Family of the group host `index` belongs to ("server" for the server host).
  const std::string& host_family(std::size_t index) const { return families_.at(index); }

 private:
  HybridConfig config_;
  StreamAllocator streams_;  // one numbering for every group
  std::vector<ns3::Ptr<ns3::Node>> hosts_;
  std::vector<ns3::Ipv4Address> addresses_;
  std::vector<std::string> families_;
  std::vector<ns3::Ptr<NetemQueueDisc>> netems_;
  std::vector<LteCell> lte_cells_;  // kept alive with the network (at most one)
  std::vector<WifiCell> wifi_cells_;  // kept alive with the network: the PHYs hold their energy listeners
  std::map<std::size_t, std::function<double()>> radios_;  // host -> its radio's joules so far
};

}  // namespace gradwire
