// Link impairments that any network family can carry: packet loss (uniform or bursty
// Gilbert-Elliott), extra one-way delay with jitter, a bandwidth cap, scheduled outages, and
// background on/off traffic sharing the bottleneck.
//
// Loss, delay, jitter, cap and outages are applied by NetemQueueDisc, an ns-3 traffic-control
// queue disc modelled on Linux netem (the tool people use to impair real links): it sits on
// the egress of a network device, so it works the same on point-to-point, Wi-Fi and LTE
// devices. A family installs one on each impaired host's own device (its uplink) and one on
// the far side of that host's link (its downlink), filtered by destination when the far side
// is shared (an access point, a PGW).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/event-id.h>
#include <ns3/ipv4-address.h>
#include <ns3/net-device.h>
#include <ns3/node.h>
#include <ns3/nstime.h>
#include <ns3/queue-disc.h>
#include <ns3/random-variable-stream.h>

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
};

struct OutageSpec {
  double down_s = 0;  ///< link goes down at this simulated time
  double up_s = 0;    ///< and comes back here (> down_s)
  std::vector<int> hosts;  ///< host indices affected (empty: every impaired host)
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
};

struct MobilitySpec {
  std::string model = "static";  ///< "static", "random-walk" or "random-waypoint"
  double speed_mps = 1.0;
  double pause_s = 0.0;          ///< random-waypoint: pause at each waypoint
  double bounds_m = 50.0;        ///< moves inside a square of +-bounds_m around the AP / eNB
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

  /// True when a NetemQueueDisc is needed at all (loss, delay, jitter, cap or outages).
  bool shapes_packets() const;
  /// Whether host `index` of `hosts` is impaired.
  bool impairs(std::size_t index, std::size_t hosts) const;
  /// Outage windows that apply to host `index`.
  std::vector<std::pair<double, double>> outages_for(std::size_t index, std::size_t hosts) const;
};

/// netem for ns-3: a traffic-control queue disc that drops, delays, jitters, rate-limits and
/// blacks out packets on one device's egress. Packets are kept in FIFO order per destination.
class NetemQueueDisc : public ns3::QueueDisc {
 public:
  static ns3::TypeId GetTypeId();
  NetemQueueDisc();
  ~NetemQueueDisc() override;

  using Windows = std::vector<std::pair<double, double>>;
  /// `outages`: [down, up) windows in simulated seconds. `only_to`: when non-empty, only
  /// packets to these destinations are impaired, each with its own outage windows (a shared
  /// access point's downlink); others pass untouched. Call before the simulation runs.
  void Configure(const ImpairmentsConfig& config, Windows outages,
                 std::map<ns3::Ipv4Address, Windows> only_to = {});

  std::uint64_t lost() const { return lost_; }
  std::uint64_t passed() const { return passed_; }

 private:
  struct Held {
    ns3::Ptr<ns3::QueueDiscItem> item;
    ns3::Time due;
  };
  struct Flow {
    std::deque<Held> queue;
    ns3::Time next_free;   // when the capped link is free again
    ns3::Time last_due;    // FIFO: no packet leaves before the previous one
    bool bad = false;      // Gilbert-Elliott state
    const Windows* outages = nullptr;
  };

  bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
  ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
  ns3::Ptr<const ns3::QueueDiscItem> DoPeek() override;
  bool CheckConfig() override { return true; }
  void InitializeParams() override {}
  void DoDispose() override;

  static bool in_outage(const Windows* windows, ns3::Time t);
  bool draw_loss(Flow& flow);
  Flow* earliest(bool due_only);
  void wake_at(ns3::Time t);

  ImpairmentsConfig config_;
  Windows outages_;
  std::map<ns3::Ipv4Address, Windows> only_to_;
  std::map<std::uint32_t, Flow> flows_;  // by destination address (0 when unfiltered)
  std::size_t held_ = 0;
  ns3::Ptr<ns3::UniformRandomVariable> random_;
  ns3::EventId wake_;
  std::uint64_t lost_ = 0;
  std::uint64_t passed_ = 0;
};

/// Replaces the root queue disc of `device` (the FqCoDel that address assignment installs)
/// by a NetemQueueDisc configured with `config`. Returns it (for counters in tests).
ns3::Ptr<NetemQueueDisc> install_netem(
    ns3::Ptr<ns3::NetDevice> device, const ImpairmentsConfig& config,
    NetemQueueDisc::Windows outages,
    std::map<ns3::Ipv4Address, NetemQueueDisc::Windows> only_to = {});

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
    const ImpairmentsConfig& config, const std::vector<HostAttachment>& hosts);

/// Explicit ns-3 RNG stream numbers for everything a network builder draws (placement,
/// mobility, loss, MAC backoff, schedulers): without them ns-3 numbers streams by creation
/// order across the whole process, so a second simulation in one process would differ.
/// reset_streams() starts a network's numbering; next_streams(n) reserves n streams.
void reset_streams();
std::int64_t next_streams(std::int64_t count);

/// Starts a UDP on/off source on `from` sending to `to`:`port`, with a packet sink on `sink`.
void start_background_flow(const BackgroundFlowSpec& flow, ns3::Ptr<ns3::Node> from,
                           ns3::Ptr<ns3::Node> sink, ns3::Ipv4Address to);

}  // namespace gradwire
