// What the Wi-Fi radio channel does to traffic: Nakagami fading after the path loss (lower,
// more variable goodput at a mid distance; seeded, and drawing nothing the rest of the network
// draws), co-channel cells sharing one medium (a busy neighbour on the same channel slows a
// cell, one on another channel or without a position does not), and Minstrel-HT at work (a
// transfer completes, near the AP and far; a station moving away gets lower rates and less
// goodput; the shipped walking scenario carries traffic). Bulk TCP (ns-3's BulkSendApplication into a PacketSink)
// measures goodput; the station's PHY transmit trace shows which MCS the rate manager picked.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <ns3/ap-wifi-mac.h>
#include <ns3/bulk-send-helper.h>
#include <ns3/constant-position-mobility-model.h>
#include <ns3/core-module.h>
#include <ns3/inet-socket-address.h>
#include <ns3/mobility-model.h>
#include <ns3/node-list.h>
#include <ns3/packet-sink-helper.h>
#include <ns3/packet-sink.h>
#include <ns3/sta-wifi-mac.h>
#include <ns3/wifi-net-device.h>
#include <ns3/wifi-phy.h>
#include <ns3/wifi-psdu.h>

#include "common/ConfigError.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/WifiNetwork.h"

namespace gradwire {
namespace {

using nlohmann::json;

constexpr std::uint16_t kPort = 50000;

// A network from a `network` object in a fresh, seeded simulation.
struct Sim {
  std::unique_ptr<Network> network;

  Sim(const json& object, std::size_t hosts, std::uint32_t seed = 1) {
    ns3::Simulator::Destroy();
    ns3::RngSeedManager::SetSeed(seed);
    ns3::RngSeedManager::SetRun(1);
    network = resolve_network(object, "network").build(hosts);
  }
  ~Sim() { ns3::Simulator::Destroy(); }

  const WifiNetwork& wifi() const { return dynamic_cast<const WifiNetwork&>(*network); }
};

struct Transfer {
  std::vector<double> window_mbps;  ///< goodput of each whole window from the start
  double completed_s = -1;          ///< from the start to the last byte; -1: not within limit
  std::uint64_t received = 0;
};

struct SinkProgress {
  std::uint64_t target = 0;
  std::uint64_t total = 0;
  double completed_at = -1;
};

void on_sink_rx(SinkProgress* progress, ns3::Ptr<const ns3::Packet> packet, const ns3::Address&) {
  progress->total += packet->GetSize();
  if (progress->target > 0 && progress->completed_at < 0 && progress->total >= progress->target) {
    progress->completed_at = ns3::Simulator::Now().GetSeconds();
    ns3::Simulator::Stop();
  }
}

// Bulk TCP of `bytes` (0: for as long as the run lasts) from host `from` to host `to`, from
// `start`, run until it completes or `limit` seconds after the start; goodput sampled every
// `window` seconds.
Transfer bulk_transfer(const Network& network, std::size_t from, std::size_t to,
                       std::uint64_t bytes, double start, double window, double limit) {
  ns3::BulkSendHelper source("ns3::TcpSocketFactory",
                             ns3::InetSocketAddress(network.address(to), kPort));
  source.SetAttribute("MaxBytes", ns3::UintegerValue(bytes));
  source.Install(network.host(from)).Start(ns3::Seconds(start));
  ns3::PacketSinkHelper receiver("ns3::TcpSocketFactory",
                                 ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), kPort));
  auto sink = ns3::DynamicCast<ns3::PacketSink>(receiver.Install(network.host(to)).Get(0));
  SinkProgress progress;
  progress.target = bytes;
  sink->TraceConnectWithoutContext("Rx", ns3::MakeBoundCallback(&on_sink_rx, &progress));
  Transfer out;
  std::vector<std::uint64_t> samples;
  for (double t = start; t <= start + limit + 1e-9; t += window) {
    ns3::Simulator::Schedule(ns3::Seconds(t), [&samples, &progress] {
      samples.push_back(progress.total);
    });
  }
  ns3::Simulator::Stop(ns3::Seconds(start + limit));
  ns3::Simulator::Run();
  for (std::size_t i = 1; i < samples.size(); ++i) {
    out.window_mbps.push_back(8.0 * static_cast<double>(samples[i] - samples[i - 1]) / window / 1e6);
  }
  out.received = progress.total;
  if (progress.completed_at >= 0) out.completed_s = progress.completed_at - start;
  return out;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  const double m = mean(v);
  double sum = 0;
  for (double x : v) sum += (x - m) * (x - m);
  return v.size() < 2 ? 0.0 : std::sqrt(sum / static_cast<double>(v.size() - 1));
}

