// Units, the analytic model and the Ethernet builder's validation.
#include <vector>

#include <gtest/gtest.h>
#include <ns3/node.h>
#include <ns3/simulator.h>

#include "common/ConfigError.h"
#include "common/Units.h"
#include "netmodels/AlphaBetaModel.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/OffloadChannel.h"
#include "netmodels/OffloadNetDevice.h"

namespace gradwire {
namespace {

TEST(Units, ParsesRatesAndDurations) {
  double v = 0;
  ASSERT_TRUE(parse_data_rate("1Gbps", v));
  EXPECT_DOUBLE_EQ(v, 1e9);
  ASSERT_TRUE(parse_data_rate("100 Mbps", v));
  EXPECT_DOUBLE_EQ(v, 1e8);
  ASSERT_TRUE(parse_data_rate("2.5Gb/s", v));
  EXPECT_DOUBLE_EQ(v, 2.5e9);
  EXPECT_FALSE(parse_data_rate("fast", v));
  EXPECT_FALSE(parse_data_rate("10", v));
  EXPECT_FALSE(parse_data_rate("-1Gbps", v));
  ASSERT_TRUE(parse_duration("50us", v));
  EXPECT_DOUBLE_EQ(v, 50e-6);
  ASSERT_TRUE(parse_duration("2ms", v));
  EXPECT_DOUBLE_EQ(v, 2e-3);
  EXPECT_FALSE(parse_duration("2 fortnights", v));
  EXPECT_EQ(format_bps(1e9), "1Gbps");
  EXPECT_EQ(format_bps(2.5e9), "2500Mbps");
  EXPECT_EQ(format_bps(1234), "1234bps");
  EXPECT_EQ(format_bps(1e12), "1000Gbps");  // ns-3 has no Tbps
  EXPECT_EQ(format_duration(50e-6), "50us");
  EXPECT_EQ(format_duration(0.002), "2ms");
}

TEST(AlphaBeta, RingAndServerFormulas) {
  const AlphaBetaModel m(1e-4, 1e9);
  EXPECT_DOUBLE_EQ(m.transfer_time(125e6), 1e-4 + 1.0);
  // n = 4, S = 1 GB... 2(n-1) = 6 steps of S/4.
  EXPECT_NEAR(m.ring_allreduce_time(1e9, 4), 6e-4 + 6.0 / 4.0 * 8.0, 1e-9);
  EXPECT_DOUBLE_EQ(m.ring_allreduce_time(1e9, 1), 0.0);
  EXPECT_NEAR(m.parameter_server_time(1e6, 4), 2 * (1e-4 + 4 * 8e6 / 1e9), 1e-12);
  EXPECT_THROW(AlphaBetaModel(0, 0), std::invalid_argument);
}

TEST(EthernetConfig, DefaultsAndErrors) {
  const NetworkSettings settings = resolve_network(nlohmann::json::object(), "network");
  EXPECT_EQ(settings.family(), "ethernet");
  EXPECT_EQ(settings.mtu(), 1500u);
  const auto resolved = settings.to_json();
  EXPECT_EQ(resolved["family"], "ethernet");
  EXPECT_EQ(resolved["mtu"], 1500);
  EXPECT_EQ(resolved["transport"], nlohmann::json({{"kind", "tcp"}}));
  EXPECT_EQ(resolve_network({{"mtu", 9000}}, "network").mtu(), 9000u);
  const auto c = EthernetConfig::from_json({{"rate", "10Gbps"}, {"mtu", 9000}}, "network");
  EXPECT_DOUBLE_EQ(c.rate_bps, 1e10);
  EXPECT_EQ(c.mtu, 9000u);
  auto expect_error = [](const nlohmann::json& j, const std::string& path) {
    try {
      resolve_network(j, "network");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  };
  expect_error({{"rate", "fast"}}, "network.rate");
  expect_error({{"rate", 1000}}, "network.rate");
  expect_error({{"mtu", 100}}, "network.mtu");
  expect_error({{"delay", "5 parsecs"}}, "network.delay");
  expect_error({{"family", "carrier-pigeon"}}, "network.family");
  expect_error({{"bandwidth", "1Gbps"}}, "network.bandwidth");
  expect_error({{"offload", "yes"}}, "network.offload");
}

TEST(EthernetConfig, OffloadIsOnByDefaultAndOffOnShapedLinks) {
  const auto on = EthernetConfig::from_json(nlohmann::json::object(), "network");
  EXPECT_TRUE(on.offload_active());
  EXPECT_FALSE(EthernetConfig::from_json({{"offload", false}}, "network").offload_active());
  EXPECT_EQ(on.segment_frames(), 44u);
  EXPECT_EQ(on.to_json()["offload"], true);
  // Jumbo frames: 44 x 8948 bytes exceed an IP packet; 7 fit.
  const auto jumbo = EthernetConfig::from_json({{"offload", true}, {"mtu", 9000}}, "network");
  EXPECT_EQ(jumbo.segment_frames(), 7u);
  // netem drops and delays whole packets: a lossy link simulates frames.
  const auto lossy = EthernetConfig::from_json(
      {{"offload", true}, {"impairments", {{"loss", {{"model", "uniform"}, {"rate", 0.01}}}}}},
      "network");
  EXPECT_FALSE(lossy.offload_active());
}

TEST(OffloadNetDevice, SegmentCostsItsFramesOnTheWire) {
  // IPv4 header of 20 bytes, TCP with timestamps (data offset 8 words = 32 bytes).
  std::uint8_t head[60] = {};
  head[0] = 0x45;
  head[9] = 6;
  head[20 + 12] = 8 << 4;
  // A 10-frame segment: 10 x 1448 payload, each frame 52 header bytes + 38 framing.
  const WireFrames ten = OffloadNetDevice::frames_of(head, sizeof head, 52 + 14480, 1500, 38);
  EXPECT_EQ(ten.frames, 10u);
  EXPECT_DOUBLE_EQ(ten.bytes, 14480 + 10 * (52 + 38));
  EXPECT_DOUBLE_EQ(ten.first_bytes, 1500 + 38);
  // A remainder makes a short last frame.
  const WireFrames odd = OffloadNetDevice::frames_of(head, sizeof head, 52 + 2000, 1500, 38);
  EXPECT_EQ(odd.frames, 2u);
  EXPECT_DOUBLE_EQ(odd.bytes, 2000 + 2 * (52 + 38));
  // Up to the MTU a packet is one frame, whatever it carries.
  const WireFrames one = OffloadNetDevice::frames_of(nullptr, 0, 1500, 1500, 2);
  EXPECT_EQ(one.frames, 1u);
  EXPECT_DOUBLE_EQ(one.bytes, 1502);
  EXPECT_DOUBLE_EQ(one.first_bytes, 1502);
}

TEST(OffloadNetDevice, DropTailQueueCountsFrames) {
  ns3::Simulator::Destroy();
  auto channel = ns3::CreateObject<OffloadChannel>();
  std::vector<ns3::Ptr<OffloadNetDevice>> ends;
  for (int i = 0; i < 2; ++i) {
    auto node = ns3::CreateObject<ns3::Node>();
    auto device = ns3::CreateObject<OffloadNetDevice>();
    // 1 Gb/s, 1500-byte frames, Ethernet framing, room for 15 waiting frames.
    device->Configure(ns3::DataRate(1000000000), 1500, 38, 26, 15);
    node->AddDevice(device);
    device->Attach(channel);
    ends.push_back(device);
  }
  std::vector<double> arrivals;
  ends[1]->SetReceiveCallback(ns3::NetDevice::ReceiveCallback(
      [&](ns3::Ptr<ns3::NetDevice>, ns3::Ptr<const ns3::Packet>, std::uint16_t,
          const ns3::Address&) {
        arrivals.push_back(ns3::Simulator::Now().GetSeconds());
        return true;
      }));
  // The point-to-point device's trace names: a packet starting on the wire, one dropped.
  std::vector<double> starts;
  int drops = 0;
  ends[0]->TraceConnectWithoutContext(
      "PhyTxBegin", ns3::Callback<void, ns3::Ptr<const ns3::Packet>>(
                        [&](ns3::Ptr<const ns3::Packet>) {
                          starts.push_back(ns3::Simulator::Now().GetSeconds());
                        }));
  ends[0]->TraceConnectWithoutContext(
      "MacTxDrop",
      ns3::Callback<void, ns3::Ptr<const ns3::Packet>>([&](ns3::Ptr<const ns3::Packet> p) {
        EXPECT_EQ(p->GetSize(), 15000u);
        ++drops;
      }));
  // Three 10-frame segments at once: one goes on the wire, one waits, the third does not fit.
  for (int i = 0; i < 3; ++i) {
    ends[0]->Send(ns3::Create<ns3::Packet>(15000), ends[1]->GetAddress(), 0x0800);
  }
  EXPECT_EQ(ends[0]->queued_frames(), 10u);
  EXPECT_EQ(ends[0]->dropped_packets(), 1u);
  ns3::Simulator::Run();
  ASSERT_EQ(arrivals.size(), 2u);
  // Back to back: the second segment's last bit arrives one segment's wire time later
  // (10 frames of 1500 bytes plus 38 of framing each).
  EXPECT_NEAR(arrivals[1] - arrivals[0], 10 * 1538 * 8 / 1e9, 1e-9);
  EXPECT_EQ(drops, 1);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_NEAR(starts[1] - starts[0], 10 * 1538 * 8 / 1e9, 1e-9);
  ns3::Simulator::Destroy();
}

}  // namespace
}  // namespace gradwire
