#include "netmodels/NetworkParams.h"

#include <cmath>
#include <initializer_list>
#include <stdexcept>

namespace gradwire {

namespace {

using namespace params;

/// `spec` with a lower bound; ranges the builders cannot declare (durations).
ParamSpec above(ParamSpec spec, double min) {
  spec.min = min;
  spec.min_exclusive = true;
  return spec;
}

/// `names`, each checked against the declaration of `params`.
std::vector<std::string> declared(const std::vector<ParamSpec>& params,
                                  std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* n : names) out.push_back(param_named(params, n).name);
  return out;
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
  // ns-3's WifiRadioEnergyModel defaults, from Halperin, Greenstein, Sheth and Wetherall,
  // "Demystifying 802.11n Power Consumption", HotPower 2010: an Intel Wi-Fi Link 5300 with one
  // antenna draws 1.14 W transmitting, 0.94 W receiving, 0.82 W idle and 0.10 W asleep; at
  // 3 V those are the currents below. CCA busy and switching draw what idle does.
  static const std::vector<ParamSpec> kParams = {
      number("supply_voltage", 3.0, 0.0, 100.0,
             "volts of every radio's supply (ns-3's BasicEnergySource); energy = voltage x "
             "current x time in each PHY state",
             true),
      number("tx_current_a", 0.380, 0.001, 10.0, "amperes while transmitting"),
      number("rx_current_a", 0.313, 0.001, 10.0, "amperes while receiving a frame"),
      number("idle_current_a", 0.273, 0.001, 10.0, "amperes while idle, listening"),
      number("cca_busy_current_a", 0.273, 0.001, 10.0,
             "amperes while the channel is sensed busy (a frame it does not receive)"),
      number("switching_current_a", 0.273, 0.001, 10.0, "amperes while switching channel"),
      number("sleep_current_a", 0.033, 0.001, 10.0, "amperes while asleep (power save)"),
  };
  return kParams;
}

const std::vector<ParamSpec>& lte_radio_energy_params() {
  // The LTE values of Huang, Qian, Gerber, Mao, Sen and Spatscheck, "A Close Examination of
  // Performance and Power Characteristics of 4G LTE Networks", ACM MobiSys 2012: the power
  // during data transfer, the RRC_CONNECTED tail, RRC_IDLE and the promotion between them.
  static const std::vector<ParamSpec> kParams = {
      number("active_base_mw", 1288.04, 0.0, 100000.0,
             "mW in a subframe in which the UE sends or receives data, besides the rate terms"),
      number("ul_mw_per_mbps", 438.39, 0.0, 100000.0,
             "mW per Mbit/s sent in that subframe (its traced uplink transport-block bits per "
             "ms)"),
      number("dl_mw_per_mbps", 51.97, 0.0, 100000.0,
             "mW per Mbit/s received in that subframe (its downlink transport-block bits)"),
      number("tail_mw", 1060.0, 0.0, 100000.0,
             "mW in RRC_CONNECTED without data (continuous reception, then DRX), for `tail` "
             "after the last subframe with data"),
      duration("tail", "11.576s",
               "how long a UE stays in RRC_CONNECTED without data before it is released to "
               "RRC_IDLE"),
      number("idle_mw", 594.3 * 43.2 / 1280.0, 0.0, 100000.0,
             "mW in RRC_IDLE: the paging cycle's average (594.3 mW for 43.2 ms every 1.28 s); "
             "also before a UE's first data"),
      number("promotion_mw", 1210.7, 0.0, 100000.0,
             "mW while promoted from RRC_IDLE to RRC_CONNECTED, before data after idle (an "
             "energy cost only: the simulated UE stays connected, so nothing waits for it)"),
      duration("promotion", "260.1ms", "how long a promotion takes"),
  };
  return kParams;
}

const std::vector<ParamSpec>& placement_params() {
  static const std::vector<ParamSpec> kParams = {
      choice("kind", "distance", {"distance", "distances", "grid", "disc"},
             "`distance`: every node `distance_m` away, spread on a circle; `distances`: node i "
             "at entry i mod length of `distances_m`; `grid`: rows of `columns` nodes "
             "`spacing_m` apart, centred on the AP / eNodeB; `disc`: uniformly at random "
             "within `radius_m` (seeded)"),
      derived(number("distance_m", 5.0, 0.0, 100000.0, "`distance`: metres from the AP / eNodeB"),
              "5 in wifi, 100 in lte"),
      required_key(list("distances_m",
                    "`distances`: a non-empty list of metres, each in [0, 100000]")),
      number("spacing_m", 2.0, 0.0, 100000.0, "`grid`: metres between neighbours", true),
      integer("columns", 4, 1, 1000, "`grid`: nodes per row"),
      number("radius_m", 10.0, 0.0, 100000.0, "`disc`: radius, metres", true),
  };
  return kParams;
}

std::vector<std::string> placement_keys(const std::string& kind) {
  const auto& p = placement_params();
  if (kind == "distance") return declared(p, {"kind", "distance_m"});
  if (kind == "distances") return declared(p, {"kind", "distances_m"});
  if (kind == "grid") return declared(p, {"kind", "spacing_m", "columns"});
  if (kind == "disc") return declared(p, {"kind", "radius_m"});
  unknown_selector("placement kind", kind);
}

const std::vector<ParamSpec>& impairments_params(bool wireless) {
  static const std::vector<ParamSpec> kWired = {
      key_with_default(list("hosts",
                        "impaired hosts: `\"all\"` or a list of host indices (negative counts "
                        "from the end: -1 is the last host)"),
                   "all"),
      object("loss", "packet loss (`loss` below)"),
      at_most(duration("delay", "0s", "extra one-way delay per direction (at most 1s)"), 1.0),
      duration("jitter", "0s",
               "each packet's extra delay is uniform in [delay - jitter, delay + jitter]; "
               "packet order is kept"),
      derived(key_with_default(rate("rate_cap", "",
                                "bandwidth cap per direction of each impaired host: packets "
                                "serialise at the cap, up to `queue` wait, the rest are "
                                "dropped; null: no cap"),
                           nullptr),
              "null"),
      integer("queue", 1000, 1, 1000000, "packets held by the impairment stage (tail drop)"),
      list("outages", "windows in which the hosts' links carry nothing (`outages` entries below)"),
      list("background", "UDP on/off flows sharing the bottleneck (`background` entries below)"),
  };
  static const std::vector<ParamSpec> kWireless = [] {
    std::vector<ParamSpec> p = kWired;
    p.push_back(object("mobility",
                       "wireless families only: how worker stations and UEs move (`mobility` "
                       "below)"));
    return p;
  }();
  return wireless ? kWireless : kWired;
}

const std::vector<ParamSpec>& loss_params() {
  static const std::vector<ParamSpec> kParams = {
      choice("model", "none", {"none", "uniform", "gilbert-elliott"},
             "`uniform`: each packet is lost with probability `rate`; `gilbert-elliott`: bursts, "
             "from a two-state (good, bad) Markov chain stepped per packet"),
      number("rate", 0.01, 0.0, 1.0, "`uniform`: probability that a packet is lost"),
      number("p", 0.01, 0.0, 1.0, "`gilbert-elliott`: P(good -> bad) per packet"),
      number("r", 0.25, 0.0, 1.0,
             "`gilbert-elliott`: P(bad -> good) per packet; bursts last 1 / r packets on "
             "average",
             true),
      number("loss_good", 0.0, 0.0, 1.0, "`gilbert-elliott`: loss probability in the good state"),
      number("loss_bad", 1.0, 0.0, 1.0,
             "`gilbert-elliott`: loss probability in the bad state; mean loss = (r loss_good + "
             "p loss_bad) / (p + r)"),
  };
  return kParams;
}

std::vector<std::string> loss_keys(const std::string& model) {
  const auto& p = loss_params();
  if (model == "none") return declared(p, {"model"});
  if (model == "uniform") return declared(p, {"model", "rate"});
  if (model == "gilbert-elliott") return declared(p, {"model", "p", "r", "loss_good", "loss_bad"});
  unknown_selector("loss model", model);
}

const std::vector<ParamSpec>& outage_params() {
  static const std::vector<ParamSpec> kParams = {
      required_key(duration("down", "", "the hosts' links go down at this simulated time")),
      required_key(duration("up", "",
                        "and come back at this time, after `down`: nothing crosses in [down, "
                        "up)")),
      key_with_default(list("hosts",
                        "hosts whose links go down: `\"all\"` (every impaired host) or a list of "
                        "host indices (-1 is the last host)"),
                   "all"),
  };
  return kParams;
}

const std::vector<ParamSpec>& background_params(bool wireless) {
  static const std::vector<ParamSpec> kWired = {
      rate("rate", "10Mbps", "sending rate while on"),
      above(duration("on", "1s", "mean on period"), 0.0),
      duration("off", "1s", "mean off period"),
      choice("distribution", "constant", {"constant", "exponential"},
             "on and off periods: `constant` or `exponential` (with those means)"),
      integer("packet_bytes", 1000, 12, 1472, "UDP payload per packet, bytes"),
      choice("direction", "uplink", {"uplink", "downlink"},
             "`uplink`: the flow's extra node sends to `target`; `downlink`: `target` sends to "
             "it"),
      integer("target", -1, -100000, 100000,
              "host the flow exchanges with (negative counts from the end: -1 is the last "
              "host); a global host index, also in a hybrid group"),
      duration("start", "500ms",
               "when the flow starts: after Wi-Fi association and LTE attach (earlier flows "
               "kept a station's TCP connection from ever opening in tests)"),
  };
  static const std::vector<ParamSpec> kWireless = [] {
    std::vector<ParamSpec> p = kWired;
    p.push_back(number("distance_m", 10.0, 0.0, 100000.0,
                       "wireless families only: the extra station's or UE's distance from the "
                       "AP / eNodeB, metres"));
    return p;
  }();
  return wireless ? kWireless : kWired;
}

const std::vector<ParamSpec>& mobility_params() {
  static const std::vector<ParamSpec> kParams = {
      choice("model", "static", {"static", "random-walk", "random-waypoint", "straight"},
             "how worker stations and UEs move: `static`, `random-walk` (a new direction every "
             "second), `random-waypoint` or `straight` (each walks from where it stands along "
             "`heading_deg` until it reaches the edge of the square)"),
      number("speed_mps", 1.0, 0.0, 1000.0, "speed, metres per second", true),
      duration("pause", "0s", "`random-waypoint`: pause at each waypoint"),
      number("heading_deg", 0.0, -360.0, 360.0,
             "`straight`: direction, degrees counterclockwise from the x axis (0: along the "
             "line of eNodeBs, towards the next one)"),
      number("bounds_m", 50.0, 0.0, 100000.0,
             "moves inside a square of +-bounds_m around the AP / eNodeB", true),
  };
  return kParams;
}

std::vector<std::string> mobility_keys(const std::string& model) {
  const auto& p = mobility_params();
  if (model == "static") return declared(p, {"model"});
  if (model == "random-walk") return declared(p, {"model", "speed_mps", "bounds_m"});
  if (model == "random-waypoint") return declared(p, {"model", "speed_mps", "pause", "bounds_m"});
  if (model == "straight") return declared(p, {"model", "speed_mps", "heading_deg", "bounds_m"});
  unknown_selector("mobility model", model);
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
