#include "netmodels/NetworkParams.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <stdexcept>

namespace gradwire {

namespace {

using namespace params;

/// A key without a default: the object is rejected without it.
ParamSpec required(ParamSpec spec) {
  spec.default_value = nullptr;
  spec.default_text = "required";
  return spec;
}

/// `spec` whose default is `value` (a JSON value the builders do not express: null, "all").
ParamSpec with_default(ParamSpec spec, nlohmann::json value) {
  spec.default_value = std::move(value);
  return spec;
}

/// `spec` with a lower bound; ranges the builders cannot declare (durations).
ParamSpec above(ParamSpec spec, double min) {
  spec.min = min;
  spec.min_exclusive = true;
  return spec;
}

std::vector<ParamSpec> without(const std::vector<ParamSpec>& params,
                               std::initializer_list<const char*> names) {
  std::vector<ParamSpec> out;
  for (const auto& p : params) {
    bool dropped = false;
    for (const char* n : names) dropped = dropped || p.name == n;
    if (!dropped) out.push_back(p);
  }
  return out;
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

std::string two_decimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// Fading's keys, one type, default and range for Wi-Fi and LTE (both chain ns-3's
/// NakagamiPropagationLossModel and read them alike); each family says what a draw covers.
ParamSpec fading_param(const char* meaning) {
  return choice("fading", "none", {"none", "nakagami"}, meaning);
}

ParamSpec nakagami_m_param(const char* meaning) {
  return number("nakagami_m", 1.0, 0.0, 100.0, meaning, true);
}

}  // namespace

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

const std::vector<ParamSpec>& wifi_params() {
  static const std::vector<ParamSpec> kParams = {
      choice("standard", "ax", {"n", "ac", "ax"},
             "802.11n (HT), 802.11ac (VHT) or 802.11ax (HE)"),
      choice("band", "5GHz", {"2.4GHz", "5GHz", "6GHz"},
             "`2.4GHz` or `5GHz` with n, `5GHz` with ac, any with ax"),
      derived(integer("width_mhz", 80, 20, 160,
                      "channel width: 20, 40, 80 or 160 MHz; at most 40 with n or at 2.4GHz"),
              "80 (20 with n or at 2.4GHz)"),
      integer("channel", 0, 0, 233, "channel number; 0: the band's default channel for the width"),
      integer("spatial_streams", 1, 1, 4, "antennas and spatial streams on every node"),
      choice("rate_control", "ideal", {"ideal", "minstrel-ht", "constant"},
             "`ideal` (ns-3's IdealWifiManager: the best MCS for the SNR), `minstrel-ht` "
             "(sampling, as Linux does) or `constant` (`mcs`)"),
      integer("mcs", 7, 0, 11,
              "with `rate_control` `constant`: the MCS index, n 0-7 (per spatial stream), ac "
              "0-9, ax 0-11"),
      choice("propagation", "log-distance", {"log-distance", "friis"},
             "path loss: `log-distance` (`exponent`, `reference_loss_db`) or `friis` (free "
             "space at the band's centre frequency)"),
      number("exponent", 3.0, 1.0, 8.0, "log-distance path-loss exponent"),
      derived(number("reference_loss_db", wifi_default_reference_loss_db("5GHz"), 0.0, 200.0,
                     "log-distance: the loss at 1 m, dB"),
              "Friis loss at 1 m for the band: " +
                  two_decimals(wifi_default_reference_loss_db("2.4GHz")) + " (2.4GHz), " +
                  two_decimals(wifi_default_reference_loss_db("5GHz")) + " (5GHz), " +
                  two_decimals(wifi_default_reference_loss_db("6GHz")) + " (6GHz)"),
      fading_param(
          "fast fading after the path loss: `nakagami` (ns-3's NakagamiPropagationLossModel: "
          "each frame's received power is drawn from a Nakagami-m distribution around the "
          "path loss's, `nakagami_m`) or `none`"),
      nakagami_m_param(
          "`fading` `nakagami`: the shape m; 1 is Rayleigh fading (no line of sight), larger "
          "is milder (line of sight: m = (K + 1)^2 / (2K + 1) for Rician factor K)"),
      number("tx_power_dbm", 20.0, -10.0, 40.0, "transmit power of every radio, dBm"),
      derived(with_default(
                  list("ap_position",
                       "where the AP stands, [x, y] metres; its stations stand and move around "
                       "it. null: at the origin, on a medium of its own. In a `hybrid` network "
                       "the Wi-Fi groups that have a position share one medium per band, "
                       "channel and width: they hear, defer to and interfere with each other's "
                       "frames (their propagation keys must agree); a group without one hears "
                       "no other group"),
                  nullptr),
              "null"),
      object("placement",
             "where worker stations stand around the AP (`placement` below; default 5 m away)"),
      rate("backhaul_rate", "1Gbps",
           "AP <-> wired server (`server` `wired`) or, in a hybrid group, AP <-> core router"),
      duration("backhaul_delay", "500us", "one-way delay of the backhaul"),
      impairments_param(true),
      object("radio_energy",
             "the radios' power draw, for the energy each host's radio used (`radio_energy` "
             "below); measures only, changes nothing in the simulation"),
      choice("server", "station", {"station", "ap", "wired"},
             "where the last host sits: another `station`, the `ap` itself, or a host `wired` "
             "behind the AP. Under topology `ps` that host is the parameter server; under "
             "`ring` it is the last worker, so keep `station` for rings"),
      tcp_buffer_param(),
  };
  return kParams;
}

const std::vector<ParamSpec>& lte_params() {
  static const std::vector<ParamSpec> kParams = {
      integer("enbs", 1, 1, 16,
              "eNodeBs on a line, `enb_spacing_m` apart; worker UE i attaches to eNodeB i mod "
              "`enbs`"),
      number("enb_spacing_m", 500.0, 1.0, 100000.0,
             "distance between neighbouring eNodeBs, metres"),
      object("placement",
             "where UEs stand around their eNodeB (`placement` below; default 100 m away)"),
      integer("ul_bandwidth", 100, 6, 100,
              "uplink resource blocks: 6, 15, 25, 50, 75 or 100 (1.4 to 20 MHz)"),
      integer("dl_bandwidth", 100, 6, 100, "downlink resource blocks, as `ul_bandwidth`"),
      choice("scheduler", "pf",
             {"pf", "rr", "fdmt", "tdmt", "tta", "fdbet", "tdbet", "fdtbfq", "tdtbfq", "pss",
              "cqa"},
             "ns-3's FF MAC scheduler: `pf` proportional fair, `rr` round robin, `fdmt`/`tdmt` "
             "maximum throughput (frequency/time domain), `tta` throughput to average, "
             "`fdbet`/`tdbet` blind equal throughput, `fdtbfq`/`tdtbfq` token bank fair "
             "queue, `pss` priority set, `cqa` channel and QoS aware"),
      choice("rlc", "am", {"am", "um"},
             "RLC mode of the bearers: `am` (acknowledged, as TCP bearers use in practice) or "
             "`um` (unacknowledged); RLC buffers hold 4 MiB"),
      number("ue_tx_power_dbm", 23.0, -40.0, 40.0, "UE transmit power, dBm"),
      number("enb_tx_power_dbm", 43.0, 0.0, 60.0, "eNodeB transmit power, dBm"),
      choice("pathloss", "friis", {"friis", "log-distance", "cost231"},
             "path loss: `friis` (free space), `log-distance` (`exponent`) or `cost231` "
             "(COST-231 Hata)"),
      number("exponent", 3.0, 1.0, 8.0, "log-distance path-loss exponent"),
      fading_param(
          "fast fading on every radio link, downlink and uplink: `nakagami` scales each "
          "transmission's received power by a Nakagami-m draw (ns-3's "
          "NakagamiPropagationLossModel, chained onto the path loss; a new draw per "
          "transmission, the same over its resource blocks)"),
      nakagami_m_param("`fading` `nakagami`: the shape m (1 = Rayleigh; larger = milder fading)"),
      choice("handover", "none", {"none", "a3-rsrp"},
             "`a3-rsrp`: X2 links between every pair of eNodeBs and ns-3's "
             "A3RsrpHandoverAlgorithm (a UE hands over when a neighbour's RSRP exceeds its "
             "cell's by `hysteresis_db` for `time_to_trigger`); `none`: UEs stay with the "
             "eNodeB they attached to. Handovers reach summary.json's `network_events`"),
      number("hysteresis_db", 3.0, 0.0, 15.0,
             "`handover` `a3-rsrp`: how much stronger a neighbour must be, dB"),
      at_most(duration("time_to_trigger", "256ms",
                       "`handover` `a3-rsrp`: how long it must stay stronger, whole "
                       "milliseconds (5.12s is 3GPP's longest)"),
              5.12),
      rate("backhaul_rate", "10Gbps",
           "PGW <-> server host (`server` `remote` or `edge`) or, in a hybrid group, PGW <-> "
           "core router"),
      derived(duration("backhaul_delay", "10ms", "one-way delay of the backhaul"),
              "10ms (100us with server edge)"),
      impairments_param(true),
      object("radio_energy",
             "the UEs' power model, for the energy each UE's radio used (`radio_energy` "
             "below); measures only, changes nothing in the simulation"),
      choice("server", "remote", {"remote", "edge", "ue"},
             "where the last host sits: `remote` (behind the PGW: an Internet server), `edge` "
             "(next to the PGW: MEC) or `ue` (another UE). Under topology `ps` that host is "
             "the parameter server; under `ring` it is the last worker, so keep `ue` for "
             "rings"),
      tcp_buffer_param(),
  };
  return kParams;
}

const std::vector<ParamSpec>& hybrid_params() {
  static const std::vector<ParamSpec> kParams = {
      required(list("groups",
                    "the worker groups (`groups` entries below), at most 200 and at most one "
                    "`lte` (one EPC). Hosts are numbered group by group in list order, the "
                    "server last; the groups' `workers` add up to `training.workers`")),
      rate("server_rate", "10Gbps", "core router <-> server host (when the topology has one)"),
      duration("server_delay", "100us", "one-way delay of that link"),
      tcp_buffer_param(),
  };
  return kParams;
}

const std::vector<ParamSpec>& hybrid_group_params() {
  static const std::vector<ParamSpec> kParams = {
      required(choice("family", "", {"wifi", "lte", "ethernet"},
                      "the group's family; its gateway (AP, PGW or switch) has its own backhaul "
                      "(the group's `backhaul_rate`, `backhaul_delay`) to one core router")),
      required(integer("workers", 1, 1, 250,
                       "workers in the group; host indices in the group's `impairments` count "
                       "within the group (a background flow's `target` is a global index)")),
  };
  return kParams;
}

const std::vector<ParamSpec>& wifi_group_params() {
  static const std::vector<ParamSpec> kParams = without(wifi_params(), {"server", "tcp_buffer"});
  return kParams;
}

const std::vector<ParamSpec>& lte_group_params() {
  static const std::vector<ParamSpec> kParams = without(lte_params(), {"server", "tcp_buffer"});
  return kParams;
}

const std::vector<ParamSpec>& ethernet_group_params() {
  static const std::vector<ParamSpec> kParams = {
      rate("rate", "1Gbps", "every host <-> switch link (full duplex)"),
      at_most(duration("delay", "50us",
                       "one-way propagation delay per link (at most 1s: a geostationary hop "
                       "is 0.27s, and TCP's handshake gives up on much longer ones)"),
              1.0),
      integer("queue", 1000, 1, 1000000,
              "drop-tail queue per device (host NIC and switch port), packets"),
      rate("backhaul_rate", "10Gbps", "switch <-> core router"),
      duration("backhaul_delay", "100us", "one-way delay of the backhaul"),
      impairments_param(false),
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
      required(list("distances_m",
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
      with_default(list("hosts",
                        "impaired hosts: `\"all\"` or a list of host indices (negative counts "
                        "from the end: -1 is the last host)"),
                   "all"),
      object("loss", "packet loss (`loss` below)"),
      at_most(duration("delay", "0s", "extra one-way delay per direction (at most 1s)"), 1.0),
      duration("jitter", "0s",
               "each packet's extra delay is uniform in [delay - jitter, delay + jitter]; "
               "packet order is kept"),
      derived(with_default(rate("rate_cap", "",
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
      required(duration("down", "", "the hosts' links go down at this simulated time")),
      required(duration("up", "",
                        "and come back at this time, after `down`: nothing crosses in [down, "
                        "up)")),
      with_default(list("hosts",
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
