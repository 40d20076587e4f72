// An infrastructure Wi-Fi BSS (802.11n, ac or ax) with one access point: the edge cluster on a
// shared radio channel. Workers are stations placed around the AP; the last host (the
// parameter server under topology "ps") is another station, the AP itself, or a wired host
// behind the AP on an Ethernet backhaul.
//
// ns-3 models: YansWifiChannel (constant-speed delay + the configured path loss, then Nakagami
// fading when asked for; WifiChannels.h says which cells share one), YansWifiPhy with the standard's channel settings, StaWifiMac/ApWifiMac (active probing, so
// stations associate within milliseconds), and the chosen rate manager. Routing is static
// (stations -> AP -> backhaul), ARP caches are pre-filled so no broadcast is lost before
// association.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/net-device-container.h>
#include <ns3/node-container.h>
#include <ns3/vector.h>
#include <ns3/yans-wifi-channel.h>

#include "common/ParamSpec.h"
#include "netmodels/Impairments.h"
#include "netmodels/Network.h"
#include "netmodels/NetworkParts.h"
#include "netmodels/StreamAllocator.h"
#include "netmodels/WifiRadioEnergy.h"

namespace gradwire {

/// The family's own keys, each bound to its WifiConfig member (common/FieldTable.h): the one
/// declaration from_json, to_json, `gradwire networks` and docs/networks.md read. As a hybrid
/// group: the same without `server` and `tcp_buffer` (the hybrid network has one server and
/// one TCP configuration).
const std::vector<ParamSpec>& wifi_params();
const std::vector<ParamSpec>& wifi_group_params();

struct WifiConfig {
  std::string standard = "ax";   ///< "n", "ac" or "ax"
  std::string band = "5GHz";     ///< "2.4GHz", "5GHz" or "6GHz" (which the standard allows)
  std::uint32_t width_mhz = 80;  ///< 20, 40, 80 or 160 (what standard and band allow)
  std::uint32_t channel = 0;     ///< 0: the band's default channel for the width
  std::uint32_t spatial_streams = 1;
  std::string rate_control = "ideal";  ///< "ideal", "minstrel-ht" or "constant"
  std::uint32_t mcs = 7;               ///< constant: MCS index (n 0-7, ac 0-9, ax 0-11)
  std::string propagation = "log-distance";  ///< "log-distance" or "friis"
  double exponent = 3.0;               ///< log-distance path-loss exponent
  double reference_loss_db = -1;       ///< log-distance loss at 1 m (-1: Friis at the band)
  std::string fading = "none";         ///< "none" or "nakagami" (after the path loss)
  double nakagami_m = 1.0;             ///< nakagami: the shape m (1: Rayleigh)
  double tx_power_dbm = 20.0;
  /// [x, y] metres; unset: at the origin, on a medium of its own (WifiChannels.h).
  std::optional<std::array<double, 2>> ap_position;
  PlacementSpec placement;             ///< stations around the AP
  std::string server = "station";      ///< where the last host sits: "station", "ap", "wired"
  double backhaul_rate_bps = 1e9;      ///< AP <-> wired server / core
  double backhaul_delay_s = 500e-6;
  std::uint32_t tcp_buffer_bytes = 4 << 20;
  ImpairmentsConfig impairments;
  WifiRadioEnergyConfig radio_energy;  ///< the radios' currents (energy only, no timing)

  /// `group`: true inside a hybrid `groups` entry (no `server`, `workers` read by the caller).
  static WifiConfig from_json(const nlohmann::json& object, const std::string& path,
                              bool group = false);
  nlohmann::json to_json(bool group = false) const;
  /// Nominal PHY rate of the highest MCS for standard/width/streams (800 ns GI), bits/s.
  double peak_phy_rate_bps() const;
  /// `channel`, or for 0 the number ns-3 gives the band's default channel for the width.
  std::uint32_t channel_number() const;
  /// Where the AP stands: `ap_position`, or the origin.
  ns3::Vector ap_origin() const;
  /// Whether cells of this and `other` share one medium: both have an `ap_position`, and their
  /// band, channel number and width are the same.
  bool shares_medium_with(const WifiConfig& other) const;
  /// The first key of the medium's propagation (`propagation`, `exponent`,
  /// `reference_loss_db`, `fading`, `nakagami_m`) on which this and `other` differ; "" if none.
  std::string propagation_differs_from(const WifiConfig& other) const;
};

/// The radio part, reusable by the hybrid builder: `stations` worker stations, extra
/// stations for background flows, and the AP, all addressed in `subnet`/24.
struct WifiCell {
  ns3::NodeContainer stations;             ///< worker stations, then background stations
  ns3::Ptr<ns3::Node> ap;
  ns3::NetDeviceContainer station_devices;
  ns3::Ptr<ns3::NetDevice> ap_device;
  std::vector<ns3::Ipv4Address> station_addresses;
  ns3::Ipv4Address ap_address;
  std::uint32_t ap_interface = 0;
  /// ns-3's WifiRadioEnergyModel of each station (in `stations` order) and of the AP.
  std::vector<ns3::Ptr<ns3::DeviceEnergyModel>> station_energy;
  ns3::Ptr<ns3::DeviceEnergyModel> ap_energy;
  WifiRadioEnergy energy;  ///< every radio's, station's then the AP's (their listeners)

  /// Joules each of the first `hosts` stations' radios used so far, by station index.
  std::map<std::size_t, double> station_joules(std::size_t hosts) const;
};

/// Builds the cell on `channel` (WifiChannels::channel_for) with the network name `ssid` (cells
/// that share a channel need names of their own, or a station may associate with the wrong
/// AP): stack installed on every node, static routes inside the cell only; its random parts
/// draw from streams reserved in `streams`.
WifiCell build_wifi_cell(const WifiConfig& config, std::size_t worker_stations,
                         const std::string& subnet, ns3::Ptr<ns3::YansWifiChannel> channel,
                         const std::string& ssid, StreamAllocator& streams);

class WifiNetwork : public Network {
 public:
  WifiNetwork(const WifiConfig& config, std::size_t hosts);

  std::string family() const override { return "wifi"; }
  std::size_t host_count() const override { return hosts_.size(); }
  ns3::Ptr<ns3::Node> host(std::size_t index) const override { return hosts_.at(index); }
  ns3::Ipv4Address address(std::size_t index) const override { return addresses_.at(index); }
  std::string describe() const override;
  /// Association / attach completes within ~0.1 s in ns-3.37 at these scales; 0.25 s leaves
  /// margin for many stations.
  double ready_time_s() const override { return 0.25; }

  /// Every station host's radio, and the AP's when it is the server host (`server` `ap`); a
  /// wired server has none.
  std::map<std::size_t, double> radio_joules() const override;

  const WifiCell& cell() const { return cell_; }
  /// Impairment queue discs installed (for counters in tests).
  const std::vector<ns3::Ptr<NetemQueueDisc>>& netems() const { return netems_; }

 private:
  WifiConfig config_;
  StreamAllocator streams_;
  WifiCell cell_;
  std::vector<ns3::Ptr<ns3::Node>> hosts_;
  std::vector<ns3::Ipv4Address> addresses_;
  std::vector<ns3::Ptr<NetemQueueDisc>> netems_;
};

}  // namespace gradwire
