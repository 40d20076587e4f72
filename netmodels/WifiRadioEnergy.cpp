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

struct Key {
  const char* name;
  double WifiRadioEnergyConfig::*member;
  const char* attribute;  // WifiRadioEnergyModel's; empty for the voltage (the source's)
};

const std::vector<Key>& keys() {
  static const std::vector<Key> kKeys = {
      {"supply_voltage", &WifiRadioEnergyConfig::supply_voltage_v, ""},
      {"tx_current_a", &WifiRadioEnergyConfig::tx_current_a, "TxCurrentA"},
      {"rx_current_a", &WifiRadioEnergyConfig::rx_current_a, "RxCurrentA"},
      {"idle_current_a", &WifiRadioEnergyConfig::idle_current_a, "IdleCurrentA"},
      {"cca_busy_current_a", &WifiRadioEnergyConfig::cca_busy_current_a, "CcaBusyCurrentA"},
      {"switching_current_a", &WifiRadioEnergyConfig::switching_current_a,
       "SwitchingCurrentA"},
      {"sleep_current_a", &WifiRadioEnergyConfig::sleep_current_a, "SleepCurrentA"},
  };
  return kKeys;
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

WifiRadioEnergyConfig WifiRadioEnergyConfig::from_json(const nlohmann::json& object,
                                                       const std::string& path) {
  JsonFields f(object, path);
  f.allow(param_names(wifi_radio_energy_params()));
  WifiRadioEnergyConfig c;
  for (const Key& k : keys()) {
    c.*k.member = declared_number(f, param_named(wifi_radio_energy_params(), k.name));
  }
  return c;
}

nlohmann::json WifiRadioEnergyConfig::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Key& k : keys()) j[k.name] = this->*k.member;
  return j;
}

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
    for (const Key& k : keys()) {
      if (*k.attribute) model->SetAttribute(k.attribute, ns3::DoubleValue(config.*k.member));
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
