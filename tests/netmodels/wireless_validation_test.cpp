// gradwire's Wi-Fi and LTE cells against outside references (WirelessReferences.h): Bianchi's
// saturation model of 802.11 channel access, an analytic single-station A-MPDU model built on
// the standard's timing, 3GPP TS 36.213's transport block sizes, and proportional-fair
// scheduling theory. The cells are built as gradwire builds them; only what each reference
// assumes is set (a fixed MCS; no aggregation for Bianchi). tests/bench/wireless_bench.cpp
// prints the full tables (netmodels/README.md, "Validation").
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "WirelessExperiments.h"
#include "WirelessReferences.h"

namespace gradwire::testing {
namespace {

using nlohmann::json;

double relative_error(double measured, double reference) {
  return (measured - reference) / reference;
}

// ---------------------------------------------------------------------------------------------
// Wi-Fi channel access: n saturated stations against Bianchi (2000).

// 802.11ax (gradwire's default standard), 20 MHz, HE MCS 7, 1472-byte UDP payloads, stations
// 1 m from the AP (no PHY errors). Within 5 %: what the model leaves out (the AP's beacons,
// ~0.5 % of the airtime; the retry limit of 7, which drops ~1 % of the frames at n = 20 and
// resets the window; the colliders' AckTimeout, see BianchiCell) stays well inside that (the
// measured cells are within 2 %), while a wrong slot (20 us: -13 to -25 %), HE guard interval
// (3.2 us, ns-3's default: -7 to -10 %) or CWmin (31: -17 % at n = 1, +7 % at n = 20) fails.
TEST(WifiBianchi, SaturationThroughputWithinFivePercent) {
  BianchiCell reference;
  WifiConfig config;
  config.standard = reference.standard;
  config.band = "5GHz";
  config.width_mhz = reference.width_mhz;
  config.rate_control = "constant";
  config.mcs = reference.mcs;
  config.placement.kind = "distance";
  config.placement.distance_m = 1.0;
  for (std::uint32_t n : {1u, 2u, 5u, 10u, 20u}) {
    const WifiSaturationResult run = wifi_saturation(config, n, reference.payload, 1.0);
    const BianchiPoint model = reference.saturation(static_cast<int>(n));
    std::printf("[bianchi] n = %2u: %.2f Mb/s, Bianchi %.2f Mb/s (%+.1f %%; tau %.4f, p %.3f)\n",
                n, run.goodput_bps / 1e6, model.throughput_bps / 1e6,
                100 * relative_error(run.goodput_bps, model.throughput_bps), model.tau, model.p);
    // The frames on the air are the ones the reference times.
    ASSERT_GT(run.first_station.ppdus, 0u) << n;
    EXPECT_EQ(run.first_station.psdu_bytes_per_ppdu(), reference.psdu_bytes()) << n;
    EXPECT_EQ(run.first_station.mpdus_per_ppdu(), 1.0) << "aggregation is off; n = " << n;
    EXPECT_NEAR(run.goodput_bps, model.throughput_bps, 0.05 * model.throughput_bps) << "n = " << n;
  }
}

// ---------------------------------------------------------------------------------------------
// Wi-Fi link: one station's UDP and TCP goodput against the analytic A-MPDU model.

struct LinkCase {
  const char* standard;
  std::uint16_t width_mhz;
  std::uint32_t mcs;
};

json link_network(const LinkCase& c) {
  return {{"family", "wifi"}, {"standard", c.standard}, {"band", "5GHz"},
          {"width_mhz", c.width_mhz}, {"rate_control", "constant"}, {"mcs", c.mcs},
          {"server", "ap"}, {"placement", {{"kind", "distance"}, {"distance_m", 1}}}};
}

// Within 10 %: the model leaves out station-AP collisions and the AP carrying the ACKs of two
// data A-MPDUs in one (WifiLinkModel), a few percent each. The A-MPDUs on the air must hold
// as many MPDUs as the model's limits allow.
TEST(WifiLink, GoodputWithinTenPercentOfTheAmpduModel) {
  for (const LinkCase c : {LinkCase{"n", 20, 7}, LinkCase{"ac", 80, 9}, LinkCase{"ax", 20, 7},
                           LinkCase{"ax", 80, 11}}) {
    const WifiLinkModel model{c.standard, c.mcs, c.width_mhz};
    for (bool tcp : {false, true}) {
      // TCP: the window opens past slow start; UDP: at once.
      const WifiLinkResult run =
          wifi_link(link_network(c), tcp, model.udp_payload, tcp ? 1.0 : 0.6, 0.4);
      const double reference = model.goodput_bps(tcp);
      std::printf("[wifi link] 802.11%s %u MHz MCS %u %s: %.1f Mb/s, model %.1f Mb/s (%+.1f %%),"
                  " %.1f MPDUs per A-MPDU (model %u)\n",
                  c.standard, c.width_mhz, c.mcs, tcp ? "TCP" : "UDP", run.goodput_bps / 1e6,
                  reference / 1e6, 100 * relative_error(run.goodput_bps, reference),
                  run.station.mpdus_per_ppdu(), model.data(tcp).mpdus);
      EXPECT_EQ(run.station.guard_interval_ns, 800) << c.standard;
      EXPECT_NEAR(run.station.mpdus_per_ppdu(), model.data(tcp).mpdus, 0.5) << c.standard;
      EXPECT_NEAR(run.goodput_bps, reference, 0.10 * reference)
          << c.standard << " " << c.width_mhz << " MHz MCS " << c.mcs << (tcp ? " TCP" : " UDP");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// LTE: one UE at the best channel against TS 36.213's transport block sizes.

json lte_network(std::uint32_t rbs, const json& placement, const std::string& pathloss = "friis") {
  return {{"family", "lte"}, {"server", "edge"}, {"ul_bandwidth", rbs}, {"dl_bandwidth", rbs},
          {"pathloss", pathloss}, {"exponent", 3.5}, {"placement", placement}};
}

// A UE 10 m from the eNodeB reports CQI 15: ns-3 then schedules MCS 28 both ways, I_TBS 26
// (TS 36.213 Tables 7.1.7.1-1 and 8.6.1-1). Its goodput is the standard's TBS at I_TBS 26 for
// the whole bandwidth, every 1 ms TTI, less the headers of lte_goodput_bps. Within 10 %:
// ns-3's downlink schedulers allocate whole resource block groups only (15, 25, 50, 75 RBs:
// RBG size 2, 2, 3, 4 gives 14, 24, 48, 72 RBs; TS 36.213 7.1.6.1 allows a smaller last RBG),
// 4-7 % below the table.
TEST(LteSaturation, GoodputWithinTenPercentOfTransportBlockSizes) {
  const json near = {{"kind", "distance"}, {"distance_m", 10}};
  for (bool uplink : {false, true}) {
    for (std::uint32_t rbs : {6u, 15u, 25u, 50u, 75u, 100u}) {
      const std::uint32_t tbs = lte_tbs_bits(26, rbs);
      const LteSaturationResult run =
          lte_saturation(lte_network(rbs, near), 1, uplink, 1472, 1.5e3 * tbs, 0.4);
      const double reference = lte_goodput_bps(tbs, 1472);
      const TransportBlockLog& blocks = uplink ? run.ul : run.dl;
      std::printf("[lte] %s %3u RBs: %.2f Mb/s, TS 36.213 TBS %u bits -> %.2f Mb/s (%+.1f %%);"
                  " ns-3 MCS %u, %.0f-byte blocks\n",
                  uplink ? "uplink  " : "downlink", rbs, run.goodput_bps[0] / 1e6, tbs,
                  reference / 1e6, 100 * relative_error(run.goodput_bps[0], reference),
                  blocks.usual_mcs(), blocks.mean_bytes());
      EXPECT_EQ(blocks.usual_mcs(), 28u) << rbs;
      EXPECT_NEAR(run.goodput_bps[0], reference, 0.10 * reference)
          << (uplink ? "uplink " : "downlink ") << rbs << " RBs";
    }
  }
}

// Proportional fair (gradwire's default scheduler) with two saturated downlink UEs of
// different channels (10 m and 200 m, log-distance exponent 3.5: ns-3 MCS 28 and a mid MCS;
// further out the far UE's uplink, which carries its CQI reports and RLC AM status PDUs, fails
// before its downlink and limits it alone more than when sharing, outside what PF decides).
// PF theory for full-buffer users on a channel without fading: the metric rate / average
// throughput equalises the users' time shares, so each gets half its rate alone and the
// throughput ratio equals the ratio of the rates alone. Tolerance 10 %: ns-3's PF averages
// throughput over a moving window and allocates whole TTIs to the best metric, so the shares
// alternate around one half; over a 0.4 s window (400 TTIs) that leaves ~1 %, and the far UE's
// CQI (hence MCS) may differ by one step between running alone and sharing (CQI reports
// arrive only with its grants), a few percent of its rate.
TEST(LteProportionalFair, TwoUesShareTimeEqually) {
  const std::uint32_t rbs = 25;
  const std::vector<double> distances = {10, 200};
  std::vector<double> alone;
  for (double d : distances) {
    alone.push_back(lte_saturation(lte_network(rbs, {{"kind", "distance"}, {"distance_m", d}},
                                               "log-distance"),
                                   1, false, 1472, 30e6, 0.4)
                        .goodput_bps[0]);
  }
  const LteSaturationResult both = lte_saturation(
      lte_network(rbs, {{"kind", "distances"}, {"distances_m", distances}}, "log-distance"), 2,
      false, 1472, 30e6, 0.4);
  for (std::size_t i = 0; i < 2; ++i) {
    const double share = both.goodput_bps[i] / alone[i];
    std::printf("[lte pf] UE at %.0f m: %.2f Mb/s alone, %.2f Mb/s shared (time share %.3f)\n",
                distances[i], alone[i] / 1e6, both.goodput_bps[i] / 1e6, share);
    EXPECT_NEAR(share, 0.5, 0.05) << distances[i] << " m";
  }
  ASSERT_GT(alone[0], 1.5 * alone[1]) << "the two channels should differ";
  const double ratio = both.goodput_bps[0] / both.goodput_bps[1];
  const double theory = alone[0] / alone[1];
  std::printf("[lte pf] throughput ratio %.3f, PF theory %.3f\n", ratio, theory);
  EXPECT_NEAR(ratio, theory, 0.10 * theory);
}

}  // namespace
}  // namespace gradwire::testing
