// An LTE cell (or a few) with the EPC core: workers are UEs at configured distances from their
// eNodeB; the last host (the parameter server under topology "ps") is a UE too, a remote host
// behind the PGW (an Internet server), or an edge host next to the PGW (a short backhaul: MEC).
//
// ns-3 models: LteHelper + PointToPointEpcHelper (SGW/PGW/MME, GTP-U over point-to-point
// S1-U/S5), the chosen MAC scheduler, RLC AM (reliable, as TCP bearers use in practice) or
// UM, and the chosen path-loss model, with Nakagami fading chained onto it when asked. With
// handover, X2 links join the eNodeBs and ns-3's A3-RSRP algorithm moves UEs between them.
// UE <-> UE traffic goes through the PGW, as in a real EPC. Routing is static (the UE default
// gateway; 7.0.0.0/8 via the PGW on the server).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/net-device-container.h>
#include <ns3/node-container.h>
#include <ns3/propagation-loss-model.h>

#include "common/ParamSpec.h"
#include "netmodels/Impairments.h"
#include "netmodels/LteUeEnergyModel.h"
#include "netmodels/Network.h"
#include "netmodels/NetworkParts.h"
#include "netmodels/StreamAllocator.h"

namespace gradwire {

/// The family's own keys, each bound to its LteConfig member (common/FieldTable.h): the one
/// declaration from_json, to_json, `gradwire networks` and docs/networks.md read. As a hybrid
/// group: the same without `server` and `tcp_buffer`.
const std::vector<ParamSpec>& lte_params();
const std::vector<ParamSpec>& lte_group_params();

struct LteConfig {
  std::uint32_t enbs = 1;
  double enb_spacing_m = 500;      ///< eNodeBs on a line; UE i attaches to eNodeB i % enbs
  PlacementSpec placement;         ///< UEs around their eNodeB (default 100 m)
  std::uint32_t ul_bandwidth = 100;  ///< resource blocks: 6, 15, 25, 50, 75, 100 (= 20 MHz)
  std::uint32_t dl_bandwidth = 100;
  std::string scheduler = "pf";    ///< pf, rr, fdmt, tdmt, tta, fdbet, tdbet, fdtbfq, tdtbfq, pss, cqa
  std::string rlc = "am";          ///< "am" or "um"
  double ue_tx_power_dbm = 23;
  double enb_tx_power_dbm = 43;
  std::string pathloss = "friis";  ///< "friis", "log-distance" (exponent) or "cost231"
  double exponent = 3.0;
  std::string fading = "none";     ///< "none" or "nakagami"
  double nakagami_m = 1.0;         ///< Nakagami shape (1 = Rayleigh)
  std::string handover = "none";   ///< "none" or "a3-rsrp" (with X2 between the eNodeBs)
  double hysteresis_db = 3.0;      ///< a3-rsrp: ns-3's defaults
  double time_to_trigger_s = 0.256;
  std::string server = "remote";   ///< where the last host sits: "remote", "edge" or "ue"
  double backhaul_rate_bps = 10e9; ///< PGW <-> server (or core router in a hybrid)
  double backhaul_delay_s = 10e-3; ///< default 10 ms for remote, 100 us for edge
  std::uint32_t tcp_buffer_bytes = 4 << 20;
  ImpairmentsConfig impairments;
  LteRadioEnergyConfig radio_energy;  ///< the UEs' power model (energy only, no timing)

  static LteConfig from_json(const nlohmann::json& object, const std::string& path,
                             bool group = false);
  nlohmann::json to_json(bool group = false) const;
};

/// What the UEs' RRCs reported, counted from their ns-3 traces while the simulation runs.
struct LteEventCounts {
  std::uint64_t handovers = 0;            ///< HandoverEndOk: a UE completed a handover
  std::uint64_t handover_failures = 0;    ///< HandoverEndError: T304 expired on the way
  std::uint64_t radio_link_failures = 0;  ///< RadioLinkFailure: a UE lost its cell
};

/// The radio access and core part, reusable by the hybrid builder.
struct LteCell {
  ns3::NodeContainer enbs;
  ns3::NetDeviceContainer enb_devices;
  ns3::NodeContainer ues;                 ///< worker UEs, then background UEs
  ns3::NetDeviceContainer ue_devices;
  std::vector<ns3::Ipv4Address> ue_addresses;
  ns3::Ptr<ns3::Node> pgw;
  ns3::Ptr<ns3::NetDevice> pgw_tun;       ///< the PGW's device towards the UEs (downlink)
  ns3::Ptr<ns3::Object> lte_helper, epc_helper;  ///< kept alive with the network
  /// `fading` `nakagami`: the downlink's and the uplink's fading models (their streams are
  /// assigned by assign_fading_streams).
  std::vector<ns3::Ptr<ns3::PropagationLossModel>> fading;
  /// Counted from the UEs' traces; shared with the trace sinks, so it outlives copies.
  std::shared_ptr<LteEventCounts> events = std::make_shared<LteEventCounts>();
  /// Whether the network reports `events` (with `handover` on).
  bool reports_events = false;
  /// Each UE's energy (in `ues` order), from its PHY's traces.
  std::vector<std::shared_ptr<LteUeEnergyModel>> ue_energy;

  /// `events` by name, as Network::event_counts() reports them (empty unless reports_events).
  std::map<std::string, std::uint64_t> event_counts() const;
  /// Joules each of the first `hosts` UEs' radios used so far, by UE index.
  std::map<std::size_t, double> ue_joules(std::size_t hosts) const;
};

/// Its random parts (placement, mobility, the eNodeBs' and UEs' devices) draw from streams
/// reserved in `streams`; the fading models do not yet: the caller assigns theirs with
/// assign_fading_streams once every other part of its network has its streams, so that a
/// network with fading draws everything else as the same network without.
LteCell build_lte_cell(const LteConfig& config, std::size_t worker_ues, StreamAllocator& streams);

/// Gives the cell's fading models their streams, the next ones of `streams` (nothing without
/// fading).
void assign_fading_streams(const LteCell& cell, StreamAllocator& streams);

class LteNetwork : public Network {
 public:
  LteNetwork(const LteConfig& config, std::size_t hosts);

  std::string family() const override { return "lte"; }
  std::size_t host_count() const override { return hosts_.size(); }
  ns3::Ptr<ns3::Node> host(std::size_t index) const override { return hosts_.at(index); }
  ns3::Ipv4Address address(std::size_t index) const override { return addresses_.at(index); }
  std::string describe() const override;
  /// Association / attach completes within ~0.1 s in ns-3.37 at these scales; 0.25 s leaves
  /// margin for many stations.
  double ready_time_s() const override { return 0.25; }

  /// `handover` on: {"handovers", "handover_failures", "radio_link_failures"}.
  std::map<std::string, std::uint64_t> event_counts() const override {
    return cell_.event_counts();
  }
  /// Every UE host's radio (a server behind the PGW has none).
  std::map<std::size_t, double> radio_joules() const override;

  const std::vector<ns3::Ptr<NetemQueueDisc>>& netems() const { return netems_; }
  const LteCell& cell() const { return cell_; }

 private:
  LteConfig config_;
  StreamAllocator streams_;
  LteCell cell_;
  std::vector<ns3::Ptr<ns3::Node>> hosts_;
  std::vector<ns3::Ipv4Address> addresses_;
  std::vector<ns3::Ptr<NetemQueueDisc>> netems_;
};

}  // namespace gradwire
