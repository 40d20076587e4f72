// LTE channel effects for edge studies: Nakagami fading on the radio links, several eNodeBs
// each serving its UEs, and A3-RSRP handover over X2 carrying a transfer from one cell to the
// next. Real bytes travel through Messenger, as in a run; each case simulates a few seconds.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <ns3/config.h>
#include <ns3/core-module.h>
#include <ns3/lte-ue-net-device.h>
#include <ns3/lte-ue-rrc.h>
#include <ns3/mobility-model.h>

#include "common/ConfigError.h"
#include "netmodels/HybridNetwork.h"
#include "netmodels/LteNetwork.h"
#include "netmodels/NetworkFactory.h"
#include "nodes/transport/Messenger.h"

namespace gradwire {
namespace {

using nlohmann::json;

// A network built from a `network` object, with a Messenger on every host, in a fresh
// simulation seeded with `seed`.
struct Rig {
  std::unique_ptr<Network> network;
  std::vector<ns3::Ptr<Messenger>> messengers;

  Rig(const json& object, std::size_t hosts, std::uint32_t seed = 1) {
    ns3::Simulator::Destroy();
    ns3::RngSeedManager::SetSeed(seed);
    ns3::RngSeedManager::SetRun(1);
    network = resolve_network(object, "network").build(hosts);
    messengers = Messenger::InstallOnHosts(*network);
  }
  ~Rig() { ns3::Simulator::Destroy(); }

  const LteCell& cell() const { return dynamic_cast<const LteNetwork&>(*network).cell(); }

  // Each pair (from, to) sends one message of `bytes` (random, seeded) at 0.5 s, after the UEs
  // attached; one pair per source. Returns each one's duration until it arrived intact (-1:
  // not before `limit`).
  std::vector<double> transfer(const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
                               std::size_t bytes, double limit = 30) {
    const double start = 0.5;
    std::map<std::uint32_t, double> arrival;
    std::map<std::uint32_t, std::vector<std::uint8_t>> sent;
    std::mt19937 rng(7);
    for (const auto& [from, to] : pairs) {
      auto& payload = sent[static_cast<std::uint32_t>(from)];
      payload.resize(bytes);
      for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
    }
    for (const auto& [from, to] : pairs) {
      messengers[to]->SetHandler([&](Message&& m) {
        EXPECT_EQ(m.payload, sent[m.source]) << "bytes differ from host " << m.source;
        arrival[m.source] = ns3::Simulator::Now().GetSeconds();
        if (arrival.size() == pairs.size()) ns3::Simulator::Stop();
      });
      const std::size_t source = from, sink = to;
      ns3::Simulator::Schedule(ns3::Seconds(start), [&, source, sink] {
        Message m;
        m.kind = 1;
        m.payload = sent[static_cast<std::uint32_t>(source)];
        messengers[source]->Send(static_cast<std::uint32_t>(sink), std::move(m));
      });
    }
    ns3::Simulator::Stop(ns3::Seconds(limit));
    ns3::Simulator::Run();
    std::vector<double> out;
    for (const auto& [from, to] : pairs) {
      auto it = arrival.find(static_cast<std::uint32_t>(from));
      out.push_back(it == arrival.end() ? -1.0 : it->second - start);
    }
    return out;
  }
};

double mbps(std::size_t bytes, double seconds) {
  return 8.0 * static_cast<double>(bytes) / seconds / 1e6;
}

// The cell a UE's RRC is connected to (ns-3 numbers the eNodeBs' cells from 1 in the order
// they were installed: eNodeB e serves cell e + 1).
std::uint16_t serving_cell(const LteCell& cell, std::size_t ue) {
  return ns3::DynamicCast<ns3::LteUeNetDevice>(cell.ue_devices.Get(static_cast<std::uint32_t>(ue)))
      ->GetRrc()
      ->GetCellId();
}

void expect_error(const json& object, const std::string& path) {
  try {
    resolve_network(object, "network");
    ADD_FAILURE() << "accepted " << object.dump();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), path) << e.what();
  }
}

TEST(LteChannelConfig, DefaultsResolveAndErrorsNameThePath) {
  const json lte = resolve_network({{"family", "lte"}}, "network").to_json();
  EXPECT_EQ(lte["fading"], "none");
  EXPECT_EQ(lte["nakagami_m"], 1.0);
  EXPECT_EQ(lte["handover"], "none");
  EXPECT_EQ(lte["hysteresis_db"], 3.0);
  EXPECT_EQ(lte["time_to_trigger"], "256ms");
  const json walk =
      resolve_network({{"family", "lte"},
                       {"impairments", {{"mobility", {{"model", "straight"}, {"speed_mps", 20},
                                                      {"heading_deg", 90}}}}}},
                      "network")
          .to_json();
  EXPECT_EQ(walk["impairments"]["mobility"],
            json({{"model", "straight"}, {"speed_mps", 20.0}, {"heading_deg", 90.0},
                  {"bounds_m", 50.0}}));
  expect_error({{"family", "lte"}, {"fading", "rician"}}, "network.fading");
  expect_error({{"family", "lte"}, {"nakagami_m", 0}}, "network.nakagami_m");
  expect_error({{"family", "lte"}, {"handover", "x2"}}, "network.handover");
  expect_error({{"family", "lte"}, {"hysteresis_db", 20}}, "network.hysteresis_db");
  expect_error({{"family", "lte"}, {"time_to_trigger", "10s"}}, "network.time_to_trigger");
  expect_error({{"family", "lte"},
                {"impairments", {{"mobility", {{"model", "random-walk"}, {"heading_deg", 0}}}}}},
               "network.impairments.mobility.heading_deg");
  expect_error({{"family", "hybrid"},
                {"groups", {{{"family", "lte"}, {"workers", 1}, {"fading", "yes"}}}}},
               "network.groups[0].fading");
}

