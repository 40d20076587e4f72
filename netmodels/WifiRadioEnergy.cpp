#include "netmodels/WifiRadioEnergy.h"

#include <stdexcept>

#include <ns3/basic-energy-source-helper.h>
#include <ns3/double.h>
#include <ns3/nstime.h>
#include <ns3/wifi-net-device.h>
#include <ns3/wifi-radio-energy-model-helper.h>

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "netmodels/NetworkParams.h"

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

// More than any simulated run draws (a 3 W radio for a simulated century is 1e10 J), so that
// the source never reaches its low-battery threshold and never turns the PHY off.
constexpr double kInitialEnergyJ = 1e15;

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

std::vector<ns3::Ptr<ns3::DeviceEnergyModel>> install_wifi_radio_energy(
    const WifiRadioEnergyConfig& config, const ns3::NetDeviceContainer& devices) {
  ns3::BasicEnergySourceHelper sources;
  sources.Set("BasicEnergySourceInitialEnergyJ", ns3::DoubleValue(kInitialEnergyJ));
  sources.Set("BasicEnergySupplyVoltageV", ns3::DoubleValue(config.supply_voltage_v));
  // The source's periodic update only checks for depletion, which cannot happen; a rare one
  // keeps the event list short.
  sources.Set("PeriodicEnergyUpdateInterval", ns3::TimeValue(ns3::Seconds(3600)));
  ns3::WifiRadioEnergyModelHelper radios;
  for (const Key& k : keys()) {
    if (*k.attribute) radios.Set(k.attribute, ns3::DoubleValue(config.*k.member));
  }
  std::vector<ns3::Ptr<ns3::DeviceEnergyModel>> models;
  for (auto it = devices.Begin(); it != devices.End(); ++it) {
    auto device = ns3::DynamicCast<ns3::WifiNetDevice>(*it);
    if (device == nullptr) throw std::logic_error("radio energy on a device that is not Wi-Fi");
    ns3::EnergySourceContainer source = sources.Install(device->GetNode());
    models.push_back(radios.Install(device, source.Get(0)).Get(0));
  }
  return models;
}

}  // namespace gradwire
