// Network families against reality: Ethernet transfers against the alpha-beta model with TCP's
// handshake and slow start, Wi-Fi goodput against the standards' MCS tables, LTE uplink
// goodput, and every impairment (loss, Gilbert-Elliott bursts, delay, rate cap, outages,
// background traffic, mobility). Real bytes travel through Messenger, as in a run.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <ns3/core-module.h>
#include <ns3/error-model.h>
#include <ns3/mgt-headers.h>
#include <ns3/packet-sink.h>
#include <ns3/traffic-control-helper.h>
#include <ns3/wifi-mac-header.h>
#include <ns3/wifi-mac.h>
#include <ns3/wifi-net-device.h>
#include <ns3/wifi-phy.h>
#include <ns3/wifi-psdu.h>

#include "common/ConfigError.h"
#include "netmodels/AlphaBetaModel.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/HybridNetwork.h"
#include "netmodels/NetemQueueDisc.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/WifiNetwork.h"
#include "nodes/transport/Messenger.h"

namespace gradwire {
namespace {

using nlohmann::json;

// A network built from a `network` object with a Messenger on every host.
struct Rig {
  std::unique_ptr<Network> network;
  std::vector<ns3::Ptr<Messenger>> messengers;

  Rig(const json& object, std::size_t hosts, std::uint32_t seed = 1)
      : Rig([&] { return resolve_network(object, "network").build(hosts); }, seed) {}
  // A network `build` makes (a family's constructor, say) in a fresh simulation.
  Rig(const std::function<std::unique_ptr<Network>()>& build, std::uint32_t seed) {
    ns3::Simulator::Destroy();
    ns3::RngSeedManager::SetSeed(seed);
    ns3::RngSeedManager::SetRun(1);
    network = build();
    messengers = Messenger::InstallOnHosts(*network);
  }
  ~Rig() { ns3::Simulator::Destroy(); }

  // One message of `bytes` (random, seeded) from `from` to `to`, sent at `start`.
  struct Flow {
    std::size_t from, to;
    double start;
  };

  // Runs every flow at once (one flow per source); returns each one's simulated duration, from
  // its start to its arrival (-1 when it never arrived before `limit`), and checks every byte.
  std::vector<double> run_flows(const std::vector<Flow>& flows, std::size_t bytes, double limit = 60) {
    std::map<std::uint32_t, double> arrival;
    std::map<std::uint32_t, std::vector<std::uint8_t>> sent;
    std::mt19937 rng(7);
    for (const Flow& f : flows) {
      auto& payload = sent[static_cast<std::uint32_t>(f.from)];
      payload.resize(bytes);
      for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
    }
    for (const Flow& f : flows) {
      messengers[f.to]->SetHandler([&](Message&& m) {
        EXPECT_EQ(m.payload, sent[m.source]) << "bytes differ from host " << m.source;
        arrival[m.source] = ns3::Simulator::Now().GetSeconds();
        if (arrival.size() == flows.size()) ns3::Simulator::Stop();
      });
      ns3::Simulator::Schedule(ns3::Seconds(f.start), [&, f] {
        Message m;
        m.kind = 1;
        m.payload = sent[static_cast<std::uint32_t>(f.from)];
        messengers[f.from]->Send(static_cast<std::uint32_t>(f.to), std::move(m));
      });
    }
    ns3::Simulator::Stop(ns3::Seconds(limit));
    ns3::Simulator::Run();
    std::vector<double> out;
    for (const Flow& f : flows) {
      auto it = arrival.find(static_cast<std::uint32_t>(f.from));
      out.push_back(it == arrival.end() ? -1.0 : it->second - f.start);
    }
    return out;
  }