// A straight walk is no random draw: the UE moves at its speed along its heading and stops at
// the edge of the square.
TEST(LteChannelConfig, StraightWalkStopsAtTheSquaresEdge) {
  const json net = {{"family", "lte"}, {"server", "edge"},
                    {"placement", {{"kind", "distance"}, {"distance_m", 10}}},
                    {"impairments", {{"mobility", {{"model", "straight"}, {"speed_mps", 20},
                                                   {"heading_deg", 0}, {"bounds_m", 50}}}}}};
  Rig rig(net, 2);
  auto mobility = rig.cell().ues.Get(0)->GetObject<ns3::MobilityModel>();
  std::vector<double> x;
  for (double t : {0.0, 1.0, 3.0}) {
    ns3::Simulator::Schedule(ns3::Seconds(t), [&] { x.push_back(mobility->GetPosition().x); });
  }
  ns3::Simulator::Stop(ns3::Seconds(3.1));
  ns3::Simulator::Run();
  ASSERT_EQ(x.size(), 3u);
  EXPECT_NEAR(x[0], 10.0, 1e-9);
  EXPECT_NEAR(x[1], 30.0, 1e-9);
  EXPECT_NEAR(x[2], 50.0, 1e-9);  // reached the edge after 2 s
}

// One UE at a mid distance, where the link adapts its modulation: Rayleigh fading (m = 1) on
// both directions costs goodput on average; the same seed repeats to the bit, another seed
// draws other fades.
TEST(LteFading, LowersGoodputAtMidDistanceAndRepeats) {
  const auto net = [](const std::string& fading) {
    return json{{"family", "lte"}, {"server", "edge"}, {"pathloss", "log-distance"},
                {"exponent", 2.6}, {"fading", fading},
                {"placement", {{"kind", "distance"}, {"distance_m", 300}}}};
  };
  const std::size_t bytes = 1'000'000;
  const auto run = [&](const std::string& fading, std::uint32_t seed) {
    Rig rig(net(fading), 2, seed);
    return rig.transfer({{0, 1}, {1, 0}}, bytes);  // uplink and downlink at once
  };
  const auto plain = run("none", 1);
  const auto faded = run("nakagami", 1);
  const auto again = run("nakagami", 1);
  const auto other = run("nakagami", 2);
  std::printf("[lte fading] 300 m, up/down: none %.1f/%.1f Mb/s, Rayleigh %.1f/%.1f, again "
              "%.1f/%.1f, seed 2 %.1f/%.1f\n",
              mbps(bytes, plain[0]), mbps(bytes, plain[1]), mbps(bytes, faded[0]),
              mbps(bytes, faded[1]), mbps(bytes, again[0]), mbps(bytes, again[1]),
              mbps(bytes, other[0]), mbps(bytes, other[1]));
  for (const auto& times : {plain, faded, other}) {
    ASSERT_GT(times[0], 0);
    ASSERT_GT(times[1], 0);
  }
  EXPECT_EQ(again, faded);
  EXPECT_NE(other, faded);
  // Lower on average over the seeds, in each direction.
  EXPECT_GT(faded[0] + other[0], 2 * plain[0]);
  EXPECT_GT(faded[1] + other[1], 2 * plain[1]);
}

// Three eNodeBs 500 m apart, two worker UEs each (UE i with eNodeB i mod 3): every UE is
// served by its own cell, and a ring of transfers, each from one cell to the next through the
// PGW, completes.
TEST(LteMultiCell, EveryEnodebServesItsUes) {
  const json net = {{"family", "lte"}, {"enbs", 3}, {"server", "edge"}};
  Rig rig(net, 7);
  const std::size_t bytes = 200'000;
  std::vector<std::pair<std::size_t, std::size_t>> ring;
  for (std::size_t i = 0; i < 6; ++i) ring.emplace_back(i, (i + 1) % 6);
  const auto times = rig.transfer(ring, bytes);
  ASSERT_EQ(rig.cell().enb_devices.GetN(), 3u);
  std::map<std::uint16_t, int> ues_per_cell;
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_GT(times[i], 0) << "UE " << i;
    EXPECT_EQ(serving_cell(rig.cell(), i), i % 3 + 1) << "UE " << i;
    ++ues_per_cell[serving_cell(rig.cell(), i)];
  }
  std::printf("[lte 3 eNodeBs] ring of 200 kB across cells: %.3f %.3f %.3f %.3f %.3f %.3f s\n",
              times[0], times[1], times[2], times[3], times[4], times[5]);
  EXPECT_EQ(ues_per_cell, (std::map<std::uint16_t, int>{{1, 2}, {2, 2}, {3, 2}}));
  EXPECT_TRUE(rig.network->event_counts().empty());  // handover off: nothing to report
}

