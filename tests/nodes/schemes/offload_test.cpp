// Segment offload (`network.offload`) keeps the simulated timeline of per-frame simulation
// to within 1 % (netmodels/README.md) while bulk flows hand ns-3 super-segments of up to 44 frames.
// tests/bench/offload_accuracy_bench prints the whole grid.
#include <cmath>
#include <cstdlib>
#include <utility>

#include <gtest/gtest.h>
#include <ns3/channel.h>
#include <ns3/config.h>
#include <ns3/ipv4-l3-protocol.h>
#include <ns3/node.h>
#include <ns3/packet.h>

#include "CollectiveTiming.h"
#include "TimingSpread.h"

namespace gradwire {
namespace {

double relative_error(const std::string& kind, int workers, std::int64_t bytes, double rate_bps) {
  EthernetConfig config;
  config.rate_bps = rate_bps;
  config.offload = false;
  const double per_frame = testing::time_collective(kind, workers, bytes, config).simulated_s;
  config.offload = true;
  const double offload = testing::time_collective(kind, workers, bytes, config).simulated_s;
  EXPECT_GT(per_frame, 0);
  return (offload - per_frame) / per_frame;
}

TEST(Offload, MessagesWithinTheInitialWindowKeepPerFrameTiming) {
  // Latency, framing and cut-through forwarding: one segment's frames take the per-frame
  // path's time to the nanosecond scale.
  for (const double rate : {1e9, 1e10, 2.5e10}) {
    for (const std::int64_t bytes : {1000, 10000}) {
      EXPECT_LT(std::fabs(relative_error("transfer", 2, bytes, rate)), 1e-4)
          << bytes << " B at " << rate / 1e9 << " Gb/s";
    }
    EXPECT_LT(std::fabs(relative_error("ring", 8, 4000, rate)), 0.01) << rate / 1e9 << " Gb/s";
    EXPECT_LT(std::fabs(relative_error("ps", 8, 1000, rate)), 0.01) << rate / 1e9 << " Gb/s";
  }
}

TEST(Offload, WindowLimitedTransfersAndCollectivesKeepPerFrameTiming) {
  // Where TCP's window, not the link, decides (slow start, HyStart's exit near the
  // bandwidth-delay product, incast at the server's port): super-segments follow the window,
  // so these take per-frame simulation's time.
  for (const double rate : {1e9, 1e10, 2.5e10}) {
    for (const std::int64_t bytes : {100'000, 1'000'000, 10'000'000}) {
      EXPECT_LT(std::fabs(relative_error("transfer", 2, bytes, rate)), 0.01)
          << "transfer of " << bytes << " B at " << rate / 1e9 << " Gb/s";
    }
    EXPECT_LT(std::fabs(relative_error("ring", 8, 1'000'000, rate)), 0.01)
        << "ring at " << rate / 1e9 << " Gb/s";
    EXPECT_LT(std::fabs(relative_error("ps", 16, 1'000'000, rate)), 0.01)
        << "ps at " << rate / 1e9 << " Gb/s";
  }
  EXPECT_LT(std::fabs(relative_error("ring", 4, 10'000'000, 1e9)), 0.01);
}

TEST(Offload, BulkTransfersSendSuperSegments) {
  // 30 MB at 1 Gb/s: the window grows past hundreds of frames and the sender's packets
  // become super-segments; the start (slow start, small windows) stays frame by frame.
  std::uint64_t sent = 0;
  const auto count = [&](ns3::Ptr<const ns3::Packet>, ns3::Ptr<ns3::Ipv4>, std::uint32_t) {
    ++sent;
  };
  std::uint64_t packets[2] = {0, 0};
  for (const bool offload : {false, true}) {
    EthernetConfig config;
    config.offload = offload;
    testing::StarWithMessengers star(config, 2);
    sent = 0;
    star.network->host(0)->GetObject<ns3::Ipv4L3Protocol>()->TraceConnectWithoutContext(
        "Tx", ns3::Callback<void, ns3::Ptr<const ns3::Packet>, ns3::Ptr<ns3::Ipv4>,
                            std::uint32_t>(count));
    bool arrived = false;
    star.messengers[1]->SetHandler([&](Message&&) { arrived = true; });
    Message m;
    m.payload.assign(30'000'000, 1);
    ns3::Simulator::Schedule(ns3::Seconds(0), [&] { star.messengers[0]->Send(1, m); });
    ns3::Simulator::Run();
    EXPECT_TRUE(arrived);
    packets[offload ? 1 : 0] = sent;
  }
  EXPECT_GT(packets[0], 20'718u);  // 30 MB in 1448-byte segments
  EXPECT_LT(packets[1] * 4, packets[0]) << packets[1] << " vs " << packets[0];
}

TEST(Offload, AGroAckTakesTheWireTimeOfTheAcksItStandsFor) {
  // A ring's hosts send data and acknowledge their predecessor's at once; per-frame TCP's
  // ACK for every second frame takes about 2.7 % of the link. Tagging the one ACK per
  // super-segment keeps a bulk ring at per-frame simulation's time (netmodels/README.md).
  EXPECT_LT(std::fabs(relative_error("ring", 4, 30'000'000, 1e9)), 0.005);
}

// The incast over `seeds` runs whose workers start at random offsets within 10 us, per-frame
// and with offload.
std::pair<testing::TimingSpread, testing::TimingSpread> incast_over_jitter(int workers,
                                                                           double rate_bps,
                                                                           int seeds) {
  EthernetConfig config;
  config.rate_bps = rate_bps;
  testing::TimingSpread per_frame, offload;
  for (int seed = 1; seed <= seeds; ++seed) {
    config.offload = false;
    testing::time_with_jitter(per_frame, "ps", workers, 1'000'000, config, 10e-6,
                              static_cast<std::uint64_t>(seed));
    config.offload = true;
    testing::time_with_jitter(offload, "ps", workers, 1'000'000, config, 10e-6,
                              static_cast<std::uint64_t>(seed));
  }
  return {per_frame, offload};
}

TEST(Offload, HeavyIncastMatchesPerFrameOverStartJitter) {
  // 32 workers' 1 MB into the server's port overflow its queue. Which frames it drops, and
  // whether a 200 ms timeout fires, change with sub-microsecond shifts of the workers' starts
  // in both simulations, so they compare as distributions over such shifts: the runs without
  // a timeout agree on average within 1 %, and timeouts fire about as often.
  for (const double rate : {1e10, 2.5e10}) {
    const auto [per_frame, offload] = incast_over_jitter(32, rate, 8);
    ASSERT_LT(per_frame.timeouts(), per_frame.runs()) << rate / 1e9 << " Gb/s";
    ASSERT_LT(offload.timeouts(), offload.runs()) << rate / 1e9 << " Gb/s";
    EXPECT_LT(std::fabs(offload.mean() - per_frame.mean()) / per_frame.mean(), 0.01)
        << rate / 1e9 << " Gb/s: per-frame " << per_frame.describe() << ", offload "
        << offload.describe();
    EXPECT_LE(std::abs(offload.timeouts() - per_frame.timeouts()), 2)
        << rate / 1e9 << " Gb/s: per-frame " << per_frame.describe() << ", offload "
        << offload.describe();
  }
}

TEST(Offload, TheSwitchForwardsPortToPortWithoutItsIpStack) {
  EthernetConfig config;
  config.offload = true;
  testing::StarWithMessengers star(config, 3);
  const auto host_device = star.network->host(0)->GetDevice(1);
  const auto fabric = host_device->GetChannel()->GetDevice(1)->GetNode();
  ASSERT_NE(fabric, star.network->host(0));
  std::uint64_t switch_ip = 0, delivered = 0;
  fabric->GetObject<ns3::Ipv4L3Protocol>()->TraceConnectWithoutContext(
      "Rx", ns3::Callback<void, ns3::Ptr<const ns3::Packet>, ns3::Ptr<ns3::Ipv4>, std::uint32_t>(
                [&](ns3::Ptr<const ns3::Packet>, ns3::Ptr<ns3::Ipv4>, std::uint32_t) {
                  ++switch_ip;
                }));
  int arrived = 0;
  for (std::size_t h = 1; h < 3; ++h) {
    star.messengers[h]->SetHandler([&](Message&& m) {
      ++arrived;
      delivered += m.payload.size();
    });
  }
  Message m;
  m.payload.assign(1'000'000, 3);
  ns3::Simulator::Schedule(ns3::Seconds(0), [&] {
    star.messengers[0]->Send(1, m);
    star.messengers[0]->Send(2, m);
  });
  ns3::Simulator::Run();
  EXPECT_EQ(arrived, 2);
  EXPECT_EQ(delivered, 2'000'000u);
  // Data, ACKs and handshakes all crossed the switch port to port.
  EXPECT_EQ(switch_ip, 0u);
}

}  // namespace
}  // namespace gradwire
