// The keys of a `network` object that are not one family's own, declared once
// (common/ParamSpec.h): a hybrid network's `groups` entries, the nested objects (placement,
// impairments and their parts, radio energy) and the builders the families' declarations
// share. Each family's own keys are bound to its config's members beside it (EthernetNetwork,
// WifiNetwork, LteNetwork, HybridNetwork), and `gradwire networks` and docs/networks.md are
// produced from these declarations, so the accepted keys, their defaults and ranges, and the
// documentation cannot disagree.
//
// A default that depends on other keys is declared with params::derived (its text is what the
// listing shows) and computed where the key is read; a range or choice list that other keys
// narrow is declared at its widest.
#pragma once

#include <string>
#include <vector>

#include "common/ParamSpec.h"

namespace gradwire {

/// `family` and `workers`: the keys every entry of a hybrid network's `groups` takes. (Each
/// family's own keys are bound to its config's members beside it: ethernet_params() in
/// netmodels/EthernetNetwork.h, wifi_params() in netmodels/WifiNetwork.h, ...; the keys every
/// `network` object takes, `family`, `transport` and `label`, are network_params() in
/// netmodels/NetworkRegistry.h.)
const std::vector<ParamSpec>& hybrid_group_params();

/// A key without a default: the object is refused without it.
ParamSpec required_key(ParamSpec spec);
/// `spec` whose default is `value` (a JSON value the builders do not express: null, "all").
ParamSpec key_with_default(ParamSpec spec, nlohmann::json value);

/// Keys several families declare alike: `tcp_buffer`, `impairments` (`wireless`: with
/// `mobility`), and fading's two (Wi-Fi and LTE both chain ns-3's
/// NakagamiPropagationLossModel and read them alike; each family says what a draw covers).
ParamSpec tcp_buffer_param();
ParamSpec impairments_param(bool wireless);
ParamSpec fading_param(const char* meaning);
ParamSpec nakagami_m_param(const char* meaning);

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
