// Link impairments that any network family can carry: packet loss (uniform or bursty
// Gilbert-Elliott), extra one-way delay with jitter, a bandwidth cap, scheduled outages, and
// background on/off traffic sharing the bottleneck.
//
// Loss, delay, jitter, cap and outages are applied by NetemQueueDisc (netmodels/NetemQueueDisc.h),
// an ns-3 traffic-control queue disc modelled on Linux netem: it sits on the egress of a
// network device, so it works the same on point-to-point, Wi-Fi and LTE devices. A family
// installs one on each impaired host's own device (its uplink) and one on the far side of that
// host's link (its downlink), filtered by destination when the far side is shared (an access
// point, a PGW).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/ipv4-address.h>
#include <ns3/net-device.h>
#include <ns3/node.h>

#include "common/FieldTable.h"
#include "netmodels/NetemQueueDisc.h"
#include "netmodels/StreamAllocator.h"

namespace gradwire {

struct LossSpec {
  std::string model = "none";  ///< "none", "uniform" or "gilbert-elliott"
  double rate = 0.0;           ///< uniform: probability that a packet is lost
  // Gilbert-Elliott (two-state Markov chain, per packet): p = P(good -> bad),
  // r = P(bad -> good); a packet is lost with loss_good in the good state, loss_bad in the bad.
  double p = 0.01;
  double r = 0.25;
  double loss_good = 0.0;
  double loss_bad = 1.0;

  /// Long-run fraction of packets lost.
  double mean_loss() const;
  /// Its keys, each bound to its member; a model's own keys belong only with that model.
  static const FieldTable<LossSpec>& keys();
};

struct OutageSpec {
  double down_s = 0;  ///< link goes down at this simulated time
  double up_s = 0;    ///< and comes back here (> down_s)
  std::vector<int> hosts;  ///< host indices affected (empty: every impaired host)
  static const FieldTable<OutageSpec>& keys();
};

struct BackgroundFlowSpec {
  double rate_bps = 10e6;      ///< sending rate while on
  double on_s = 1.0;           ///< mean on period
  double off_s = 1.0;          ///< mean off period
  std::string distribution = "constant";  ///< on/off periods: "constant" or "exponential"
  std::uint32_t packet_bytes = 1000;
  std::string direction = "uplink";  ///< "uplink": extra node -> target; "downlink": reverse
  int target = -1;             ///< host index the flow exchanges with (-1: the last host)
  double start_s = 0.5;        ///< after Wi-Fi association / LTE attach (see netmodels/README)
  double distance_m = -1;      ///< wireless families: the extra node's distance (-1: default)
  /// `wireless`: with `distance_m`.
  static const FieldTable<BackgroundFlowSpec>& keys(bool wireless);
};

struct MobilitySpec {
  std::string model = "static";  ///< "static", "random-walk", "random-waypoint" or "straight"
  double speed_mps = 1.0;
  double pause_s = 0.0;          ///< random-waypoint: pause at each waypoint
  double heading_deg = 0.0;      ///< straight: direction, counterclockwise from the x axis
  double bounds_m = 50.0;        ///< moves inside a square of +-bounds_m around the AP / eNB
  /// Its keys; a model's own keys belong only with that model.
  static const FieldTable<MobilitySpec>& keys();
};

struct ImpairmentsConfig {
  std::vector<int> hosts;  ///< impaired host indices (negative counts from the end); empty: all
  LossSpec loss;
  double delay_s = 0;      ///< extra one-way delay per direction
  double jitter_s = 0;     ///< uniform in [delay - jitter, delay + jitter], FIFO kept
  double rate_cap_bps = 0; ///< 0: no cap
  std::uint32_t queue_packets = 1000;  ///< netem queue limit (tail drop)
  std::vector<OutageSpec> outages;
  std::vector<BackgroundFlowSpec> background;
  MobilitySpec mobility;

  /// Reads an `impairments` object; `wireless` allows `mobility`. ConfigError names path.key.
  static ImpairmentsConfig from_json(const nlohmann::json& object, const std::string& path,
                                     bool wireless);
  nlohmann::json to_json(bool wireless) const;
  /// from_json and to_json as a family's key table (common/FieldTable.h) binds them.
  static std::function<ImpairmentsConfig(const nlohmann::json&, const std::string&)> reader(
      bool wireless);
  static std::function<nlohmann::json(const ImpairmentsConfig&)> writer(bool wireless);
  /// Its keys, each bound to its member (`wireless`: with `mobility`).
  static const FieldTable<ImpairmentsConfig>& keys(bool wireless);

  /// True when a NetemQueueDisc is needed at all (loss, delay, jitter, cap or outages).
  bool shapes_packets() const;
  /// Whether host `index` of `hosts` is impaired.
  bool impairs(std::size_t index, std::size_t hosts) const;
  /// Outage windows that apply to host `index`.
  std::vector<std::pair<double, double>> outages_for(std::size_t index, std::size_t hosts) const;
};

/// Replaces the root queue disc of `device` (the FqCoDel that address assignment installs)
/// by a NetemQueueDisc whose attributes are `config`'s loss, delay, jitter, cap and queue,
/// with `outages` (when `only_to` is empty) or impairing only the destinations of `only_to`,
/// each with its own windows. Its stream comes from `streams`. Returns it (for counters in
/// tests).
ns3::Ptr<NetemQueueDisc> install_netem(
    ns3::Ptr<ns3::NetDevice> device, const ImpairmentsConfig& config,
    NetemQueueDisc::Windows outages, StreamAllocator& streams,
    const std::map<ns3::Ipv4Address, NetemQueueDisc::Windows>& only_to = {});

/// How one application host reaches its network, for applying impairments: `own` is the
/// host's device (its uplink); `far` the device that sends to it (its downlink), shared by
/// several hosts when `far_shared` (an AP, a PGW: then filtered by the host's address).
struct HostAttachment {
  ns3::Ptr<ns3::NetDevice> own;
  ns3::Ptr<ns3::NetDevice> far;
  bool far_shared = false;
  ns3::Ipv4Address address;
};

/// Installs netem queue discs for every impaired host (nothing when !shapes_packets()).
/// A device that is both an impaired host's own device and a shared far side is impaired
/// once, for all of its traffic.
std::vector<ns3::Ptr<NetemQueueDisc>> apply_impairments(
    const ImpairmentsConfig& config, const std::vector<HostAttachment>& hosts,
    StreamAllocator& streams);

/// Starts a UDP on/off source on `from` sending to `to`:`port`, with a packet sink on `sink`;
/// its on and off periods draw from streams reserved in `streams`.
void start_background_flow(const BackgroundFlowSpec& flow, ns3::Ptr<ns3::Node> from,
                           ns3::Ptr<ns3::Node> sink, ns3::Ipv4Address to,
                           StreamAllocator& streams);

}  // namespace gradwire