// The HT MCS of every data PSDU (over 1000 bytes) a PHY starts to send, with its time.
struct McsLog {
  std::vector<std::pair<double, int>> sent;
};

void on_psdu_begin(McsLog* log, ns3::WifiConstPsduMap psdus, ns3::WifiTxVector tx, double) {
  if (tx.GetModulationClass() != ns3::WIFI_MOD_CLASS_HT) return;
  if (psdus.empty() || psdus.begin()->second->GetSize() < 1000) return;
  log->sent.emplace_back(ns3::Simulator::Now().GetSeconds(), tx.GetMode().GetMcsValue());
}

void log_mcs(ns3::Ptr<ns3::NetDevice> device, McsLog* log) {
  auto wifi = ns3::DynamicCast<ns3::WifiNetDevice>(device);
  ASSERT_NE(wifi, nullptr);
  wifi->GetPhy()->TraceConnectWithoutContext("PhyTxPsduBegin",
                                             ns3::MakeBoundCallback(&on_psdu_begin, log));
}

/// Mean MCS of what was sent in [from, to).
double mean_mcs(const McsLog& log, double from, double to) {
  double sum = 0;
  int n = 0;
  for (const auto& [t, mcs] : log.sent) {
    if (t >= from && t < to) {
      sum += mcs;
      ++n;
    }
  }
  return n == 0 ? -1.0 : sum / n;
}

std::string joined(const std::vector<double>& v) {
  std::string out;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof buf, "%s%.1f", out.empty() ? "" : " ", x);
    out += buf;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Fading.

json mid_distance_cell(bool fading) {
  json net = {{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 20}, {"server", "ap"},
              {"placement", {{"kind", "distance"}, {"distance_m", 30}}}};
  if (fading) net["fading"] = "nakagami";  // nakagami_m 1: Rayleigh
  return net;
}

// At 30 m the path loss alone leaves 802.11n a steady SNR, and Ideal rate control settles on
// one MCS. Rayleigh fading spreads each frame's received power over tens of dB: frames sent at
// the MCS the last SNR suggested fail when the next draw is lower, so goodput falls and varies
// from one window to the next.
TEST(WifiFading, NakagamiLowersAndSpreadsGoodputAtAMidDistance) {
  std::vector<double> plain, faded;
  {
    Sim sim(mid_distance_cell(false), 2);
    plain = bulk_transfer(*sim.network, 0, 1, 0, 0.5, 0.1, 2.0).window_mbps;
  }
  {
    Sim sim(mid_distance_cell(true), 2);
    faded = bulk_transfer(*sim.network, 0, 1, 0, 0.5, 0.1, 2.0).window_mbps;
  }
  // The first windows hold slow start; compare the steady part.
  const std::vector<double> plain_steady(plain.begin() + 5, plain.end());
  const std::vector<double> faded_steady(faded.begin() + 5, faded.end());
  const double cv_plain = stddev(plain_steady) / mean(plain_steady);
  const double cv_faded = stddev(faded_steady) / mean(faded_steady);
  std::printf("[fading] 802.11n 20 MHz at 30 m, Mb/s per 100 ms:\n  none:     %s (mean %.1f, "
              "cv %.3f)\n  nakagami: %s (mean %.1f, cv %.3f)\n",
              joined(plain).c_str(), mean(plain_steady), cv_plain, joined(faded).c_str(),
              mean(faded_steady), cv_faded);
  ASSERT_GT(mean(faded_steady), 0);
  EXPECT_LT(mean(faded_steady), 0.8 * mean(plain_steady));
  EXPECT_GT(cv_faded, 2 * cv_plain);
}

