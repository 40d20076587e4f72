// The Wi-Fi radios' energy, from ns-3's energy framework: every station's and the AP's Wi-Fi
// device gets a BasicEnergySource and a WifiRadioEnergyModel, which listens to the PHY's state
// changes (TX, RX, CCA busy, idle, switching, sleep; WifiEnergyPhyListener.h says which
// notifications it gets) and integrates current x voltage over the time spent in each. The source holds far more energy than a run uses (WifiRadioEnergy.cpp
// says how much), so it never depletes and the radio never switches off: the model measures,
// it does not change what the network does.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>
#include <ns3/device-energy-model.h>
#include <ns3/net-device-container.h>
#include <ns3/ptr.h>
#include <ns3/wifi-phy-listener.h>

#include "common/FieldTable.h"

namespace gradwire {

/// `radio_energy` of a Wi-Fi network or group (wifi_radio_energy_params()). The defaults are
/// ns-3's WifiRadioEnergyModel defaults: Halperin, Greenstein, Sheth and Wetherall,
/// "Demystifying 802.11n Power Consumption", HotPower 2010 (an Intel Wi-Fi Link 5300, one
/// antenna: 1.14 W transmitting, 0.94 W receiving, 0.82 W idle, 0.10 W asleep) at 3 V.
struct WifiRadioEnergyConfig {
  double supply_voltage_v = 3.0;
  double tx_current_a = 0.380;
  double rx_current_a = 0.313;
  double idle_current_a = 0.273;
  double cca_busy_current_a = 0.273;
  double switching_current_a = 0.273;
  double sleep_current_a = 0.033;

  /// Its keys, each bound to its member.
  static const FieldTable<WifiRadioEnergyConfig>& keys();
  static WifiRadioEnergyConfig from_json(const nlohmann::json& object, const std::string& path);
  nlohmann::json to_json() const;
};

/// The models of a set of devices, and the listeners that feed them (which the PHYs hold by
/// pointer: keep them as long as the simulation runs).
struct WifiRadioEnergy {
  std::vector<ns3::Ptr<ns3::DeviceEnergyModel>> models;  ///< in the order of the devices
  std::shared_ptr<std::vector<std::unique_ptr<ns3::WifiPhyListener>>> listeners;
};

/// Installs a source and a WifiRadioEnergyModel on each Wi-Fi device of `devices` (a node's
/// other devices are left alone).
WifiRadioEnergy install_wifi_radio_energy(const WifiRadioEnergyConfig& config,
                                          const ns3::NetDeviceContainer& devices);

}  // namespace gradwire
