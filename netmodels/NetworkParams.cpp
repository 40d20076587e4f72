#include "netmodels/NetworkParams.h"

#include <cmath>
#include <algorithm>
#include <stdexcept>

#include "netmodels/Impairments.h"
#include "netmodels/LteUeEnergyModel.h"
#include "netmodels/NetworkParts.h"
#include "netmodels/WifiRadioEnergy.h"

namespace gradwire {

namespace {

using namespace params;

/// Whether `value` is one of the selector's declared choices.
bool listed(const ParamSpec& selector, const std::string& value) {
  return std::find(selector.choices.begin(), selector.choices.end(), value) !=
         selector.choices.end();
}

[[noreturn]] void unknown_selector(const char* what, const std::string& value) {
  throw std::logic_error(std::string("no keys declared for ") + what + " '" + value + "'");
}

}  // namespace

ParamSpec required_key(ParamSpec spec) {
  spec.default_value = nullptr;
  spec.default_text = "required";
  return spec;
}

ParamSpec key_with_default(ParamSpec spec, nlohmann::json value) {
  spec.default_value = std::move(value);
  return spec;
}

ParamSpec fading_param(const char* meaning) {
  return choice("fading", "none", {"none", "nakagami"}, meaning);
}

ParamSpec nakagami_m_param(const char* meaning) {
  return number("nakagami_m", 1.0, 0.0, 100.0, meaning, true);
}

ParamSpec tcp_buffer_param() {
  return integer("tcp_buffer", 4 << 20, 4096, 1 << 30, "socket send and receive buffers, bytes");
}

ParamSpec impairments_param(bool wireless) {
  return object("impairments",
                wireless ? "loss, delay, jitter, rate cap, outages, background traffic and "
                           "mobility (`impairments` below)"
                         : "loss, delay, jitter, rate cap, outages and background traffic "
                           "(`impairments` below, without `mobility`); applied to both "
                           "directions of each impaired host's link");
}

const std::vector<ParamSpec>& hybrid_group_params() {
  static const std::vector<ParamSpec> kParams = {
      required_key(choice("family", "", {"wifi", "lte", "ethernet"},
                      "the group's family; its gateway (AP, PGW or switch) has its own backhaul "
                      "(the group's `backhaul_rate`, `backhaul_delay`) to one core router")),
      required_key(integer("workers", 1, 1, 250,
                       "workers in the group; host indices in the group's `impairments` count "
                       "within the group (a background flow's `target` is a global index)")),
  };
  return kParams;
}

const std::vector<ParamSpec>& wifi_radio_energy_params() {
  static const std::vector<ParamSpec> kParams = WifiRadioEnergyConfig::keys().params();
  return kParams;
}

const std::vector<ParamSpec>& lte_radio_energy_params() {
  static const std::vector<ParamSpec> kParams = LteRadioEnergyConfig::keys().params();
  return kParams;
}

const std::vector<ParamSpec>& placement_params() {
  static const std::vector<ParamSpec> kParams = PlacementSpec::keys().params();
  return kParams;
}

std::vector<std::string> placement_keys(const std::string& kind) {
  if (!listed(param_named(placement_params(), "kind"), kind)) {
    unknown_selector("placement kind", kind);
  }
  PlacementSpec p;
  p.kind = kind;
  return PlacementSpec::keys().names(p);
}

const std::vector<ParamSpec>& impairments_params(bool wireless) {
  static const std::vector<ParamSpec> kWired = ImpairmentsConfig::keys(false).params();
  static const std::vector<ParamSpec> kWireless = ImpairmentsConfig::keys(true).params();
  return wireless ? kWireless : kWired;
}

const std::vector<ParamSpec>& loss_params() {
  static const std::vector<ParamSpec> kParams = LossSpec::keys().params();
  return kParams;
}

std::vector<std::string> loss_keys(const std::string& model) {
  if (!listed(param_named(loss_params(), "model"), model)) unknown_selector("loss model", model);
  LossSpec l;
  l.model = model;
  return LossSpec::keys().names(l);
}

const std::vector<ParamSpec>& outage_params() {
  static const std::vector<ParamSpec> kParams = OutageSpec::keys().params();
  return kParams;
}

const std::vector<ParamSpec>& background_params(bool wireless) {
  static const std::vector<ParamSpec> kWired = BackgroundFlowSpec::keys(false).params();
  static const std::vector<ParamSpec> kWireless = BackgroundFlowSpec::keys(true).params();
  return wireless ? kWireless : kWired;
}

const std::vector<ParamSpec>& mobility_params() {
  static const std::vector<ParamSpec> kParams = MobilitySpec::keys().params();
  return kParams;
}

std::vector<std::string> mobility_keys(const std::string& model) {
  if (!listed(param_named(mobility_params(), "model"), model)) {
    unknown_selector("mobility model", model);
  }
  MobilitySpec m;
  m.model = model;
  return MobilitySpec::keys().names(m);
}

double wifi_band_frequency_hz(const std::string& band) {
  if (band == "2.4GHz") return 2.437e9;
  if (band == "6GHz") return 5.975e9;
  return 5.18e9;
}

double wifi_default_reference_loss_db(const std::string& band) {
  // Free-space loss at 1 m: 20 log10(4 pi f / c).
  const double f = wifi_band_frequency_hz(band);
  const double friis_1m_db = 20.0 * std::log10(4.0 * 3.14159265358979 * f / 299792458.0);
  return std::round(friis_1m_db * 100) / 100;
}

}  // namespace gradwire
