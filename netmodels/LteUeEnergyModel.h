// A UE's radio energy under a published LTE UE power model, applied to what ns-3's LTE PHY
// traced for that UE: ns-3 has no UE energy model, but it traces every uplink transport block
// the UE is granted (LteUePhy's `UlPhyTransmission`, per 1 ms subframe) and every downlink
// transport block it receives (its downlink LteSpectrumPhy's `DlPhyReception`). The network's
// timing is ns-3's; this class only integrates power over the states those traces imply.
//
// The model is Huang, Qian, Gerber, Mao, Sen and Spatscheck, "A Close Examination of
// Performance and Power Characteristics of 4G LTE Networks", ACM MobiSys 2012 (fitted to
// measurements of an LTE phone on a commercial network):
// - a subframe in which the UE sends or receives data draws
//   active_base + ul_per_mbps x uplink Mbit/s + dl_per_mbps x downlink Mbit/s, the rates being
//   the subframe's traced transport-block bits per millisecond;
// - after the last such subframe the UE stays in RRC_CONNECTED (continuous reception, then
//   DRX) drawing `tail` power for the tail time, then drops to RRC_IDLE (`idle` power, the
//   average over the paging cycle);
// - data after the UE went idle first costs a promotion to RRC_CONNECTED (promotion power for
//   the promotion time), charged on top: ns-3 keeps UEs connected, so the promotion delays
//   nothing in the simulation.
// A UE is idle from the simulation's start until its first data (its first subframe costs a
// promotion).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <ns3/net-device.h>
#include <ns3/ptr.h>

#include "common/FieldTable.h"

namespace gradwire {

/// `radio_energy` of an LTE network or group (lte_radio_energy_params()); the defaults are the
/// LTE values of Huang et al. 2012.
struct LteRadioEnergyConfig {
  double active_base_mw = 1288.04;
  double ul_mw_per_mbps = 438.39;
  double dl_mw_per_mbps = 51.97;
  double tail_mw = 1060.0;
  double tail_s = 11.576;
  double idle_mw = 594.3 * 43.2 / 1280.0;
  double promotion_mw = 1210.7;
  double promotion_s = 0.2601;

  /// Its keys, each bound to its member.
  static const FieldTable<LteRadioEnergyConfig>& keys();
  static LteRadioEnergyConfig from_json(const nlohmann::json& object, const std::string& path);
  nlohmann::json to_json() const;
};

class LteUeEnergyModel {
 public:
  /// Time and data in each of the model's states, as of the last call to state_times().
  struct StateTimes {
    std::uint64_t active_subframes = 0;  ///< subframes with uplink or downlink data
    double ul_bits = 0;                  ///< traced uplink transport-block bits
    double dl_bits = 0;                  ///< traced downlink transport-block bits
    double tail_s = 0;                   ///< RRC_CONNECTED without data
    double idle_s = 0;                   ///< RRC_IDLE
    std::uint64_t promotions = 0;        ///< RRC_IDLE -> RRC_CONNECTED
  };

  /// Connects to the traces of `ue_device` (an LteUeNetDevice).
  LteUeEnergyModel(const LteRadioEnergyConfig& config, ns3::Ptr<ns3::NetDevice> ue_device);

  /// Joules from the simulation's start to now (call while the simulation still holds the
  /// run, before Simulator::Destroy).
  double joules() const;
  StateTimes state_times() const;

 private:
  struct Subframe {
    double ul_bits = 0;
    double dl_bits = 0;
  };
  struct Totals {
    StateTimes times;
    double joules = 0;
    std::int64_t end_ms = 0;  ///< end of the last active subframe (0: none yet)
    bool connected = false;   ///< in RRC_CONNECTED after the last active subframe
  };
  // Shared with the trace sinks. Uplink grants are traced a few subframes ahead of their
  // transmission, so a subframe stays pending until no trace can reach it anymore.
  struct State {
    LteRadioEnergyConfig config;
    std::map<std::int64_t, Subframe> pending;  ///< by millisecond
    Totals totals;
  };
  /// Folds the pending subframes before `before_ms` into `totals`.
  static void fold(const LteRadioEnergyConfig& config, std::int64_t before_ms,
                   std::map<std::int64_t, Subframe>& pending, Totals& totals);
  /// Adds the time from totals.end_ms to `until_ms` without data (tail, then idle).
  static void add_gap(const LteRadioEnergyConfig& config, double until_ms, Totals& totals);
  /// The totals as of now: every pending subframe folded, the time since the last one added.
  Totals now() const;

  std::shared_ptr<State> state_;
};

}  // namespace gradwire
