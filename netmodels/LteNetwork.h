// An LTE cell (or a few) with the EPC core: workers are UEs at configured distances from their
// eNodeB; the last host (the parameter server under topology "ps") is a UE too, a remote host
// behind the PGW (an Internet server), or an edge host next to the PGW (a short backhaul: MEC).
//
// ns-3 models: LteHelper + PointToPointEpcHelper (SGW/PGW/MME, GTP-U over point-to-point
// S1-U/S5), the chosen MAC scheduler, RLC AM (reliable, as TCP bearers use in practice) or
// UM, and the chosen path-loss model. UE <-> UE traffic goes through the PGW, as in a real
// EPC. Routing is static (the UE default gateway; 7.0.0.0/8 via the PGW on the server).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/net-device-container.h>
#include <ns3/node-container.h>

#include "netmodels/Impairments.h"
#include "netmodels/Network.h"
#include "netmodels/NetworkParts.h"
#include "netmodels/StreamAllocator.h"

namespace gradwire {

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
  std::string server = "remote";   ///< where the last host sits: "remote", "edge" or "ue"
  double backhaul_rate_bps = 10e9; ///< PGW <-> server (or core router in a hybrid)
  double backhaul_delay_s = 10e-3; ///< default 10 ms for remote, 100 us for edge
  std::uint32_t tcp_buffer_bytes = 4 << 20;
  ImpairmentsConfig impairments;

  static LteConfig from_json(const nlohmann::json& object, const std::string& path,
                             bool group = false);
  nlohmann::json to_json(bool group = false) const;
};

/// The radio access and core part, reusable by the hybrid builder.
struct LteCell {
  ns3::NodeContainer ues;                 ///< worker UEs, then background UEs
  ns3::NetDeviceContainer ue_devices;
  std::vector<ns3::Ipv4Address> ue_addresses;
  ns3::Ptr<ns3::Node> pgw;
  ns3::Ptr<ns3::NetDevice> pgw_tun;       ///< the PGW's device towards the UEs (downlink)
  ns3::Ptr<ns3::Object> lte_helper, epc_helper;  ///< kept alive with the network
};

/// Its random parts (placement, mobility, the eNodeBs' and UEs' devices) draw from streams
/// reserved in `streams`.
LteCell build_lte_cell(const LteConfig& config, std::size_t worker_ues, StreamAllocator& streams);

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

  const std::vector<ns3::Ptr<NetemQueueDisc>>& netems() const { return netems_; }

 private:
  LteConfig config_;
  StreamAllocator streams_;
  LteCell cell_;
  std::vector<ns3::Ptr<ns3::Node>> hosts_;
  std::vector<ns3::Ipv4Address> addresses_;
  std::vector<ns3::Ptr<NetemQueueDisc>> netems_;
};

}  // namespace gradwire