// UEs that stand still next to their own eNodeB never meet A3's condition: with handover on
// (X2, measurements) every transfer takes exactly as long as with it off, and no handover is
// counted.
TEST(LteHandover, ChangesNothingForUesThatStayInTheirCell) {
  const auto run = [](const std::string& handover) {
    Rig rig({{"family", "lte"}, {"enbs", 2}, {"server", "remote"}, {"handover", handover}}, 5);
    const auto times = rig.transfer({{0, 4}, {1, 0}, {2, 3}, {4, 1}}, 300'000);
    return std::make_pair(times, rig.network->event_counts());
  };
  const auto [off, off_events] = run("none");
  const auto [on, on_events] = run("a3-rsrp");
  std::printf("[lte handover, static UEs] off: %.6f %.6f %.6f %.6f s; on: %.6f %.6f %.6f %.6f s\n",
              off[0], off[1], off[2], off[3], on[0], on[1], on[2], on[3]);
  for (double t : off) EXPECT_GT(t, 0);
  EXPECT_EQ(on, off);
  EXPECT_TRUE(off_events.empty());
  EXPECT_EQ(on_events, (std::map<std::string, std::uint64_t>{
                           {"handovers", 0}, {"handover_failures", 0}, {"radio_link_failures", 0}}));
}

// Two eNodeBs 200 m apart; the UE starts 80 m from the first and drives towards the second at
// 40 m/s while it sends to the server and the server sends to it. A3 hands it over near the
// middle, both transfers complete across the handover, and the network counts what ns-3's
// HandoverEndOk trace reported.
TEST(LteHandover, TransferCompletesAcrossAHandover) {
  const json net = {{"family", "lte"},
                    {"enbs", 2},
                    {"enb_spacing_m", 200},
                    {"server", "edge"},
                    {"handover", "a3-rsrp"},
                    {"placement", {{"kind", "distance"}, {"distance_m", 105}}},
                    {"impairments", {{"mobility", {{"model", "straight"}, {"speed_mps", 40},
                                                   {"heading_deg", 0}, {"bounds_m", 250}}}}}};
  Rig rig(net, 2);
  std::vector<double> handover_times;
  ns3::Config::ConnectWithoutContext(
      "/NodeList/*/DeviceList/*/LteUeRrc/HandoverEndOk",
      ns3::Callback<void, std::uint64_t, std::uint16_t, std::uint16_t>(
          [&](std::uint64_t, std::uint16_t, std::uint16_t) {
            handover_times.push_back(ns3::Simulator::Now().GetSeconds());
          }));
  const std::size_t bytes = 6'000'000;
  const auto times = rig.transfer({{0, 1}, {1, 0}}, bytes);
  const auto events = rig.network->event_counts();
  std::printf("[lte handover] up %.3f s, down %.3f s; handovers at", times[0], times[1]);
  for (double t : handover_times) std::printf(" %.3f", t);
  std::printf(" s; counted %llu\n", static_cast<unsigned long long>(events.at("handovers")));
  ASSERT_GT(times[0], 0);
  ASSERT_GT(times[1], 0);
  ASSERT_GE(handover_times.size(), 1u);
  // The handover happened while both transfers were under way (they start at 0.5 s).
  EXPECT_LT(handover_times.front(), 0.5 + std::min(times[0], times[1]));
  EXPECT_EQ(events.at("handovers"), handover_times.size());
  EXPECT_EQ(events.at("handover_failures"), 0u);
  EXPECT_EQ(serving_cell(rig.cell(), 0), 2);
}

// A hybrid network's LTE group hands over as the LTE family does and reports its count.
TEST(LteHandover, HybridGroupReportsItsHandovers) {
  const json net = {
      {"family", "hybrid"},
      {"groups", {{{"family", "lte"}, {"workers", 1}, {"enbs", 2}, {"enb_spacing_m", 200},
                   {"handover", "a3-rsrp"}, {"fading", "nakagami"}, {"nakagami_m", 4},
                   {"placement", {{"kind", "distance"}, {"distance_m", 105}}},
                   {"impairments", {{"mobility", {{"model", "straight"}, {"speed_mps", 40},
                                                  {"bounds_m", 250}}}}}},
                  {{"family", "ethernet"}, {"workers", 1}}}}};
  Rig rig(net, 3);
  const auto times = rig.transfer({{0, 2}}, 4'000'000);
  ASSERT_GT(times[0], 0);
  const auto events = rig.network->event_counts();
  std::printf("[hybrid lte handover] %.3f s, %llu handovers\n", times[0],
              static_cast<unsigned long long>(events.at("handovers")));
  EXPECT_GE(events.at("handovers"), 1u);
}

}  // namespace
}  // namespace gradwire
