// The radios' energy (Network::radio_joules()): on Wi-Fi it is ns-3's WifiRadioEnergyModel, and
// equals the time the PHY's own state trace (WifiPhyStateHelper "State") spent in each state x
// that state's current x the supply voltage; on LTE it is the UE power model applied to the UE
// PHY's own traces (uplink grants, downlink receptions), and equals that model's formula over
// what the test records from the same traces. A station or UE that sends draws more than one
// that does not; Ethernet has no radio; bad `radio_energy` values are ConfigErrors at their
// path; the summary's `energy` object gets each worker's radio joules.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <ns3/bulk-send-helper.h>
#include <ns3/core-module.h>
#include <ns3/inet-socket-address.h>
#include <ns3/lte-common.h>
#include <ns3/lte-spectrum-phy.h>
#include <ns3/lte-ue-net-device.h>
#include <ns3/lte-ue-phy.h>
#include <ns3/packet-sink-helper.h>
#include <ns3/wifi-net-device.h>
#include <ns3/wifi-phy-state-helper.h>
#include <ns3/wifi-phy.h>

#include "common/ConfigError.h"
#include "netmodels/LteNetwork.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/RadioEnergySummary.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {
namespace {

using nlohmann::json;

constexpr std::uint16_t kPort = 50000;

struct Sim {
  std::unique_ptr<Network> network;

