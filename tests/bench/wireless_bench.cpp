// gradwire's Wi-Fi and LTE cells against outside references, the full tables behind
// tests/netmodels/wireless_validation_test.cpp (netmodels/README.md, "Validation"). Each case
// runs its simulation once; the counters are the simulated goodput, the reference and the
// relative error.
//   build/tests/bench/wireless_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include "WirelessExperiments.h"
#include "WirelessReferences.h"

namespace gradwire::testing {
namespace {

using nlohmann::json;

struct Mode {
  const char* standard;
  std::uint16_t width_mhz;
  std::uint32_t mcs;
};
const Mode kBianchiModes[] = {{"n", 20, 7}, {"ac", 40, 9}, {"ax", 20, 7}};
const Mode kLinkModes[] = {{"n", 20, 7}, {"n", 40, 7}, {"ac", 80, 9}, {"ac", 160, 9},
                           {"ax", 20, 7}, {"ax", 80, 11}, {"ax", 160, 11}};

void report(benchmark::State& state, double sim_bps, double ref_bps) {
  state.counters["sim_Mbps"] = sim_bps / 1e6;
  state.counters["ref_Mbps"] = ref_bps / 1e6;
  state.counters["err_pct"] = 100 * (sim_bps - ref_bps) / ref_bps;
}

// {mode index, stations}: Bianchi with Tc = T_data + AIFS (ref) and with the colliders'
// AckTimeout added (ref_acktimeout_Mbps, a lower bound).
void BM_WifiBianchi(benchmark::State& state) {
  const Mode& m = kBianchiModes[state.range(0)];
  const auto n = static_cast<std::uint32_t>(state.range(1));
  BianchiCell reference;
  reference.standard = m.standard;
  reference.width_mhz = m.width_mhz;
  reference.mcs = m.mcs;
  WifiConfig config;
  config.standard = m.standard;
  config.band = "5GHz";
  config.width_mhz = m.width_mhz;
  config.rate_control = "constant";
  config.mcs = m.mcs;
  config.placement.distance_m = 1.0;
  WifiSaturationResult run;
  for (auto _ : state) run = wifi_saturation(config, n, reference.payload, 2.0);
  state.SetLabel(std::string("802.11") + m.standard + " " + std::to_string(m.width_mhz) +
                 " MHz MCS " + std::to_string(m.mcs));
  report(state, run.goodput_bps, reference.saturation(static_cast<int>(n)).throughput_bps);
  state.counters["ref_acktimeout_Mbps"] =
      reference.saturation(static_cast<int>(n), true).throughput_bps / 1e6;
  state.counters["p"] = reference.saturation(static_cast<int>(n)).p;
}
BENCHMARK(BM_WifiBianchi)
    ->ArgsProduct({{0, 1, 2}, {1, 2, 5, 10, 20}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// {mode index, tcp}
void BM_WifiLink(benchmark::State& state) {
  const Mode& m = kLinkModes[state.range(0)];
  const bool tcp = state.range(1) != 0;
  const WifiLinkModel model{m.standard, m.mcs, m.width_mhz};
  const json network = {{"family", "wifi"}, {"standard", m.standard}, {"band", "5GHz"},
                        {"width_mhz", m.width_mhz}, {"rate_control", "constant"},
                        {"mcs", m.mcs}, {"server", "ap"},
                        {"placement", {{"kind", "distance"}, {"distance_m", 1}}}};
  WifiLinkResult run;
  for (auto _ : state) run = wifi_link(network, tcp, model.udp_payload, tcp ? 1.0 : 0.6, 1.0);
  state.SetLabel(std::string("802.11") + m.standard + " " + std::to_string(m.width_mhz) +
                 " MHz MCS " + std::to_string(m.mcs) + (tcp ? " TCP" : " UDP"));
  report(state, run.goodput_bps, model.goodput_bps(tcp));
  state.counters["mpdus"] = run.station.mpdus_per_ppdu();
  state.counters["ref_mpdus"] = model.data(tcp).mpdus;
  state.counters["ap_exchanges_per_data"] =
      run.station.ppdus ? double(run.ap.ppdus) / double(run.station.ppdus) : 0.0;
}
BENCHMARK(BM_WifiLink)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6}, {0, 1}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

json lte_network(std::uint32_t rbs, const json& placement, const std::string& pathloss) {
  return {{"family", "lte"}, {"server", "edge"}, {"ul_bandwidth", rbs}, {"dl_bandwidth", rbs},
          {"pathloss", pathloss}, {"exponent", 3.5}, {"placement", placement}};
}

// {uplink, resource blocks}
void BM_LteSaturation(benchmark::State& state) {
  const bool uplink = state.range(0) != 0;
  const auto rbs = static_cast<std::uint32_t>(state.range(1));
  const std::uint32_t tbs = lte_tbs_bits(26, rbs);
  LteSaturationResult run;
  for (auto _ : state) {
    run = lte_saturation(lte_network(rbs, {{"kind", "distance"}, {"distance_m", 10}}, "friis"),
                         1, uplink, 1472, 1.5e3 * tbs, 1.0);
  }
  const TransportBlockLog& blocks = uplink ? run.ul : run.dl;
  state.SetLabel(std::string(uplink ? "uplink " : "downlink ") + std::to_string(rbs) + " RBs");
  report(state, run.goodput_bps[0], lte_goodput_bps(tbs, 1472));
  state.counters["tbs_bits"] = tbs;
  state.counters["ns3_tb_bits"] = 8 * blocks.mean_bytes();
  state.counters["ns3_mcs"] = blocks.usual_mcs();
}
BENCHMARK(BM_LteSaturation)
    ->ArgsProduct({{0, 1}, {6, 15, 25, 50, 75, 100}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// {far UE's distance}: PF with a UE at 10 m and one further out, downlink, 25 RBs; ref is
// the PF throughput ratio (the ratio of the rates alone), sim the ratio measured.
void BM_LteProportionalFair(benchmark::State& state) {
  const double far = static_cast<double>(state.range(0));
  const std::vector<double> distances = {10, far};
  std::vector<double> alone;
  LteSaturationResult both;
  for (auto _ : state) {
    alone.clear();
    for (double d : distances) {
      alone.push_back(lte_saturation(lte_network(25, {{"kind", "distance"}, {"distance_m", d}},
                                                 "log-distance"),
                                     1, false, 1472, 30e6, 1.0)
                          .goodput_bps[0]);
    }
    both = lte_saturation(lte_network(25, {{"kind", "distances"}, {"distances_m", distances}},
                                      "log-distance"),
                          2, false, 1472, 30e6, 1.0);
  }
  state.SetLabel("UEs at 10 m and " + std::to_string(static_cast<int>(far)) + " m");
  state.counters["near_alone_Mbps"] = alone[0] / 1e6;
  state.counters["far_alone_Mbps"] = alone[1] / 1e6;
  state.counters["near_share"] = both.goodput_bps[0] / alone[0];
  state.counters["far_share"] = both.goodput_bps[1] / alone[1];
  state.counters["ratio"] = both.goodput_bps[0] / both.goodput_bps[1];
  state.counters["pf_ratio"] = alone[0] / alone[1];
}
BENCHMARK(BM_LteProportionalFair)
    ->Arg(100)
    ->Arg(150)
    ->Arg(200)
    ->Arg(250)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace gradwire::testing

BENCHMARK_MAIN();
