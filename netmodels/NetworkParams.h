// Every key a `network` object can hold, declared once (common/ParamSpec.h): the families'
// keys, a hybrid network's groups, and the nested objects (placement, impairments and their
// parts). The families' from_json read their keys through these declarations, and
// `gradwire networks` and docs/networks.md are produced from them, so the accepted keys, their
// defaults and ranges, and the documentation cannot disagree.
//
// A default that depends on other keys is declared with params::derived (its text is what the
// listing shows) and computed where the key is read; a range or choice list that other keys
// narrow is declared at its widest.
#pragma once

#include <string>
#include <vector>

#include "common/ParamSpec.h"

namespace gradwire {

/// Each family's own keys (the keys every `network` object takes, `family`, `transport` and
/// `label`, are network_params() in netmodels/NetworkRegistry.h: `family` lists the registry's
/// families;
/// Ethernet's keys are bound to EthernetConfig's members, ethernet_params() in
/// netmodels/EthernetNetwork.h).
const std::vector<ParamSpec>& wifi_params();
const std::vector<ParamSpec>& lte_params();
const std::vector<ParamSpec>& hybrid_params();

/// `family` and `workers`: the keys every entry of a hybrid network's `groups` takes.
const std::vector<ParamSpec>& hybrid_group_params();
/// A family's keys as a hybrid group, besides hybrid_group_params(). The wireless groups take
/// their family's keys without `server` and `tcp_buffer` (the hybrid network has one server
/// and one TCP configuration); an Ethernet group is a switch with a backhaul to the core.
const std::vector<ParamSpec>& wifi_group_params();
const std::vector<ParamSpec>& lte_group_params();
const std::vector<ParamSpec>& ethernet_group_params();

/// Keys several families declare alike: `tcp_buffer`, and `impairments` (`wireless`: with
/// `mobility`).
ParamSpec tcp_buffer_param();
ParamSpec impairments_param(bool wireless);

/// Nested objects. `wireless`: as the Wi-Fi and LTE families take them (with `mobility`, and
/// background flows with `distance_m`).
const std::vector<ParamSpec>& placement_params();
const std::vector<ParamSpec>& impairments_params(bool wireless);
const std::vector<ParamSpec>& loss_params();
const std::vector<ParamSpec>& outage_params();
const std::vector<ParamSpec>& background_params(bool wireless);
const std::vector<ParamSpec>& mobility_params();
/// `radio_energy` of a Wi-Fi network or group (netmodels/WifiRadioEnergy.h) and of an LTE one
/// (netmodels/LteUeEnergyModel.h).
const std::vector<ParamSpec>& wifi_radio_energy_params();
const std::vector<ParamSpec>& lte_radio_energy_params();

/// The declared keys an object takes for each value of its selector: placement's `kind`,
/// loss's and mobility's `model` (each includes the selector itself). std::logic_error for a
/// value the selector's choices do not list.
std::vector<std::string> placement_keys(const std::string& kind);
std::vector<std::string> loss_keys(const std::string& model);
std::vector<std::string> mobility_keys(const std::string& model);

/// The Wi-Fi band's centre frequency (2.437, 5.18 or 5.975 GHz) and the free-space loss at 1 m
/// there, rounded to 0.01 dB: `reference_loss_db`'s default.
double wifi_band_frequency_hz(const std::string& band);
double wifi_default_reference_loss_db(const std::string& band);

}  // namespace gradwire
