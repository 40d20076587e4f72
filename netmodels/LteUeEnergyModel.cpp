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

LteRadioEnergyConfig LteRadioEnergyConfig::from_json(const nlohmann::json& object,
                                                     const std::string& path) {
  const auto& declared = lte_radio_energy_params();
  const auto spec = [&](const char* name) -> const ParamSpec& {
    return param_named(declared, name);
  };
  JsonFields f(object, path);
  f.allow(param_names(declared));
  LteRadioEnergyConfig c;
  c.active_base_mw = declared_number(f, spec("active_base_mw"));
  c.ul_mw_per_mbps = declared_number(f, spec("ul_mw_per_mbps"));
  c.dl_mw_per_mbps = declared_number(f, spec("dl_mw_per_mbps"));
  c.tail_mw = declared_number(f, spec("tail_mw"));
  c.tail_s = declared_duration(f, spec("tail"));
  c.idle_mw = declared_number(f, spec("idle_mw"));
  c.promotion_mw = declared_number(f, spec("promotion_mw"));
  c.promotion_s = declared_duration(f, spec("promotion"));
  return c;
}

nlohmann::json LteRadioEnergyConfig::to_json() const {
  return {{"active_base_mw", active_base_mw},
          {"ul_mw_per_mbps", ul_mw_per_mbps},
          {"dl_mw_per_mbps", dl_mw_per_mbps},
          {"tail_mw", tail_mw},
          {"tail", format_duration(tail_s)},
          {"idle_mw", idle_mw},
          {"promotion_mw", promotion_mw},
          {"promotion", format_duration(promotion_s)}};
}

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
