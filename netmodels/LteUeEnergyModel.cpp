#include "netmodels/LteUeEnergyModel.h"

#include <algorithm>
#include <stdexcept>

#include <ns3/callback.h>
#include <ns3/lte-common.h>
#include <ns3/lte-spectrum-phy.h>
#include <ns3/lte-ue-net-device.h>
#include <ns3/lte-ue-phy.h>
#include <ns3/simulator.h>

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "netmodels/NetworkParams.h"

namespace gradwire {

namespace {

// mW x ms = microjoules.
constexpr double kJoulesPerMilliwattMs = 1e-6;

}  // namespace

const FieldTable<LteRadioEnergyConfig>& LteRadioEnergyConfig::keys() {
  using namespace params;
  using C = LteRadioEnergyConfig;
  // The LTE values of Huang, Qian, Gerber, Mao, Sen and Spatscheck, "A Close Examination of
  // Performance and Power Characteristics of 4G LTE Networks", ACM MobiSys 2012: the power
  // during data transfer, the RRC_CONNECTED tail, RRC_IDLE and the promotion between them.
  static const FieldTable<C> kKeys = [] {
    FieldTable<C> t;
    t.add(number("active_base_mw", 1288.04, 0.0, 100000.0,
                 "mW in a subframe in which the UE sends or receives data, besides the rate "
                 "terms"),
          &C::active_base_mw)
        .add(number("ul_mw_per_mbps", 438.39, 0.0, 100000.0,
                    "mW per Mbit/s sent in that subframe (its traced uplink transport-block bits "
                    "per ms)"),
             &C::ul_mw_per_mbps)
        .add(number("dl_mw_per_mbps", 51.97, 0.0, 100000.0,
                    "mW per Mbit/s received in that subframe (its downlink transport-block bits)"),
             &C::dl_mw_per_mbps)
        .add(number("tail_mw", 1060.0, 0.0, 100000.0,
                    "mW in RRC_CONNECTED without data (continuous reception, then DRX), for "
                    "`tail` after the last subframe with data"),
             &C::tail_mw)
        .add(duration("tail", "11.576s",
                      "how long a UE stays in RRC_CONNECTED without data before it is released "
                      "to RRC_IDLE"),
             &C::tail_s)
        .add(number("idle_mw", 594.3 * 43.2 / 1280.0, 0.0, 100000.0,
                    "mW in RRC_IDLE: the paging cycle's average (594.3 mW for 43.2 ms every "
                    "1.28 s); also before a UE's first data"),
             &C::idle_mw)
        .add(number("promotion_mw", 1210.7, 0.0, 100000.0,
                    "mW while promoted from RRC_IDLE to RRC_CONNECTED, before data after idle "
                    "(an energy cost only: the simulated UE stays connected, so nothing waits "
                    "for it)"),
             &C::promotion_mw)
        .add(duration("promotion", "260.1ms", "how long a promotion takes"), &C::promotion_s);
    return t;
  }();
  return kKeys;
}

LteRadioEnergyConfig LteRadioEnergyConfig::from_json(const nlohmann::json& object,
                                                     const std::string& path) {
  return keys().read_object(object, path);
}

nlohmann::json LteRadioEnergyConfig::to_json() const { return keys().write_object(*this); }

LteUeEnergyModel::LteUeEnergyModel(const LteRadioEnergyConfig& config,
                                   ns3::Ptr<ns3::NetDevice> ue_device)
    : state_(std::make_shared<State>()) {
  state_->config = config;
  auto device = ns3::DynamicCast<ns3::LteUeNetDevice>(ue_device);
  if (device == nullptr) throw std::logic_error("LTE UE energy on a device that is not a UE");
  const std::shared_ptr<State> state = state_;
  // A subframe is final once the traces have moved past it: downlink receptions are traced at
  // the subframe's end, uplink grants ahead of it.
  const auto record = [state](std::int64_t ms, double ul_bits, double dl_bits) {
    fold(state->config, ns3::Simulator::Now().GetMilliSeconds() - 1, state->pending,
         state->totals);
    Subframe& s = state->pending[ms];
    s.ul_bits += ul_bits;
    s.dl_bits += dl_bits;
  };
  const bool ul = device->GetPhy()->TraceConnectWithoutContext(
      "UlPhyTransmission",
      ns3::Callback<void, ns3::PhyTransmissionStatParameters>(
          [record](ns3::PhyTransmissionStatParameters p) { record(p.m_timestamp, 8.0 * p.m_size, 0); }));
  const bool dl = device->GetPhy()->GetDlSpectrumPhy()->TraceConnectWithoutContext(
      "DlPhyReception",
      ns3::Callback<void, ns3::PhyReceptionStatParameters>(
          [record](ns3::PhyReceptionStatParameters p) { record(p.m_timestamp, 0, 8.0 * p.m_size); }));
  if (!ul || !dl) throw std::logic_error("the LTE UE PHY lacks UlPhyTransmission or DlPhyReception");
}

void LteUeEnergyModel::add_gap(const LteRadioEnergyConfig& config, double until_ms,
                               Totals& totals) {
  double gap_ms = std::max(0.0, until_ms - static_cast<double>(totals.end_ms));
  if (totals.connected) {
    const double tail_ms = std::min(gap_ms, config.tail_s * 1000.0);
    totals.times.tail_s += tail_ms / 1000.0;
    totals.joules += config.tail_mw * tail_ms * kJoulesPerMilliwattMs;
    gap_ms -= tail_ms;
    if (gap_ms > 0) totals.connected = false;  // the inactivity timer released the UE
  }
  totals.times.idle_s += gap_ms / 1000.0;
  totals.joules += config.idle_mw * gap_ms * kJoulesPerMilliwattMs;
}

void LteUeEnergyModel::fold(const LteRadioEnergyConfig& config, std::int64_t before_ms,
                            std::map<std::int64_t, Subframe>& pending, Totals& totals) {
  auto it = pending.begin();
  for (; it != pending.end() && it->first < before_ms; ++it) {
    const std::int64_t ms = it->first;
    if (ms >= totals.end_ms) {
      add_gap(config, static_cast<double>(ms), totals);
      totals.end_ms = ms + 1;
    }
    if (!totals.connected) {
      ++totals.times.promotions;
      totals.joules += config.promotion_mw * config.promotion_s * 1000.0 * kJoulesPerMilliwattMs;
      totals.connected = true;
    }
    const Subframe& s = it->second;
    ++totals.times.active_subframes;
    totals.times.ul_bits += s.ul_bits;
    totals.times.dl_bits += s.dl_bits;
    // Bits in one millisecond / 1000 = Mbit/s.
    totals.joules += (config.active_base_mw + config.ul_mw_per_mbps * s.ul_bits / 1000.0 +
                      config.dl_mw_per_mbps * s.dl_bits / 1000.0) *
                     kJoulesPerMilliwattMs;
  }
  pending.erase(pending.begin(), it);
}

LteUeEnergyModel::Totals LteUeEnergyModel::now() const {
  Totals totals = state_->totals;
  std::map<std::int64_t, Subframe> pending = state_->pending;
  fold(state_->config, INT64_MAX, pending, totals);
  add_gap(state_->config, ns3::Simulator::Now().GetSeconds() * 1000.0, totals);
  return totals;
}

double LteUeEnergyModel::joules() const { return now().joules; }

LteUeEnergyModel::StateTimes LteUeEnergyModel::state_times() const { return now().times; }

}  // namespace gradwire