  Sim(const json& object, std::size_t hosts) {
    ns3::Simulator::Destroy();
    ns3::RngSeedManager::SetSeed(1);
    ns3::RngSeedManager::SetRun(1);
    network = resolve_network(object, "network").build(hosts);
  }
  ~Sim() { ns3::Simulator::Destroy(); }
};

/// Bulk TCP of `bytes` from host `from` to host `to`, starting at `start`.
void bulk(const Network& network, std::size_t from, std::size_t to, std::uint64_t bytes,
          double start) {
  ns3::BulkSendHelper source("ns3::TcpSocketFactory",
                             ns3::InetSocketAddress(network.address(to), kPort));
  source.SetAttribute("MaxBytes", ns3::UintegerValue(bytes));
  source.Install(network.host(from)).Start(ns3::Seconds(start));
  ns3::PacketSinkHelper sink("ns3::TcpSocketFactory",
                             ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  sink.Install(network.host(to));
}

// ---- Wi-Fi ----

/// Seconds in each WifiPhyState, from the PHY state helper's "State" trace.
struct StateLog {
  std::map<WifiPhyState, double> seconds;
  ns3::Time logged_until;  ///< end of the latest logged period
};

void on_state(StateLog* log, ns3::Time start, ns3::Time duration, WifiPhyState state) {
  log->seconds[state] += duration.GetSeconds();
  log->logged_until = std::max(log->logged_until, start + duration);
}

double current_a(const WifiRadioEnergyConfig& c, WifiPhyState state) {
  switch (state) {
    case WifiPhyState::TX: return c.tx_current_a;
    case WifiPhyState::RX: return c.rx_current_a;
    case WifiPhyState::CCA_BUSY: return c.cca_busy_current_a;
    case WifiPhyState::SWITCHING: return c.switching_current_a;
    case WifiPhyState::SLEEP: return c.sleep_current_a;
    case WifiPhyState::OFF: return 0.0;
    default: return c.idle_current_a;
  }
}

/// Joules by the state trace: seconds in each state x its current x the voltage, plus the
/// current state from the end of the last logged period to now.
double wifi_reference_joules(const WifiRadioEnergyConfig& c, const StateLog& log,
                             ns3::Ptr<ns3::WifiPhy> phy) {
  double joules = 0;
  for (const auto& [state, s] : log.seconds) joules += s * current_a(c, state);
  const double open_s = (ns3::Simulator::Now() - log.logged_until).GetSeconds();
  if (open_s > 0) joules += open_s * current_a(c, phy->GetState()->GetState());
  return joules * c.supply_voltage_v;
}

TEST(WifiRadioEnergy, JoulesAreTheStateTraceTimesCurrentsTimesVoltage) {
  // Currents of their own (not the defaults) so each key is seen to reach ns-3's model.
  const json radio = {{"supply_voltage", 3.7},     {"tx_current_a", 0.52},
                      {"rx_current_a", 0.31},      {"idle_current_a", 0.21},
                      {"cca_busy_current_a", 0.25}, {"switching_current_a", 0.2},
                      {"sleep_current_a", 0.01}};
  const json object = {{"family", "wifi"}, {"server", "ap"}, {"radio_energy", radio}};
  const WifiRadioEnergyConfig config = WifiRadioEnergyConfig::from_json(radio, "r");
  Sim sim(object, 3);  // stations 0 and 1, the AP as host 2
  const auto& wifi = dynamic_cast<const WifiNetwork&>(*sim.network);
  std::vector<ns3::Ptr<ns3::WifiPhy>> phys;
  for (std::uint32_t i = 0; i < 2; ++i) {
    phys.push_back(ns3::DynamicCast<ns3::WifiNetDevice>(wifi.cell().station_devices.Get(i))->GetPhy());
  }
  phys.push_back(ns3::DynamicCast<ns3::WifiNetDevice>(wifi.cell().ap_device)->GetPhy());
  std::vector<StateLog> logs(phys.size());
  for (std::size_t i = 0; i < phys.size(); ++i) {
    phys[i]->GetState()->TraceConnectWithoutContext("State",
                                                    ns3::MakeBoundCallback(&on_state, &logs[i]));
  }
  bulk(*sim.network, 0, 2, 4'000'000, 0.5);  // station 0 -> AP; station 1 only listens

  ns3::Simulator::Stop(ns3::Seconds(2.0));
  ns3::Simulator::Run();
  // The state helper logs an idle or CCA-busy period only when the next state begins; putting
  // every PHY to sleep now logs them up to now (and tells the models: sleep, for no time).
  for (const auto& phy : phys) {
    ASSERT_FALSE(phy->IsStateTx() || phy->IsStateRx()) << "a frame in flight at the end";
    phy->SetSleepMode();
  }
  const auto joules = sim.network->radio_joules();
  ASSERT_EQ(joules.size(), 3u);
  for (std::size_t h = 0; h < 3; ++h) {
    const double reference = wifi_reference_joules(config, logs[h], phys[h]);
    EXPECT_NEAR(joules.at(h), reference, 1e-12 * reference) << "host " << h;
  }
  EXPECT_GT(logs[0].seconds[WifiPhyState::TX], 0.04);  // 4 MB at ~600 Mbit/s and more
  EXPECT_GT(logs[1].seconds[WifiPhyState::RX], 0.04);  // station 1 overheard it
  EXPECT_GT(joules.at(0), joules.at(1));               // transmitting draws more
  EXPECT_GT(joules.at(1), 2.0 * 0.21 * 3.7);           // the listener at least idled
}
TEST(WifiRadioEnergy, DefaultsAreNs3sAndAWiredServerHasNoRadio) {
  Sim sim({{"family", "wifi"}, {"server", "wired"}}, 3);
  ns3::Simulator::Stop(ns3::Seconds(1.0));
  ns3::Simulator::Run();
  const auto joules = sim.network->radio_joules();
  ASSERT_EQ(joules.size(), 2u);  // two stations; the wired server has no entry
  EXPECT_EQ(joules.count(2), 0u);
  // Idle (and a little association traffic) at 3 V x 0.273 A for 1 s: ns-3's defaults.
  for (std::size_t h = 0; h < 2; ++h) {
    EXPECT_GT(joules.at(h), 0.273 * 3.0 * 0.99);
    EXPECT_LT(joules.at(h), 0.380 * 3.0);
  }
}

// ---- LTE ----

struct Subframe {
  double ul_bits = 0;
  double dl_bits = 0;
};
using SubframeLog = std::map<std::int64_t, Subframe>;

void on_ul(SubframeLog* log, ns3::PhyTransmissionStatParameters p) {
  (*log)[p.m_timestamp].ul_bits += 8.0 * p.m_size;
}
void on_dl(SubframeLog* log, ns3::PhyReceptionStatParameters p) {
  (*log)[p.m_timestamp].dl_bits += 8.0 * p.m_size;
}

/// The UE power model over a record of subframes, from 0 to `end_ms`: each subframe with data
/// at active_base + the rate terms; between them the tail, then idle; a promotion before data
/// that comes after idle (or first).
double lte_reference_joules(const LteRadioEnergyConfig& c, const SubframeLog& log,
                            double end_ms) {
  double mw_ms = 0;
  double free_from = 0;
  bool connected = false;
  const auto gap = [&](double until) {
    double g = until - free_from;
    if (connected) {
      const double tail = std::min(g, c.tail_s * 1000);
      mw_ms += c.tail_mw * tail;
      g -= tail;
      if (g > 0) connected = false;
    }
    mw_ms += c.idle_mw * g;
  };
  for (const auto& [ms, s] : log) {
    gap(static_cast<double>(ms));
    if (!connected) mw_ms += c.promotion_mw * c.promotion_s * 1000;
    connected = true;
    mw_ms += c.active_base_mw + c.ul_mw_per_mbps * s.ul_bits / 1000 +
             c.dl_mw_per_mbps * s.dl_bits / 1000;
    free_from = static_cast<double>(ms + 1);
  }
  gap(end_ms);
  return mw_ms * 1e-6;
}

TEST(LteRadioEnergy, JoulesAreTheUePowerModelOverThePhyTraces) {
  // A short tail, so that the run sees connected, released and promoted again.
  const json radio = {{"tail", "300ms"}, {"idle_mw", 25.0}};
  const LteRadioEnergyConfig config = LteRadioEnergyConfig::from_json(radio, "r");
  Sim sim({{"family", "lte"}, {"radio_energy", radio}}, 3);  // UEs 0 and 1, remote server 2
  const auto& lte = dynamic_cast<const LteNetwork&>(*sim.network);
  std::vector<SubframeLog> logs(2);
  for (std::uint32_t i = 0; i < 2; ++i) {
    auto ue = ns3::DynamicCast<ns3::LteUeNetDevice>(lte.cell().ue_devices.Get(i));
    ue->GetPhy()->TraceConnectWithoutContext("UlPhyTransmission",
                                             ns3::MakeBoundCallback(&on_ul, &logs[i]));
    ue->GetPhy()->GetDlSpectrumPhy()->TraceConnectWithoutContext(
        "DlPhyReception", ns3::MakeBoundCallback(&on_dl, &logs[i]));
  }
  bulk(*sim.network, 0, 2, 1'000'000, 0.3);  // UE 0 uploads; UE 1 only camps
  bulk(*sim.network, 2, 0, 200'000, 1.4);    // then downloads, after a pause > tail

  for (double t : {0.9, 2.4}) {
    ns3::Simulator::Stop(ns3::Seconds(t) - ns3::Simulator::Now());
    ns3::Simulator::Run();
    const auto joules = sim.network->radio_joules();
    ASSERT_EQ(joules.size(), 2u);  // the remote server has no radio
    for (std::size_t h = 0; h < 2; ++h) {
      const double reference =
          lte_reference_joules(config, logs[h], ns3::Simulator::Now().GetSeconds() * 1000);
      EXPECT_NEAR(joules.at(h), reference, 1e-9 * reference) << "UE " << h << " at " << t << " s";
    }
  }
  const auto times = lte.cell().ue_energy[0]->state_times();
  EXPECT_EQ(times.active_subframes, logs[0].size());
  double ul_bits = 0, dl_bits = 0;
  for (const auto& [ms, s] : logs[0]) {
    ul_bits += s.ul_bits;
    dl_bits += s.dl_bits;
  }
  EXPECT_EQ(times.ul_bits, ul_bits);
  EXPECT_EQ(times.dl_bits, dl_bits);
  EXPECT_GT(ul_bits, 8.0 * 1'000'000);  // the upload went through the traced grants
  EXPECT_GT(dl_bits, 8.0 * 200'000);
  EXPECT_GE(times.promotions, 2u);       // the pause outlasted the tail
  EXPECT_GT(times.idle_s, 0.0);
  const auto joules = sim.network->radio_joules();
  EXPECT_GT(joules.at(0), 5.0 * joules.at(1));  // UE 1 mostly idled
}

// ---- What a megabyte costs ----

struct Completion {
  std::uint64_t target = 0;
  std::uint64_t received = 0;
  double at_s = -1;
};

void on_sink_rx(Completion* c, ns3::Ptr<const ns3::Packet> packet, const ns3::Address&) {
  c->received += packet->GetSize();
  if (c->at_s < 0 && c->received >= c->target) {
    c->at_s = ns3::Simulator::Now().GetSeconds();
    ns3::Simulator::Stop();
  }
}

/// Joules host `from`'s radio and an idle host's used while `bytes` went from `from` to `to`
/// (from `start` to the last byte), and the seconds it took.
struct TransferEnergy {
  double sender_j = 0;
  double idle_j = 0;
  double seconds = 0;
};

TransferEnergy transfer_energy(const Network& network, std::size_t from, std::size_t idle,
                               std::size_t to, std::uint64_t bytes, double start) {
  ns3::BulkSendHelper source("ns3::TcpSocketFactory",
                             ns3::InetSocketAddress(network.address(to), kPort));
  source.SetAttribute("MaxBytes", ns3::UintegerValue(bytes));
  source.Install(network.host(from)).Start(ns3::Seconds(start));
  ns3::PacketSinkHelper sink("ns3::TcpSocketFactory",
                             ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  Completion done;
  done.target = bytes;
  sink.Install(network.host(to)).Get(0)->TraceConnectWithoutContext(
      "Rx", ns3::MakeBoundCallback(&on_sink_rx, &done));
  ns3::Simulator::Stop(ns3::Seconds(start));
  ns3::Simulator::Run();
  const auto before = network.radio_joules();
  ns3::Simulator::Stop(ns3::Seconds(30));
  ns3::Simulator::Run();
  const auto after = network.radio_joules();
  return {after.at(from) - before.at(from), after.at(idle) - before.at(idle), done.at_s - start};
}

// Not a validation of the power figures (they are the cited models'), but what they give for a
// megabyte sent: printed for the docs, bounded so a broken hook-up (no energy, or energy not
// growing with the traffic) fails.
TEST(RadioEnergyMeasured, JoulesPerMegabyteSent) {
  {
    Sim sim({{"family", "wifi"}, {"standard", "ax"}, {"width_mhz", 80}, {"server", "ap"}}, 3);
    const TransferEnergy e = transfer_energy(*sim.network, 0, 1, 2, 20'000'000, 0.5);
    ASSERT_GT(e.seconds, 0);
    const double mb = 20.0;
    std::printf("[energy] 802.11ax 80 MHz, 5 m, 20 MB station -> AP in %.3f s: sender %.4f J "
                "(%.4f J/MB), idle station %.4f J, difference %.4f J/MB\n",
                e.seconds, e.sender_j, e.sender_j / mb, e.idle_j, (e.sender_j - e.idle_j) / mb);
    EXPECT_GT(e.sender_j, e.idle_j);
    // Between idling and transmitting the whole time (ns-3's 0.82 W and 1.14 W).
    EXPECT_GT(e.sender_j, 0.82 * e.seconds);
    EXPECT_LT(e.sender_j, 1.14 * e.seconds * 1.0001);
  }
  {
    Sim sim({{"family", "lte"}}, 3);  // UEs 0 and 1 at 100 m, the server behind the PGW
    const TransferEnergy e = transfer_energy(*sim.network, 0, 1, 2, 5'000'000, 0.5);
    ASSERT_GT(e.seconds, 0);
    const double mb = 5.0;
    std::printf("[energy] LTE 20 MHz, 100 m, 5 MB UE -> server in %.3f s: sender %.4f J "
                "(%.4f J/MB), idle UE %.4f J; the RRC tail after it adds up to %.2f J\n",
                e.seconds, e.sender_j, e.sender_j / mb, e.idle_j, 1.060 * 11.576);
    EXPECT_GT(e.sender_j, 10 * e.idle_j);
    EXPECT_GT(e.sender_j, 1.288 * e.seconds * 0.5);  // active in at least half the subframes
  }
}

// ---- Ethernet, keys, summary ----

TEST(RadioEnergy, EthernetHasNoRadio) {
  Sim sim({{"family", "ethernet"}}, 3);
  ns3::Simulator::Stop(ns3::Seconds(0.1));
  ns3::Simulator::Run();
  EXPECT_TRUE(sim.network->radio_joules().empty());
}

TEST(RadioEnergy, HybridReportsItsRadioHosts) {
  Sim sim({{"family", "hybrid"},
           {"groups", {{{"family", "ethernet"}, {"workers", 1}},
                       {{"family", "wifi"}, {"workers", 2}},
                       {{"family", "lte"}, {"workers", 1}}}}},
          5);
  ns3::Simulator::Stop(ns3::Seconds(0.5));
  ns3::Simulator::Run();
  const auto joules = sim.network->radio_joules();
  ASSERT_EQ(joules.size(), 3u);  // hosts 1, 2 (Wi-Fi) and 3 (LTE); not 0 (Ethernet), 4 (server)
  for (std::size_t h : {1u, 2u, 3u}) EXPECT_GT(joules.at(h), 0.0) << h;
}

TEST(RadioEnergy, BadValuesAreConfigErrorsAtTheirPath) {
  auto expect_error = [](const json& j, const std::string& path) {
    try {
      resolve_network(j, "network");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  };
  expect_error({{"family", "wifi"}, {"radio_energy", {{"tx_current_a", -0.1}}}},
               "network.radio_energy.tx_current_a");
  expect_error({{"family", "wifi"}, {"radio_energy", {{"supply_voltage", 0}}}},
               "network.radio_energy.supply_voltage");
  expect_error({{"family", "wifi"}, {"radio_energy", {{"tx_curent_a", 0.3}}}},
               "network.radio_energy.tx_curent_a");
  expect_error({{"family", "wifi"}, {"radio_energy", 3}}, "network.radio_energy");
  expect_error({{"family", "lte"}, {"radio_energy", {{"tail", "soon"}}}},
               "network.radio_energy.tail");
  expect_error({{"family", "lte"}, {"radio_energy", {{"ul_mw_per_mbps", "a lot"}}}},
               "network.radio_energy.ul_mw_per_mbps");
  expect_error({{"family", "hybrid"},
                {"groups", {{{"family", "wifi"}, {"workers", 1},
                             {"radio_energy", {{"idle_current_a", -1}}}}}}},
               "network.groups[0].radio_energy.idle_current_a");
  // An Ethernet group has no radio to describe.
  expect_error({{"family", "hybrid"},
                {"groups", {{{"family", "ethernet"}, {"workers", 1}, {"radio_energy", {}}}}}},
               "network.groups[0].radio_energy");
}

TEST(RadioEnergy, ResolvedKeysRoundTrip) {
  const json wifi = resolve_network({{"family", "wifi"}}, "network").to_json();
  EXPECT_EQ(wifi["radio_energy"]["tx_current_a"], 0.38);
  EXPECT_EQ(wifi["radio_energy"]["supply_voltage"], 3.0);
  const json lte = resolve_network({{"family", "lte"}}, "network").to_json();
  EXPECT_EQ(lte["radio_energy"]["tail"], "11.576s");
  EXPECT_EQ(lte["radio_energy"]["promotion"], "260.1ms");
  for (const json& once : {wifi, lte}) {
    EXPECT_EQ(resolve_network(once, "network").to_json(), once) << once.dump();
  }
}

TEST(RadioEnergySummary, FillsEachWorkersRadioJoules) {
  json summary = {{"energy",
                   {{"workers", {{{"worker", 0}, {"profile", "jetson-orin-nano"}, {"compute_j", 5.0}},
                                 {{"worker", 1}, {"profile", "raspberry-pi-5"}, {"compute_j", 4.0}}}},
                    {"total_j", 9.0}}}};
  add_radio_energy(summary, {{0, 1.5}, {2, 0.25}}, 2);  // worker 1 wired, a server with a radio
  const json& e = summary["energy"];
  EXPECT_EQ(e["workers"][0]["radio_j"], 1.5);
  EXPECT_EQ(e["workers"][0]["compute_j"], 5.0);  // the compute side is left as it was
  EXPECT_TRUE(e["workers"][1]["radio_j"].is_null());
  EXPECT_EQ(e["server"]["radio_j"], 0.25);
  EXPECT_EQ(e["radio_total_j"], 1.75);
  EXPECT_EQ(e["total_j"], 9.0);

  json bare = json::object();
  add_radio_energy(bare, {{0, 2.0}, {1, 3.0}}, 2);
  EXPECT_EQ(bare["energy"]["workers"], json::parse(R"([{"worker":0,"radio_j":2.0},
                                                         {"worker":1,"radio_j":3.0}])"));
  EXPECT_FALSE(bare["energy"].contains("server"));

  json ethernet = {{"steps", 3}};
  add_radio_energy(ethernet, {}, 2);
  EXPECT_FALSE(ethernet.contains("energy"));
}

}  // namespace
}  // namespace gradwire