  // Wi-Fi stations associate and LTE UEs attach in the first ~0.1 s (traffic before that is
  // dropped and TCP retries its SYN after 1 s): transfers start at 0.5 s by default.
  // Every source in `sources` sends `bytes` to `to` at `start`.
  std::vector<double> transfer(const std::vector<std::size_t>& sources, std::size_t to,
                               std::size_t bytes, double start = 0.5, double limit = 60) {
    std::vector<Flow> flows;
    for (std::size_t s : sources) flows.push_back({s, to, start});
    return run_flows(flows, bytes, limit);
  }
};

double mbps(std::size_t bytes, double seconds) { return 8.0 * static_cast<double>(bytes) / seconds / 1e6; }

double wall_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// ---------------------------------------------------------------------------------------------
// Ethernet against the analytic model.

// One TCP transfer of `bytes` over the two-hop star (host - switch - host): the alpha-beta model
// with beta = line rate x TCP payload efficiency ((MTU - 52) / (MTU + 38): Ethernet's header,
// FCS, preamble and inter-frame gap) and alpha = handshake (1 RTT) + one-way latency (half an
// RTT, plus the store-and-forward of one frame, whose last bit arrives 26 bytes after its IP
// packet's), plus the
// time the window leaves the link idle while it is below the bandwidth-delay product: each
// round trip costs RTT - window / rate. Window growth is TCP's as ns-3 (and Linux) run it:
// initial window 10 segments; slow start adds one segment per ACK, x1.5 per round trip with
// delayed ACKs (one per two segments, RFC 5681); CUBIC's HyStart leaves slow start when the
// ACK train spans half the RTT (window = BDP / 2); below the BDP CUBIC then grows like Reno,
// one segment per window of ACKs = 0.5 segment per round trip with delayed ACKs.
double analytic_tcp_transfer(double bytes, double rate_bps, double link_delay_s, std::uint32_t mtu) {
  const double mss = mtu - 52.0;
  const double frame_s = 8.0 * (mtu + 26.0) / rate_bps;  // until the frame's last bit
  const double efficiency = mss / (mtu + 38.0);
  const double rtt = 4 * link_delay_s + 2 * frame_s;    // data frame out, ACK back
  const double bdp = rate_bps * rtt / 8;
  const AlphaBetaModel model(1.0 * rtt + rtt / 2 + frame_s, rate_bps * efficiency);
  double penalty = 0, window = 10 * mss, sent = 0;
  while (8.0 * window / rate_bps < rtt && sent < bytes) {
    penalty += rtt - 8.0 * window / rate_bps;
    sent += window;
    window = window >= bdp / 2 ? window + 0.5 * mss : window * 1.5;
  }
  return model.transfer_time(bytes + 32 /* frame header */) + penalty;
}

TEST(EthernetReality, SingleTransferWithinTenPercentOfAlphaBeta) {
  struct Case { const char* rate; double bps; std::size_t bytes; };
  for (const Case c : {Case{"100Mbps", 1e8, 5'000'000}, Case{"1Gbps", 1e9, 20'000'000},
                       Case{"10Gbps", 1e10, 50'000'000}}) {
    Rig rig({{"family", "ethernet"}, {"rate", c.rate}, {"delay", "50us"}, {"mtu", 1500}}, 2);
    const double t = rig.transfer({0}, 1, c.bytes).at(0);
    const double expected = analytic_tcp_transfer(static_cast<double>(c.bytes), c.bps, 50e-6, 1500);
    std::printf("[ethernet] %s: %zu B in %.6f s (analytic %.6f s, error %+.2f%%)\n", c.rate,
                c.bytes, t, expected, 100 * (t - expected) / expected);
    EXPECT_NEAR(t / expected, 1.0, 0.10) << c.rate;
  }
}

// A host's NIC holds what its own TCP sends, as Linux keeps a socket's segments in the socket
// rather than drop them at its qdisc: with `queue` at 20 packets the 10 Gb/s sender's window
// (up to the 4 MB socket buffer) passes the bandwidth-delay product plus 20 frames early on,
// and a NIC of 20 packets lost whole bursts and paid 200 ms retransmission timeouts. The
// switch port, fed at its own rate by one sender, never fills.
TEST(EthernetReality, AHostNeverDropsWhatItsOwnTcpSends) {
  for (const bool offload : {false, true}) {
    Rig rig({{"family", "ethernet"}, {"rate", "10Gbps"}, {"delay", "50us"}, {"queue", 20},
             {"offload", offload}},
            2);
    const std::size_t bytes = 20'000'000;
    const double t = rig.transfer({0}, 1, bytes).at(0);
    const double expected = analytic_tcp_transfer(static_cast<double>(bytes), 1e10, 50e-6, 1500);
    EXPECT_NEAR(t / expected, 1.0, 0.15) << (offload ? "offload" : "per-frame") << ": " << t;
  }
}

// ---------------------------------------------------------------------------------------------
// Wi-Fi.

// Single station saturated TCP goodput, station 5 m from the AP, server at the AP, Ideal rate
// control, one spatial stream, 800 ns GI. The PHY rates are the top MCS of IEEE 802.11-2020
// Tables 19-27..19-30 (HT MCS 7: 65 / 135 Mb/s), 21-30.. (VHT MCS 9: 390 / 780 Mb/s at 80 /
// 160 MHz; MCS 8 at 20 MHz: 78 Mb/s) and 802.11ax-2021 Tables 27-55.. (HE MCS 11: 143.4 /
// 286.8 / 600.5 / 1201 Mb/s). TCP goodput over one station is 40-85 % of that PHY rate: MAC
// overhead (preamble, SIFS/backoff, block ack) and the reverse TCP ACK stream; ns-3's own
// examples (examples/wireless/{ht,vht,he}-wifi-network.cc) report 0.45-0.8 x PHY rate for
// single-station saturated traffic with A-MPDU. We accept [0.30, 0.90] x PHY rate.
TEST(WifiReality, SingleStationGoodputPerStandardAndWidth) {
  struct Case { const char* standard; int width; };
  for (const Case c : {Case{"n", 20}, Case{"n", 40}, Case{"ac", 80}, Case{"ac", 160},
                       Case{"ax", 20}, Case{"ax", 80}, Case{"ax", 160}}) {
    const json net = {{"family", "wifi"}, {"standard", c.standard}, {"width_mhz", c.width},
                      {"server", "ap"}, {"placement", {{"kind", "distance"}, {"distance_m", 5}}}};
    const double phy = WifiConfig::from_json(net, "network").peak_phy_rate_bps();
    const auto bytes = static_cast<std::size_t>(phy * 0.25 / 8);  // ~0.3-0.6 s of traffic
    const auto wall = std::chrono::steady_clock::now();
    Rig rig(net, 2);
    const double t = rig.transfer({0}, 1, bytes).at(0);
    ASSERT_GT(t, 0) << c.standard << c.width;
    const double goodput = mbps(bytes, t);
    std::printf("[wifi] 802.11%s %d MHz: %.1f Mb/s TCP goodput (PHY %.1f, ratio %.2f), "
                "%.2f s simulated, %.2f s wall\n",
                c.standard, c.width, goodput, phy / 1e6, goodput * 1e6 / phy, t, wall_since(wall));
    EXPECT_GT(goodput * 1e6, 0.30 * phy) << c.standard << c.width;
    EXPECT_LT(goodput * 1e6, 0.90 * phy) << c.standard << c.width;
  }
}

TEST(WifiReality, GoodputFallsWithDistance) {
  double previous = 1e18;
  for (double d : {5.0, 35.0, 55.0}) {
    const json net = {{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 20},
                      {"server", "ap"}, {"placement", {{"kind", "distance"}, {"distance_m", d}}}};
    Rig rig(net, 2);
    const double t = rig.transfer({0}, 1, 2'000'000).at(0);
    ASSERT_GT(t, 0) << d;
    const double goodput = mbps(2'000'000, t);
    std::printf("[wifi] 802.11n 20 MHz at %.0f m: %.1f Mb/s\n", d, goodput);
    EXPECT_LT(goodput, previous) << d;
    previous = goodput;
  }
}

TEST(WifiReality, GoodputFallsWithContendingStations) {
  const std::size_t bytes = 2'000'000;
  double single = 0;
  for (std::size_t stations : {1u, 4u}) {
    const json net = {{"family", "wifi"}, {"standard", "ax"}, {"width_mhz", 20},
                      {"server", "ap"}, {"placement", {{"kind", "distance"}, {"distance_m", 5}}}};
    Rig rig(net, stations + 1);
    std::vector<std::size_t> sources;
    for (std::size_t s = 0; s < stations; ++s) sources.push_back(s);
    const auto times = rig.transfer(sources, stations, bytes);
    double per_station = 0;
    for (double t : times) {
      ASSERT_GT(t, 0);
      per_station += mbps(bytes, t) / static_cast<double>(stations);
    }
    std::printf("[wifi] 802.11ax 20 MHz, %zu stations: %.1f Mb/s each, %.1f aggregate\n",
                stations, per_station, per_station * static_cast<double>(stations));
    if (stations == 1) single = per_station;
    else EXPECT_LT(per_station, 0.5 * single);
  }
}

// Two stations send to each other through the AP, the second a little later, so that a
// station's ADDBA request can meet the AP busy with the other's A-MPDUs: the response then
// arrives after ns-3.37's 1 ms default. The (seed, offset) cases below are ones where, with that
// default, the late agreement stranded both flows for good (3 of 200 swept offsets).
TEST(WifiReality, BulkTransfersBothWaysBetweenStationsComplete) {
  const std::size_t bytes = 1'000'000;
  const json net = {{"family", "wifi"}, {"standard", "n"}, {"band", "2.4GHz"}, {"width_mhz", 20}};
  for (std::uint32_t seed : {1u, 69u, 91u, 151u}) {
    const double offset_s = 0.00017 * static_cast<double>(seed);
    Rig rig(net, 2, seed);
    const auto times = rig.run_flows({{0, 1, 0.5}, {1, 0, 0.5 + offset_s}}, bytes, 30);
    for (std::size_t h : {0u, 1u}) {
      // 1 MB at 802.11n's 65 Mb/s shared both ways takes ~0.3 s; a stranded flow never ends.
      EXPECT_GT(times[h], 0) << "seed " << seed << ": host " << h << "'s message never arrived";
      EXPECT_LT(times[h], 2.0) << "seed " << seed << ", host " << h;
    }
  }
}

// Loses, at the AP, the Ack of each ADDBA response the AP sends until the AP's MAC has delivered
// a frame from a station: the station, which has the response, then sends its first MPDUs
// under the new agreement before the AP has moved its own agreement out of waiting.
class LostAddBaResponseAcks : public ns3::ErrorModel {
 public:
  explicit LostAddBaResponseAcks(ns3::Ptr<ns3::WifiNetDevice> ap) {
    ap->GetPhy()->TraceConnectWithoutContext(
        "PhyTxPsduBegin", ns3::MakeCallback(&LostAddBaResponseAcks::on_transmit, this));
    ap->GetMac()->TraceConnectWithoutContext(
        "MacRx", ns3::MakeCallback(&LostAddBaResponseAcks::on_delivered, this));
  }
  std::size_t lost = 0;