TEST(WifiFading, TheSameSeedRepeatsBitForBitAndAnotherDiffers) {
  const auto run = [](std::uint32_t seed) {
    Sim sim(mid_distance_cell(true), 2, seed);
    return bulk_transfer(*sim.network, 0, 1, 0, 0.5, 0.05, 1.0).window_mbps;
  };
  const auto a = run(3), b = run(3), c = run(4);
  std::printf("[fading] seed 3: %s\n         again:  %s\n         seed 4: %s\n",
              joined(a).c_str(), joined(b).c_str(), joined(c).c_str());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// The fading streams come after every other block of the network's allocator: turning fading on
// moves nothing else (here: stations placed at random in a disc, with random-walk mobility).
TEST(WifiFading, FadingDrawsNothingTheRestOfTheNetworkDraws) {
  json net = {{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 20}, {"server", "ap"},
              {"placement", {{"kind", "disc"}, {"radius_m", 20}}},
              {"impairments", {{"mobility", {{"model", "random-walk"}, {"speed_mps", 3}}}}}};
  const auto positions = [](const json& object) {
    Sim sim(object, 4, 7);
    std::vector<double> out;
    ns3::Simulator::Stop(ns3::Seconds(1.5));
    ns3::Simulator::Run();
    for (std::size_t h = 0; h < 3; ++h) {
      const ns3::Vector p = sim.network->host(h)->GetObject<ns3::MobilityModel>()->GetPosition();
      out.push_back(p.x);
      out.push_back(p.y);
    }
    return out;
  };
  const auto without = positions(net);
  net["fading"] = "nakagami";
  net["nakagami_m"] = 2.5;
  EXPECT_EQ(positions(net), without);
}

// ---------------------------------------------------------------------------------------------
// Co-channel cells.

// Two Wi-Fi groups 25 m apart, one worker each, and a server. The second group's AP also sends
// a saturating UDP flow (the server -> a background station near that AP).
json two_cells(std::uint32_t neighbour_channel, bool neighbour_positioned) {
  json near = {{"family", "wifi"}, {"workers", 1}, {"standard", "n"}, {"width_mhz", 20},
               {"channel", 36}, {"ap_position", {0, 0}}};
  json neighbour = {{"family", "wifi"}, {"workers", 1}, {"standard", "n"}, {"width_mhz", 20},
                    {"channel", neighbour_channel},
                    {"impairments",
                     {{"background",
                       {{{"rate", "60Mbps"}, {"on", "1s"}, {"off", "0s"}, {"start", "0.3s"},
                         {"direction", "downlink"}, {"target", -1}, {"distance_m", 5}}}}}}};
  if (neighbour_positioned) neighbour["ap_position"] = {25, 0};
  return {{"family", "hybrid"}, {"groups", {near, neighbour}}};
}

// Every station is associated with the AP of its own group, found by network name.
void expect_stations_with_their_own_ap() {
  std::map<std::string, ns3::Mac48Address> ap_by_ssid;
  std::vector<ns3::Ptr<ns3::StaWifiMac>> stations;
  for (std::uint32_t n = 0; n < ns3::NodeList::GetNNodes(); ++n) {
    auto node = ns3::NodeList::GetNode(n);
    for (std::uint32_t d = 0; d < node->GetNDevices(); ++d) {
      auto device = ns3::DynamicCast<ns3::WifiNetDevice>(node->GetDevice(d));
      if (device == nullptr) continue;
      if (auto ap = ns3::DynamicCast<ns3::ApWifiMac>(device->GetMac())) {
        EXPECT_EQ(ap_by_ssid.count(ap->GetSsid().PeekString()), 0u) << "two APs share a name";
        ap_by_ssid[ap->GetSsid().PeekString()] = ap->GetAddress();
      }
      if (auto sta = ns3::DynamicCast<ns3::StaWifiMac>(device->GetMac())) stations.push_back(sta);
    }
  }
  ASSERT_EQ(ap_by_ssid.size(), 2u);
  for (const auto& sta : stations) {
    EXPECT_TRUE(sta->IsAssociated());
    ASSERT_EQ(ap_by_ssid.count(sta->GetSsid().PeekString()), 1u);
    EXPECT_EQ(sta->GetBssid(0), ap_by_ssid.at(sta->GetSsid().PeekString()));
  }
}

TEST(WifiCoChannel, ABusyNeighbourOnTheSameChannelSlowsACell) {
  const std::uint64_t bytes = 2'000'000;
  const auto time_of = [&](std::uint32_t channel, bool positioned) {
    Sim sim(two_cells(channel, positioned), 3);
    const Transfer t = bulk_transfer(*sim.network, 0, 2, bytes, 0.5, 0.1, 20.0);
    expect_stations_with_their_own_ap();
    return t.completed_s;
  };
  const double same = time_of(36, true);
  const double other = time_of(40, true);
  const double apart = time_of(36, false);
  std::printf("[co-channel] 2 MB from a cell whose neighbour 25 m away sends 60 Mb/s: same "
              "channel %.3f s, channel 40 %.3f s, same channel without a position %.3f s\n",
              same, other, apart);
  ASSERT_GT(same, 0);
  ASSERT_GT(other, 0);
  ASSERT_GT(apart, 0);
  EXPECT_GT(same, 1.5 * other);
  EXPECT_LT(other, 1.05 * apart);
  EXPECT_LT(apart, 1.05 * other);
}

TEST(WifiCoChannel, CellsOnOneMediumMustAgreeOnItsPropagation) {
  json net = two_cells(36, true);
  net["groups"][1]["exponent"] = 3.5;
  try {
    resolve_network(net, "network");
    ADD_FAILURE() << "accepted two propagation models on one medium";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "network.groups[1].exponent") << e.what();
  }
  net["groups"][1]["channel"] = 40;  // another medium: its own propagation is fine
  EXPECT_NO_THROW(resolve_network(net, "network"));
  net["groups"][1]["channel"] = 0;  // the band's default for 20 MHz is 36: the same medium
  EXPECT_THROW(resolve_network(net, "network"), ConfigError);
  net["groups"][1]["ap_position"] = nullptr;  // apart
  EXPECT_NO_THROW(resolve_network(net, "network"));
  net["groups"][1]["ap_position"] = {1, 2, 3};
  try {
    resolve_network(net, "network");
    ADD_FAILURE() << "accepted a position of three coordinates";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "network.groups[1].ap_position") << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Minstrel-HT.

json minstrel_cell(double distance_m) {
  return {{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 20}, {"server", "ap"},
          {"rate_control", "minstrel-ht"},
          {"placement", {{"kind", "distance"}, {"distance_m", distance_m}}}};
}

// Minstrel-HT samples its way to the top MCS next to the AP: a transfer completes at a goodput
// within [0.3, 0.9] of 802.11n's 65 Mb/s (as Ideal rate control is held to in
// networks_test), sent mostly at MCS 6-7.
TEST(MinstrelHt, ATransferCompletesAtAPlausibleGoodput) {
  const std::uint64_t bytes = 3'000'000;
  Sim sim(minstrel_cell(5), 2);
  McsLog log;
  log_mcs(sim.wifi().cell().station_devices.Get(0), &log);
  const Transfer t = bulk_transfer(*sim.network, 0, 1, bytes, 0.5, 0.1, 10.0);
  ASSERT_GT(t.completed_s, 0);
  const double goodput = 8.0 * static_cast<double>(bytes) / t.completed_s / 1e6;
  const double late = mean_mcs(log, 0.5 + t.completed_s / 2, 1e9);
  std::printf("[minstrel-ht] 802.11n 20 MHz at 5 m: 3 MB in %.3f s, %.1f Mb/s; mean MCS %.2f "
              "over the second half (%zu data PSDUs)\n",
              t.completed_s, goodput, late, log.sent.size());
  EXPECT_GT(goodput, 0.30 * 65);
  EXPECT_LT(goodput, 0.90 * 65);
  EXPECT_GT(late, 5.5);
}

// A station sending to the AP moves away from it, from 10 m to 65 m at 11 m/s (fast, so that
// a few simulated seconds span the range; Minstrel-HT re-evaluates every 50 ms, and the step
// between two of those is 0.55 m). The MCS Minstrel picks falls and goodput falls. Past ~70 m
// the AP's frames arrive below ns-3's preamble detection threshold (-82 dBm) and the station
// hears nothing: the walk ends before that.
TEST(MinstrelHt, AStationMovingAwayGetsLowerRatesAndLessGoodput) {
  Sim sim(minstrel_cell(10), 2);
  McsLog log;
  log_mcs(sim.wifi().cell().station_devices.Get(0), &log);
  auto mobility = sim.network->host(0)->GetObject<ns3::MobilityModel>();
  const ns3::Vector start = mobility->GetPosition();
  const ns3::Vector ap = sim.network->host(1)->GetObject<ns3::MobilityModel>()->GetPosition();
  const double speed = 11, t0 = 1.0, t1 = 6.0;  // 10 m -> 65 m
  for (double t = t0; t <= t1 + 1e-9; t += 0.01) {
    ns3::Simulator::Schedule(ns3::Seconds(t), [mobility, start, speed, t, t0] {
      mobility->SetPosition(ns3::Vector(start.x + speed * (t - t0), start.y, start.z));
    });
  }
  const Transfer walk = bulk_transfer(*sim.network, 0, 1, 0, 0.5, 0.5, 5.5);
  const double distance = ns3::CalculateDistance(mobility->GetPosition(), ap);
  std::vector<double> mcs_per_second;
  for (double t = 1.0; t < 6.0; t += 1.0) mcs_per_second.push_back(mean_mcs(log, t, t + 1));
  std::set<int> used;
  for (const auto& [t, mcs] : log.sent) used.insert(mcs);
  std::printf("[minstrel-ht] moving 10 -> %.0f m from 1 s to 6 s: Mb/s per 0.5 s %s; mean MCS "
              "per second %s; %zu MCS values used\n",
              distance, joined(walk.window_mbps).c_str(), joined(mcs_per_second).c_str(),
              used.size());
  ASSERT_EQ(walk.window_mbps.size(), 11u);
  EXPECT_NEAR(distance, 65, 0.5);
  // 1-1.5 s (10-15.5 m) against 5.5-6 s (59.5-65 m).
  EXPECT_LT(walk.window_mbps.back(), 0.5 * walk.window_mbps[1]);
  EXPECT_LT(mcs_per_second.back(), mcs_per_second.front() - 2);
  for (std::size_t i = 1; i < mcs_per_second.size(); ++i) {
    EXPECT_LE(mcs_per_second[i], mcs_per_second[i - 1] + 0.25) << "second " << i;
  }
  EXPECT_GE(used.size(), 4u);
}

// Where the walk above ends, Minstrel-HT still finds a rate that carries a transfer through.
TEST(MinstrelHt, ATransferCompletesWhereTheWalkEnds) {
  const std::uint64_t bytes = 1'000'000;
  Sim sim(minstrel_cell(65), 2);
  McsLog log;
  log_mcs(sim.wifi().cell().station_devices.Get(0), &log);
  const Transfer t = bulk_transfer(*sim.network, 0, 1, bytes, 0.5, 0.1, 20.0);
  std::printf("[minstrel-ht] 1 MB at 65 m: %.3f s, mean MCS %.2f\n", t.completed_s,
              mean_mcs(log, 0, 1e9));
  EXPECT_GT(t.completed_s, 0);
  EXPECT_LT(mean_mcs(log, 0, 1e9), 5);  // near the AP: 6.9
}

// The shipped scenario of walking stations under Minstrel-HT: its network carries every
// station's transfer to the AP while the stations move.
TEST(MinstrelHt, TheShippedWalkingScenarioCarriesTraffic) {
  const std::string path =
      std::string(GRADWIRE_SOURCE_DIR) + "/scenarios/wireless/wifi-n-walking.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const json scenario = json::parse(in);
  const json& net = scenario.at("network");
  ASSERT_EQ(net.at("rate_control"), "minstrel-ht");
  ASSERT_NE(net.at("impairments").at("mobility").at("model"), "static");
  const std::size_t workers = scenario.at("training").at("workers").get<std::size_t>();
  Sim sim(net, workers + 1);
  std::vector<ns3::Vector> before;
  for (std::size_t h = 0; h < workers; ++h) {
    before.push_back(sim.network->host(h)->GetObject<ns3::MobilityModel>()->GetPosition());
  }
  // Every worker sends 300 kB to the server at the AP at once.
  const std::uint64_t bytes = 300'000;
  std::vector<ns3::Ptr<ns3::PacketSink>> sinks;
  for (std::size_t h = 0; h < workers; ++h) {
    const auto port = static_cast<std::uint16_t>(kPort + h);
    ns3::BulkSendHelper source("ns3::TcpSocketFactory",
                               ns3::InetSocketAddress(sim.network->address(workers), port));
    source.SetAttribute("MaxBytes", ns3::UintegerValue(bytes));
    source.Install(sim.network->host(h)).Start(ns3::Seconds(0.5));
    ns3::PacketSinkHelper receiver("ns3::TcpSocketFactory",
                                   ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port));
    sinks.push_back(
        ns3::DynamicCast<ns3::PacketSink>(receiver.Install(sim.network->host(workers)).Get(0)));
  }
  ns3::Simulator::Stop(ns3::Seconds(8));
  ns3::Simulator::Run();
  double moved = 0;
  for (std::size_t h = 0; h < workers; ++h) {
    EXPECT_EQ(sinks[h]->GetTotalRx(), bytes) << "worker " << h;
    const ns3::Vector p = sim.network->host(h)->GetObject<ns3::MobilityModel>()->GetPosition();
    moved = std::max(moved, ns3::CalculateDistance(p, before[h]));
  }
  std::printf("[minstrel-ht] shipped walking scenario: %zu x 300 kB delivered; a station moved "
              "%.1f m in 8 s\n",
              workers, moved);
  EXPECT_GT(moved, 1.0);
}

}  // namespace
}  // namespace gradwire
