// netem for ns-3: a traffic-control queue disc modelled on Linux netem (the tool people use to
// impair real links) that drops, delays, jitters, rate-limits and blacks out packets on one
// device's egress. It sits on a device's egress, so it works the same on point-to-point, Wi-Fi
// and LTE devices. Packets are kept in FIFO order per destination.
//
// Configured as any ns-3 object, through attributes (netem's options: loss model and
// probabilities, delay, jitter, rate, limit); the outage windows and the destinations it
// impairs are lists, set through SetOutages and ImpairOnlyTo as ns-3's ListErrorModel takes
// its list. Its random draws use the stream AssignStreams gives it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include <ns3/event-id.h>
#include <ns3/ipv4-address.h>
#include <ns3/nstime.h>
#include <ns3/queue-disc.h>
#include <ns3/random-variable-stream.h>

namespace gradwire {

class NetemQueueDisc : public ns3::QueueDisc {
 public:
  /// How packets are lost (attribute "LossModel": "none", "uniform", "gilbert-elliott").
  enum LossModel { kNoLoss, kUniformLoss, kGilbertElliottLoss };

  static ns3::TypeId GetTypeId();
  NetemQueueDisc();
  ~NetemQueueDisc() override;

  using Windows = std::vector<std::pair<double, double>>;
  /// [down, up) windows in simulated seconds in which the device carries nothing. Call before
  /// the simulation runs.
  void SetOutages(Windows outages);
  /// Impairs only packets to `destination` (a shared access point's or PGW's downlink), with
  /// that destination's own outage windows; packets to destinations never named pass
  /// untouched. Without a call every packet is impaired. Call before the simulation runs.
  void ImpairOnlyTo(ns3::Ipv4Address destination, Windows outages);
  /// Uses stream `stream` for the loss and jitter draws; returns the number of streams used
  /// (1), as ns-3's AssignStreams do.
  std::int64_t AssignStreams(std::int64_t stream);

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

  // Attributes.
  LossModel loss_model_ = kNoLoss;
  double loss_rate_ = 0.0;       // uniform: probability that a packet is lost
  double good_to_bad_ = 0.01;    // Gilbert-Elliott: p = P(good -> bad) per packet
  double bad_to_good_ = 0.25;    // Gilbert-Elliott: r = P(bad -> good) per packet
  double loss_good_ = 0.0;       // Gilbert-Elliott: loss probability in the good state
  double loss_bad_ = 1.0;        // Gilbert-Elliott: loss probability in the bad state
  double delay_s_ = 0.0;         // extra one-way delay
  double jitter_s_ = 0.0;        // each packet's delay uniform in [delay - jitter, delay + jitter]
  double rate_cap_bps_ = 0.0;    // 0: no cap
  std::uint32_t limit_ = 1000;   // packets held (tail drop)

  Windows outages_;
  std::map<ns3::Ipv4Address, Windows> only_to_;
  std::map<std::uint32_t, Flow> flows_;  // by destination address (0 when unfiltered)
  std::size_t held_ = 0;
  ns3::Ptr<ns3::UniformRandomVariable> random_;
  ns3::EventId wake_;
  std::uint64_t lost_ = 0;
  std::uint64_t passed_ = 0;
};

}  // namespace gradwire