 private:
  void on_transmit(ns3::WifiConstPsduMap psdus, ns3::WifiTxVector, double) {
    response_on_air_ = false;
    const auto psdu = psdus.begin()->second;
    if (psdus.size() != 1 || psdu->GetNMpdus() != 1 || !psdu->GetHeader(0).IsAction()) return;
    ns3::Ptr<ns3::Packet> payload = psdu->GetPayload(0)->Copy();
    ns3::WifiActionHeader action;
    payload->RemoveHeader(action);
    response_on_air_ = action.GetCategory() == ns3::WifiActionHeader::BLOCK_ACK &&
                       action.GetAction().blockAck == ns3::WifiActionHeader::BLOCK_ACK_ADDBA_RESPONSE;
  }
  void on_delivered(ns3::Ptr<const ns3::Packet>) { delivered_ = true; }
  bool DoCorrupt(ns3::Ptr<ns3::Packet> packet) override {
    ns3::WifiMacHeader header;
    if (delivered_ || !response_on_air_ || packet->GetSize() != 14) return false;  // an Ack's size
    packet->PeekHeader(header);
    if (!header.IsAck()) return false;
    ++lost;
    return true;
  }
  void DoReset() override {}
  bool response_on_air_ = false;
  bool delivered_ = false;
};

// ns-3.37's recipient receives an originator's MPDUs outside a Block Ack agreement until the
// Ack of its ADDBA response arrives; the agreement then starts at the sequence number those
// MPDUs already used, and all later ones wait for them in its reorder buffer. Here the
// station's SYN is that first MPDU: without BlockAckRecipientSync the connection never opens
// (802.11ax sets up an agreement for every flow).
TEST(WifiReality, FlowCompletesWhenTheAddBaResponseAckIsLost) {
  const json net = {{"family", "wifi"}, {"standard", "ax"}, {"width_mhz", 80}, {"server", "ap"}};
  Rig rig(net, 2);
  auto ap = ns3::DynamicCast<ns3::WifiNetDevice>(rig.network->host(1)->GetDevice(0));
  ASSERT_NE(ap, nullptr);
  auto loss = ns3::CreateObject<LostAddBaResponseAcks>(ap);
  ap->GetPhy()->SetPostReceptionErrorModel(loss);
  const double t = rig.transfer({0}, 1, 100'000, 0.5, 10).at(0);
  ASSERT_GT(loss->lost, 0u) << "no ADDBA response Ack was lost: the case did not arise";
  // 100 kB at 802.11ax 80 MHz take a few ms after the handshake; a stalled flow never ends.
  EXPECT_GT(t, 0) << "the station's message never arrived";
  EXPECT_LT(t, 0.1);
}

// ---------------------------------------------------------------------------------------------
// LTE.

// One UE, 20 MHz (100 RBs), uplink to a remote host 10 ms behind the PGW. 3GPP TS 36.213's
// transport-block tables give at most ~75 Mb/s for a 20 MHz SISO uplink at 64QAM (ns-3's
// uplink AMC stops at 16QAM-class MCS 20 in practice, ~50 Mb/s); TCP over RLC AM with a
// 4-packet-per-TTI uplink grant and slow start over a 20+ ms RTT gets well below that. We
// accept 5-75 Mb/s (measured runs of lena-simple-epc-style uplinks report 10-40 Mb/s).
TEST(LteReality, UplinkGoodputOneUeTwentyMhz) {
  const json net = {{"family", "lte"}, {"server", "remote"},
                    {"placement", {{"kind", "distance"}, {"distance_m", 100}}}};
  const auto wall = std::chrono::steady_clock::now();
  Rig rig(net, 2);
  const std::size_t bytes = 4'000'000;
  const double t = rig.transfer({0}, 1, bytes).at(0);
  ASSERT_GT(t, 0);
  const double goodput = mbps(bytes, t);
  std::printf("[lte] 1 UE, 20 MHz uplink at 100 m: %.1f Mb/s (%.2f s simulated, %.1f s wall)\n",
              goodput, t, wall_since(wall));
  EXPECT_GT(goodput, 5.0);
  EXPECT_LT(goodput, 75.0);
}

TEST(LteReality, UplinkGoodputFallsWithDistance) {
  double previous = 1e18;
  for (double d : {100.0, 300.0, 500.0}) {
    const json net = {{"family", "lte"}, {"server", "edge"}, {"pathloss", "log-distance"},
                      {"exponent", 2.6},
                      {"placement", {{"kind", "distance"}, {"distance_m", d}}}};
    Rig rig(net, 2);
    const std::size_t bytes = 1'000'000;
    const double t = rig.transfer({0}, 1, bytes).at(0);
    ASSERT_GT(t, 0) << d;
    const double goodput = mbps(bytes, t);
    std::printf("[lte] uplink at %.0f m: %.1f Mb/s\n", d, goodput);
    EXPECT_LT(goodput, previous) << d;
    previous = goodput;
  }
}

// ---------------------------------------------------------------------------------------------
// Impairments.

json lossy_ethernet(const json& impairments) {
  return {{"family", "ethernet"}, {"rate", "100Mbps"}, {"delay", "1ms"},
          {"impairments", impairments}};
}

TEST(Impairments, TcpTimeRisesMonotonicallyWithLoss) {
  // Mean over seeds: at 0.1 % a single 2 MB transfer may lose nothing at all.
  double previous = 0;
  for (double loss : {0.0, 0.001, 0.01, 0.05}) {
    const json imp = loss == 0 ? json::object()
                               : json{{"loss", {{"model", "uniform"}, {"rate", loss}}}};
    double mean = 0;
    const int seeds = 8;
    for (int seed = 1; seed <= seeds; ++seed) {
      Rig rig(lossy_ethernet(imp), 2, static_cast<std::uint32_t>(seed));
      const double t = rig.transfer({0}, 1, 4'000'000, 0.5, 600).at(0);
      ASSERT_GT(t, 0) << loss;
      mean += t / seeds;
    }
    std::printf("[loss] uniform %.3f: 4 MB over 100 Mb/s in %.4f s (mean of 8 seeds)\n", loss,
                mean);
    EXPECT_GT(mean, previous) << loss;
    previous = mean;
  }
}

// The loss models drop the configured fraction: a UDP background flow through an impaired
// link (no retransmission) counts it. 3 sigma of a binomial over the packets sent.
TEST(Impairments, LossModelsDropTheConfiguredFraction) {
  const json uniform = {{"model", "uniform"}, {"rate", 0.05}};
  const json bursty = {{"model", "gilbert-elliott"}, {"p", 0.02}, {"r", 0.2},
                       {"loss_good", 0.0}, {"loss_bad", 0.5}};
  for (const json& loss : {uniform, bursty}) {
    const json imp = {{"hosts", {0}},
                      {"loss", loss},
                      {"background", {{{"rate", "8Mbps"}, {"on", "10s"}, {"off", "0s"},
                                        {"packet_bytes", 1000}, {"target", 0},
                                        {"direction", "downlink"}}}}};
    Rig rig(lossy_ethernet(imp), 2);
    ns3::Simulator::Stop(ns3::Seconds(5));
    ns3::Simulator::Run();
    const auto* eth = dynamic_cast<const EthernetNetwork*>(rig.network.get());
    ASSERT_NE(eth, nullptr);
    std::uint64_t lost = 0, passed = 0;
    for (const auto& q : eth->netems()) {
      lost += q->lost();
      passed += q->passed();
    }
    const double n = static_cast<double>(lost + passed);
    const double expected = ImpairmentsConfig::from_json(imp, "i", false).loss.mean_loss();
    const double observed = static_cast<double>(lost) / n;
    // Bursts correlate losses: widen the tolerance by the mean burst length (1 / r).
    const double burst = loss["model"] == "uniform" ? 1.0 : 1.0 / 0.2;
    const double sigma = std::sqrt(expected * (1 - expected) / n * burst);
    std::printf("[loss] %s: %.4f lost of %.0f packets (configured %.4f, 3 sigma %.4f)\n",
                loss["model"].get<std::string>().c_str(), observed, n, expected, 3 * sigma);
    EXPECT_NEAR(observed, expected, 3 * sigma);
    EXPECT_GT(n, 4000);
  }
}

TEST(Impairments, OutageDelaysButDoesNotCorruptATransfer) {
  Rig clean(lossy_ethernet(json::object()), 2);
  const double base = clean.transfer({0}, 1, 2'000'000).at(0);
  Rig cut(lossy_ethernet({{"outages", {{{"down", "0.2s"}, {"up", "0.7s"}}}}}), 2);
  const double t = cut.transfer({0}, 1, 2'000'000).at(0);  // payload checked inside
  std::printf("[outage] 2 MB: %.3f s clean, %.3f s with a 0.5 s outage\n", base, t);
  ASSERT_GT(t, 0);
  EXPECT_GT(t, base + 0.5);
  EXPECT_LT(t, base + 0.5 + 4.0);  // TCP's RTO backoff after the link returns
}

TEST(Impairments, DelayJitterAndRateCapAreApplied) {
  Rig base(lossy_ethernet(json::object()), 2);
  const double t0 = base.transfer({0}, 1, 100).at(0);
  Rig slow(lossy_ethernet({{"delay", "20ms"}, {"jitter", "2ms"}}), 2);
  const double t1 = slow.transfer({0}, 1, 100).at(0);
  // Small message: handshake (1 RTT) + one way; each direction of each impaired link gets
  // 20 ms +- 2 ms, and host 0 and 1 are both impaired: 3 one-way trips x 2 links x ~20 ms.
  std::printf("[delay] 100 B: %.4f s plain, %.4f s with 20 ms +- 2 ms per direction\n", t0, t1);
  EXPECT_NEAR(t1 - t0, 3 * 2 * 0.020, 0.015);

  Rig capped({{"family", "ethernet"}, {"rate", "1Gbps"},
              {"impairments", {{"rate_cap", "20Mbps"}}}}, 2);
  const std::size_t bytes = 2'000'000;
  const double t2 = capped.transfer({0}, 1, bytes).at(0);
  std::printf("[cap] 2 MB through a 20 Mb/s cap: %.3f s (%.1f Mb/s)\n", t2, mbps(bytes, t2));
  EXPECT_NEAR(mbps(bytes, t2), 20.0 * 1448 / 1500, 2.0);
}

TEST(Impairments, BackgroundTrafficSlowsAWifiTransfer) {
  const json quiet = {{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 20}, {"server", "ap"}};
  json busy = quiet;
  busy["impairments"] = {{"background", {{{"rate", "30Mbps"}, {"on", "1s"}, {"off", "0s"},
                                          {"distance_m", 5}}}}};
  Rig a(quiet, 2);
  const double t_quiet = a.transfer({0}, 1, 2'000'000).at(0);
  Rig b(busy, 2);
  const double t_busy = b.transfer({0}, 1, 2'000'000).at(0);
  std::printf("[background] 802.11n 2 MB: %.3f s quiet, %.3f s with 30 Mb/s on/off UDP\n",
              t_quiet, t_busy);
  ASSERT_GT(t_busy, 0);
  EXPECT_GT(t_busy, 1.3 * t_quiet);
}

TEST(Impairments, MobilityIsSeeded) {
  const json net = {{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 20}, {"server", "ap"},
                    {"placement", {{"kind", "disc"}, {"radius_m", 20}}},
                    {"impairments", {{"mobility", {{"model", "random-waypoint"},
                                                   {"speed_mps", 20}, {"bounds_m", 30}}}}}};
  auto run = [&](std::uint32_t seed) {
    Rig rig(net, 3, seed);
    return rig.transfer({0, 1}, 2, 3'000'000);
  };
  const auto a = run(1), b = run(1), c = run(2);
  std::printf("[mobility] seed 1: %.4f %.4f, again: %.4f %.4f, seed 2: %.4f %.4f\n", a[0], a[1],
              b[0], b[1], c[0], c[1]);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Every random part of a network draws from streams its own StreamAllocator numbers from 0, not
// from a counter the whole process shares: networks built one after the other in one process
// with the same seed draw the same values, whether built through resolve_network or by a
// family's constructor directly, and whatever was built before them.
TEST(Impairments, NetworksBuiltOneAfterAnotherWithTheSameSeedRepeat) {
  const json lossy = lossy_ethernet(
      {{"loss", {{"model", "gilbert-elliott"}, {"p", 0.002}, {"r", 0.5}}},
       {"delay", "2ms"},
       {"jitter", "1ms"},
       {"background", {{{"rate", "10Mbps"}, {"on", "50ms"}, {"off", "50ms"},
                        {"distribution", "exponential"}, {"start", "0.4s"}}}}});
  const json mobile = {{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 20}, {"server", "ap"},
                       {"placement", {{"kind", "disc"}, {"radius_m", 20}}},
                       {"impairments", {{"loss", {{"model", "uniform"}, {"rate", 0.01}}},
                                        {"mobility", {{"model", "random-walk"},
                                                      {"speed_mps", 10}, {"bounds_m", 30}}}}}};
  struct Outcome {
    std::vector<double> times;
    std::uint64_t lost = 0;
  };
  const auto lost = [](const std::vector<ns3::Ptr<NetemQueueDisc>>& netems) {
    std::uint64_t n = 0;
    for (const auto& q : netems) n += q->lost();
    return n;
  };
  const auto ethernet = [&](bool direct) {
    Rig rig(
        [&]() -> std::unique_ptr<Network> {
          if (!direct) return resolve_network(lossy, "network").build(2);
          return std::make_unique<EthernetNetwork>(
              EthernetConfig::from_json(lossy, "network"), 2);
        },
        5);
    Outcome out;
    out.times = rig.transfer({0}, 1, 2'000'000);
    out.lost = lost(dynamic_cast<const EthernetNetwork&>(*rig.network).netems());
    return out;
  };
  const auto wifi = [&]() {
    Rig rig(
        [&]() -> std::unique_ptr<Network> {
          return std::make_unique<WifiNetwork>(WifiConfig::from_json(mobile, "network"), 3);
        },
        5);
    Outcome out;
    out.times = rig.transfer({0, 1}, 2, 1'000'000);
    out.lost = lost(dynamic_cast<const WifiNetwork&>(*rig.network).netems());
    return out;
  };
  const Outcome first = ethernet(true);
  const Outcome wifi_first = wifi();
  const Outcome again = ethernet(true);
  const Outcome resolved = ethernet(false);
  const Outcome wifi_again = wifi();
  std::printf("[streams] lossy ethernet: %.6f s, %llu lost; again %.6f s, %llu lost; through "
              "resolve_network %.6f s. wifi: %.6f %.6f s, again %.6f %.6f s\n",
              first.times[0], static_cast<unsigned long long>(first.lost), again.times[0],
              static_cast<unsigned long long>(again.lost), resolved.times[0],
              wifi_first.times[0], wifi_first.times[1], wifi_again.times[0],
              wifi_again.times[1]);
  ASSERT_GT(first.times[0], 0);
  EXPECT_GT(first.lost, 0u);
  EXPECT_EQ(again.times, first.times);
  EXPECT_EQ(again.lost, first.lost);
  EXPECT_EQ(resolved.times, first.times);
  EXPECT_EQ(resolved.lost, first.lost);
  ASSERT_GT(wifi_first.times[0], 0);
  ASSERT_GT(wifi_first.times[1], 0);
  EXPECT_EQ(wifi_again.times, wifi_first.times);
  EXPECT_EQ(wifi_again.lost, wifi_first.lost);
}

// NetemQueueDisc is configured as any ns-3 object is: through its attributes, which the
// builders set from the scenario's `impairments`.
TEST(Impairments, NetemQueueDiscIsConfiguredThroughAttributes) {
  ns3::ObjectFactory factory;
  factory.SetTypeId("gradwire::NetemQueueDisc");
  factory.Set("LossModel", ns3::StringValue("gilbert-elliott"));
  factory.Set("GoodToBad", ns3::DoubleValue(0.02));
  factory.Set("DelaySeconds", ns3::DoubleValue(0.03));
  factory.Set("Limit", ns3::UintegerValue(50));
  const auto made = factory.Create<NetemQueueDisc>();
  ns3::EnumValue model;
  made->GetAttribute("LossModel", model);
  EXPECT_EQ(model.Get(), NetemQueueDisc::kGilbertElliottLoss);
  ns3::DoubleValue number;
  made->GetAttribute("GoodToBad", number);
  EXPECT_EQ(number.Get(), 0.02);
  made->GetAttribute("BadToGood", number);
  EXPECT_EQ(number.Get(), 0.25);  // the default, netem's
  ns3::UintegerValue limit;
  made->GetAttribute("Limit", limit);
  EXPECT_EQ(limit.Get(), 50u);

  // Set through the traffic-control helper on host 0's device: what host 0 sends waits 50 ms
  // (its SYN, then its data after the SYN-ACK), what it receives does not.
  const json plain = {{"family", "ethernet"}, {"offload", false}};
  Rig base(plain, 2);
  const double t0 = base.transfer({0}, 1, 100).at(0);
  Rig delayed(plain, 2);
  const auto device = delayed.network->host(0)->GetDevice(1);
  ns3::TrafficControlHelper tc;  // the star's builder removed the device's own queue disc
  tc.SetRootQueueDisc("gradwire::NetemQueueDisc", "DelaySeconds", ns3::DoubleValue(0.05));
  const auto netem = ns3::DynamicCast<NetemQueueDisc>(tc.Install(device).Get(0));
  ASSERT_NE(netem, nullptr);
  const double t1 = delayed.transfer({0}, 1, 100).at(0);
  std::printf("[netem] 100 B: %.4f s plain, %.4f s with DelaySeconds 0.05 on host 0\n", t0, t1);
  EXPECT_NEAR(t1 - t0, 2 * 0.05, 1e-3);
  EXPECT_GT(netem->passed(), 0u);

  // The builders set every attribute from the scenario's impairments.
  Rig impaired(lossy_ethernet({{"loss", {{"model", "uniform"}, {"rate", 0.02}}},
                               {"delay", "20ms"},
                               {"jitter", "2ms"},
                               {"rate_cap", "20Mbps"},
                               {"queue", 77}}),
               2);
  const auto& netems = dynamic_cast<const EthernetNetwork&>(*impaired.network).netems();
  ASSERT_FALSE(netems.empty());
  for (const auto& q : netems) {
    q->GetAttribute("LossModel", model);
    EXPECT_EQ(model.Get(), NetemQueueDisc::kUniformLoss);
    q->GetAttribute("LossRate", number);
    EXPECT_EQ(number.Get(), 0.02);
    q->GetAttribute("DelaySeconds", number);
    EXPECT_EQ(number.Get(), 0.02);
    q->GetAttribute("JitterSeconds", number);
    EXPECT_EQ(number.Get(), 0.002);
    q->GetAttribute("RateCapBps", number);
    EXPECT_EQ(number.Get(), 20e6);
    q->GetAttribute("Limit", limit);
    EXPECT_EQ(limit.Get(), 77u);
  }
}

// The model classes log through ns-3: their components are registered, print nothing unless
// enabled (NS_LOG, or LogComponentEnable), and say what they do when they are.
TEST(Impairments, ModelClassesLogOnlyWhenEnabled) {
  const auto* components = ns3::LogComponent::GetComponentList();
  for (const char* name : {"NetemQueueDisc", "OffloadNetDevice", "OffloadChannel",
                           "OffloadSwitch", "OffloadTcpSocket", "HostTcpSocketFactory",
                           "SmallQueuesTcpSocket"}) {
    ASSERT_EQ(components->count(name), 1u) << name << " is not a log component";
    EXPECT_FALSE(components->at(name)->IsEnabled(ns3::LOG_ERROR)) << name;
  }
  const json lossy = lossy_ethernet({{"loss", {{"model", "uniform"}, {"rate", 0.05}}}});
  const auto logged = [&](bool enable) {
    std::ostringstream captured;
    std::streambuf* clog = std::clog.rdbuf(captured.rdbuf());
    if (enable) ns3::LogComponentEnable("NetemQueueDisc", ns3::LOG_LEVEL_LOGIC);
    Rig rig(lossy, 2);
    rig.transfer({0}, 1, 200'000);
    ns3::LogComponentDisable("NetemQueueDisc", ns3::LOG_LEVEL_ALL);
    std::clog.rdbuf(clog);
    return captured.str();
  };
  EXPECT_EQ(logged(false), "");
  EXPECT_NE(logged(true).find("netem loss"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Hybrid edge and validation.

TEST(Hybrid, WorkersOnThreeFamiliesReachOneServer) {
  const json net = {{"family", "hybrid"},
                    {"groups", {{{"family", "wifi"}, {"workers", 2}, {"standard", "ax"}},
                                {{"family", "lte"}, {"workers", 1}},
                                {{"family", "ethernet"}, {"workers", 1}, {"rate", "1Gbps"}}}}};
  Rig rig(net, 5);
  const auto times = rig.transfer({0, 1, 2, 3}, 4, 300'000);
  std::printf("[hybrid] 300 kB to the server: wifi %.3f %.3f, lte %.3f, ethernet %.3f s\n",
              times[0], times[1], times[2], times[3]);
  for (double t : times) EXPECT_GT(t, 0);
  // And back, server -> each worker, and worker <-> worker across families (a ring's path).
  Rig again(net, 5);
  EXPECT_GT(again.transfer({4}, 2, 100'000).at(0), 0);
  Rig ring(net, 4);  // no server: 4 hosts = 4 workers
  for (double t : ring.transfer({0, 2, 3}, 1, 100'000)) EXPECT_GT(t, 0);
}

TEST(NetworkConfig, ResolveFillsDefaultsAndIsIdempotent) {
  std::vector<json> inputs;
  inputs.push_back({{"family", "wifi"}});
  inputs.push_back({{"family", "lte"}, {"server", "edge"}});
  inputs.push_back({{"family", "ethernet"},
                    {"impairments", {{"loss", {{"model", "gilbert-elliott"}}}}}});
  inputs.push_back({{"family", "hybrid"},
                    {"groups", {{{"family", "wifi"}, {"workers", 2}},
                                {{"family", "lte"}, {"workers", 1}}}}});
  for (const json& in : inputs) {
    const json once = resolve_network(in, "network").to_json();
    EXPECT_EQ(resolve_network(once, "network").to_json(), once) << once.dump();
  }
  const json lte = resolve_network({{"family", "lte"}, {"server", "edge"}}, "network").to_json();
  EXPECT_EQ(lte["backhaul_delay"], "100us");
  EXPECT_EQ(lte["ul_bandwidth"], 100);
  const json wifi =
      resolve_network({{"family", "wifi"}, {"standard", "n"}}, "network").to_json();
  EXPECT_EQ(wifi["width_mhz"], 20);
  EXPECT_EQ(wifi["impairments"]["mobility"]["model"], "static");
}

TEST(NetworkConfig, ErrorsNameThePath) {
  auto expect_error = [](const json& j, const std::string& path) {
    try {
      resolve_network(j, "network");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  };
  expect_error({{"family", "wifi"}, {"standard", "ac"}, {"band", "2.4GHz"}}, "network.band");
  expect_error({{"family", "wifi"}, {"standard", "n"}, {"width_mhz", 80}}, "network.width_mhz");
  expect_error({{"family", "wifi"}, {"rate_control", "constant"}, {"mcs", 12}}, "network.mcs");
  expect_error({{"family", "wifi"}, {"distance_m", 5}}, "network.distance_m");
  expect_error({{"family", "lte"}, {"ul_bandwidth", 30}}, "network.ul_bandwidth");
  expect_error({{"family", "lte"}, {"scheduler", "fifo"}}, "network.scheduler");
  expect_error({{"family", "ethernet"}, {"impairments", {{"mobility", json::object()}}}},
               "network.impairments.mobility");
  expect_error({{"family", "ethernet"}, {"impairments", {{"loss", {{"model", "uniform"},
                                                                  {"rate", 1.5}}}}}},
               "network.impairments.loss.rate");
  expect_error({{"family", "ethernet"},
                {"impairments", {{"outages", {{{"down", "2s"}, {"up", "1s"}}}}}}},
               "network.impairments.outages[0].up");
  expect_error({{"family", "hybrid"},
                {"groups", {{{"family", "wifi"}, {"workers", 2}},
                            {{"family", "lte"}, {"workers", 1}, {"distance_m", 5}}}}},
               "network.groups[1].distance_m");
  expect_error({{"family", "hybrid"},
                {"groups", {{{"family", "wifi"}, {"workers", 2},
                             {"placement", {{"kind", "distance"}, {"distance_m", -5}}}}}}},
               "network.groups[0].placement.distance_m");
  expect_error({{"family", "hybrid"}, {"groups", {{{"family", "lte"}}}}},
               "network.groups[0].workers");
  expect_error({{"family", "hybrid"}, {"groups", json::array()}}, "network.groups");
  // Worker count mismatch is found when the network is built for the scenario.
  ns3::Simulator::Destroy();
  EXPECT_THROW(resolve_network({{"family", "hybrid"},
                                {"groups", {{{"family", "ethernet"}, {"workers", 2}}}}},
                               "network")
                   .build(5),
               ConfigError);
  ns3::Simulator::Destroy();
}

}  // namespace
}  // namespace gradwire
