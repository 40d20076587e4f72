#include "netmodels/WifiRadioEnergy.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <ns3/basic-energy-source-helper.h>
#include <ns3/double.h>
#include <ns3/nstime.h>
#include <ns3/wifi-net-device.h>
#include <ns3/wifi-radio-energy-model.h>
#include <ns3/wifi-phy.h>

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/WifiEnergyPhyListener.h"

namespace gradwire {

namespace {

// The currents ns-3's WifiRadioEnergyModel takes as attributes (the voltage is the source's).
struct ModelCurrent {
  double WifiRadioEnergyConfig::*member;
  const char* attribute;
};

const std::vector<ModelCurrent>& model_currents() {
  using C = WifiRadioEnergyConfig;
  static const std::vector<ModelCurrent> kCurrents = {
      {&C::tx_current_a, "TxCurrentA"},
      {&C::rx_current_a, "RxCurrentA"},
      {&C::idle_current_a, "IdleCurrentA"},
      {&C::cca_busy_current_a, "CcaBusyCurrentA"},
      {&C::switching_current_a, "SwitchingCurrentA"},
      {&C::sleep_current_a, "SleepCurrentA"},
  };
  return kCurrents;
}

// The source must never run dry, or the model would stop counting (and, wired as ns-3's helper
// wires it, turn the PHY off). But on every state change the model schedules its own switch to
// OFF at the time the energy left lasts in the new state
// (WifiRadioEnergyModel::GetMaximumTimeInState), a Time that overflows beyond ~9.2e9 s (ns-3's
// PHY, given the model, even dropped every frame). So the source holds what the cheapest state
// draws in 1e9 s: no state lasts longer than that, and the source lasts at least 1e5 simulated
// seconds (28 h) at the widest ratio the declared currents allow (10 A to 1 mA), about 1e9 s
// for real radios.
constexpr double kSecondsInCheapestState = 1e9;

double cheapest_current_a(const WifiRadioEnergyConfig& c) {
  return std::min({c.tx_current_a, c.rx_current_a, c.idle_current_a, c.cca_busy_current_a,
                   c.switching_current_a, c.sleep_current_a});
}

}  // namespace

const FieldTable<WifiRadioEnergyConfig>& WifiRadioEnergyConfig::keys() {
  using namespace params;
  using C = WifiRadioEnergyConfig;
  // ns-3's WifiRadioEnergyModel defaults, from Halperin, Greenstein, Sheth and Wetherall,
  // "Demystifying 802.11n Power Consumption", HotPower 2010: an Intel Wi-Fi Link 5300 with one
  // antenna draws 1.14 W transmitting, 0.94 W receiving, 0.82 W idle and 0.10 W asleep; at
  // 3 V those are the currents below. CCA busy and switching draw what idle does.
  static const FieldTable<C> kKeys = [] {
    FieldTable<C> t;
    t.add(number("supply_voltage", 3.0, 0.0, 100.0,
                 "volts of every radio's supply (ns-3's BasicEnergySource); energy = voltage x "
                 "current x time in each PHY state",
                 true),
          &C::supply_voltage_v)
        .add(number("tx_current_a", 0.380, 0.001, 10.0, "amperes while transmitting"),
             &C::tx_current_a)
        .add(number("rx_current_a", 0.313, 0.001, 10.0, "amperes while receiving a frame"),
             &C::rx_current_a)
        .add(number("idle_current_a", 0.273, 0.001, 10.0, "amperes while idle, listening"),
             &C::idle_current_a)
        .add(number("cca_busy_current_a", 0.273, 0.001, 10.0,
                    "amperes while the channel is sensed busy (a frame it does not receive)"),
             &C::cca_busy_current_a)
        .add(number("switching_current_a", 0.273, 0.001, 10.0,
                    "amperes while switching channel"),
             &C::switching_current_a)
        .add(number("sleep_current_a", 0.033, 0.001, 10.0, "amperes while asleep (power save)"),
             &C::sleep_current_a);
    return t;
  }();
  return kKeys;
}

WifiRadioEnergyConfig WifiRadioEnergyConfig::from_json(const nlohmann::json& object,
                                                       const std::string& path) {
  return keys().read_object(object, path);
}

nlohmann::json WifiRadioEnergyConfig::to_json() const { return keys().write_object(*this); }

WifiRadioEnergy install_wifi_radio_energy(const WifiRadioEnergyConfig& config,
                                          const ns3::NetDeviceContainer& devices) {
  ns3::BasicEnergySourceHelper sources;
  sources.Set("BasicEnergySourceInitialEnergyJ",
              ns3::DoubleValue(kSecondsInCheapestState * config.supply_voltage_v *
                               cheapest_current_a(config)));
  sources.Set("BasicEnergySupplyVoltageV", ns3::DoubleValue(config.supply_voltage_v));
  sources.Set("BasicEnergyLowBatteryThreshold", ns3::DoubleValue(0.0));
  // The source's periodic update only checks for depletion, which cannot happen; a rare one
  // keeps the event list short.
  sources.Set("PeriodicEnergyUpdateInterval", ns3::TimeValue(ns3::Seconds(3600)));
  WifiRadioEnergy out;
  out.listeners = std::make_shared<std::vector<std::unique_ptr<ns3::WifiPhyListener>>>();
  for (auto it = devices.Begin(); it != devices.End(); ++it) {
    auto device = ns3::DynamicCast<ns3::WifiNetDevice>(*it);
    if (device == nullptr) throw std::logic_error("radio energy on a device that is not Wi-Fi");
    const ns3::Ptr<ns3::EnergySource> source = sources.Install(device->GetNode()).Get(0);
    // What WifiRadioEnergyModelHelper does, but for two things: the PHY's notifications reach
    // the model through WifiEnergyPhyListener, and the PHY is not given the model (with it,
    // ns-3 drops frames the source could not power, which must never change a run).
    auto model = ns3::CreateObject<ns3::WifiRadioEnergyModel>();
    for (const ModelCurrent& c : model_currents()) {
      model->SetAttribute(c.attribute, ns3::DoubleValue(config.*c.member));
    }
    model->SetEnergySource(source);
    source->AppendDeviceEnergyModel(model);
    auto listener = std::make_unique<WifiEnergyPhyListener>(model->GetPhyListener(),
                                                            device->GetPhy()->GetState());
    device->GetPhy()->RegisterListener(listener.get());
    out.listeners->push_back(std::move(listener));
    out.models.push_back(model);
  }
  return out;
}

}  // namespace gradwire
