// The UDP transport (`network.transport: "udp"`, nodes/transport/DatagramTransport): the datagram format
// checks itself, every byte arrives in order on a clean network, a lossy link loses the
// configured fraction of the loss-tolerant bytes (and only those: they read as zeros at whole
// elements, headers and intolerant payloads are retransmitted until they arrive), and a
// training run records the loss per step and still learns.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include <gtest/gtest.h>
#include <ns3/core-module.h>

#include "common/ConfigError.h"
#include "MetricsLines.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/TransportConfig.h"
#include "nodes/transport/Datagram.h"
#include "nodes/transport/DatagramTransport.h"
#include "nodes/transport/FrameReader.h"
#include "nodes/transport/LossLedger.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// The datagram format.

TEST(DatagramFormat, PlanCoversThePayloadAndCutsOnlyBetweenElements) {
  struct Case {
    std::uint64_t length, lossy_from;
    std::uint32_t element, fragment;
  };
  const std::vector<Case> cases = {{0, LossTolerance::kNone, 1, 1448},
                                   {1, LossTolerance::kNone, 1, 1448},
                                   {100000, LossTolerance::kNone, 1, 1448},
                                   {100000, 12, 4, 1448},
                                   {100012, 12, 4, 1000},
                                   {5000, 20, 2, 64},
                                   {4096, 0, 8, 1448},
                                   {13, 12, 4, 8}};
  for (const Case& c : cases) {
    const auto plan = fragment_plan(c.length, c.lossy_from, c.element, c.fragment);
    ASSERT_FALSE(plan.empty());
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const Fragment& f = plan[i];
      EXPECT_EQ(f.offset, at) << "fragments must be contiguous";
      EXPECT_LE(f.size, c.fragment);
      if (c.length > 0) {
        EXPECT_GT(f.size, 0u);
      }
      EXPECT_EQ(f.reliable, f.offset < c.lossy_from);
      const std::uint64_t end = f.offset + f.size;
      EXPECT_FALSE(f.offset < c.lossy_from && end > c.lossy_from) << "fragment mixes head and values";
      // Inside the lossy region every cut falls on an element boundary (or the end).
      if (end > c.lossy_from && end < c.length) {
        EXPECT_EQ((end - c.lossy_from) % c.element, 0u) << "cut splits an element at " << end;
      }
      at = end;
    }
    EXPECT_EQ(at, c.length);
  }
  EXPECT_THROW(fragment_plan(10, 0, 3, 1448), std::invalid_argument);
  EXPECT_THROW(fragment_plan(10, 0, 4, 4), std::invalid_argument);
}

TEST(DatagramFormat, RandomMutationsParseOrRaiseFrameError) {
  DatagramHeader h;
  h.source = 1;
  h.message_id = 7;
  h.kind = 3;
  h.step = 42;
  h.payload_length = 5000;
  h.lossy_from = 12;
  h.element_bytes = 4;
  h.fragment_bytes = 1448;
  std::vector<std::uint8_t> body(1448, 0xAB);
  const auto nack_body = encode_ranges({{0, 2}, {3, 1}}, 1448);
  std::vector<std::vector<std::uint8_t>> valid;
  for (DatagramType t : {DatagramType::kData, DatagramType::kEnd, DatagramType::kAck,
                         DatagramType::kNack}) {
    h.type = t;
    if (t == DatagramType::kData) valid.push_back(build_datagram(h, body.data(), body.size()));
    if (t == DatagramType::kNack) valid.push_back(build_datagram(h, nack_body.data(), nack_body.size()));
    if (t == DatagramType::kEnd || t == DatagramType::kAck) valid.push_back(build_datagram(h, nullptr, 0));
  }
  for (const auto& v : valid) {
    const ParsedDatagram d = parse_datagram(v.data(), v.size(), kMaxFramePayload);
    EXPECT_TRUE(d.header.same_message(h));
  }
  std::mt19937 rng(11);
  int rejected = 0, accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::uint8_t> bytes = valid[static_cast<std::size_t>(rng() % valid.size())];
    switch (rng() % 3) {
      case 0:  // flip a few bytes, mostly in the header
        for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
          const std::size_t at = rng() % std::min<std::size_t>(bytes.size(), 80);
          bytes[at] = static_cast<std::uint8_t>(rng());
        }
        break;
      case 1:
        bytes.resize(rng() % bytes.size());
        break;
      default:
        bytes.resize(bytes.size() + 1 + rng() % 16, static_cast<std::uint8_t>(rng()));
    }
    // An exact-size heap copy, so a read past the end is a read past the allocation.
    std::unique_ptr<std::uint8_t[]> exact(new std::uint8_t[bytes.size() + 1]);
    std::copy(bytes.begin(), bytes.end(), exact.get());
    try {
      const ParsedDatagram d = parse_datagram(exact.get(), bytes.size(), kMaxFramePayload);
      ++accepted;
      EXPECT_LE(d.header.payload_length, kMaxFramePayload);
      EXPECT_EQ(d.body + d.body_size, exact.get() + bytes.size());
      if (d.header.type == DatagramType::kNack) {
        try {
          for (const auto& [first, count] : decode_ranges(d.body, d.body_size, 4)) {
            EXPECT_LE(first + count, 4u);
          }
        } catch (const FrameError&) {
        }
      }
    } catch (const FrameError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 5000);
  EXPECT_GT(accepted, 100);  // body bytes and extensions of data datagrams are legal
  EXPECT_THROW(decode_ranges(nack_body.data(), nack_body.size(), 3), FrameError);
}

TEST(TransportConfig, ParsesAndRejectsWithThePath) {
  EXPECT_FALSE(TransportConfig::from_json(json(), "network.transport").udp());
  EXPECT_TRUE(TransportConfig::from_json("udp", "network.transport").udp());
  const auto c = TransportConfig::from_json(
      {{"kind", "udp"}, {"retransmit_timeout", "50ms"}, {"datagram_bytes", 1024}},
      "network.transport");
  EXPECT_DOUBLE_EQ(c.retransmit_timeout_s, 0.05);
  EXPECT_EQ(c.datagram_bytes, 1024u);
  try {
    TransportConfig::from_json("quic", "network.transport");
    FAIL() << "quic accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("network.transport.kind"), std::string::npos) << e.what();
  }
  try {
    TransportConfig::from_json({{"kind", "udp"}, {"datagram_bytes", 10}}, "network.transport");
    FAIL() << "10-byte datagrams accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("datagram_bytes"), std::string::npos) << e.what();
  }
}

TEST(TransportConfig, WritesItsDeclaredKeysAndReadsThemBack) {
  // tcp has no keys but its kind; udp writes every declared key, and reads back the same.
  EXPECT_EQ(TransportConfig{}.to_json(), (json{{"kind", "tcp"}}));
  const auto udp = TransportConfig::from_json(
      {{"kind", "udp"}, {"reorder_window", "2ms"}, {"max_retries", 5}}, "network.transport");
  const json written = udp.to_json();
  std::vector<std::string> declared, keys;
  for (const auto& p : TransportConfig::keys().params()) declared.push_back(p.name);
  for (const auto& item : written.items()) keys.push_back(item.key());
  std::sort(declared.begin(), declared.end());
  EXPECT_EQ(keys, declared);
  EXPECT_EQ(written.at("reorder_window"), "2ms");
  EXPECT_EQ(TransportConfig::from_json(written, "network.transport").to_json(), written);
  // A key the transport does not declare is refused at its path.
  try {
    TransportConfig::from_json({{"kind", "udp"}, {"window", 3}}, "network.transport");
    FAIL() << "an unknown key accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "network.transport.window");
  }
}

// ---------------------------------------------------------------------------------------------
// Messages over UDP through ns-3.

// A network from a `network` object with a UDP Messenger on every host, as SimulatedWorld
// builds it.
struct UdpRig {
  std::unique_ptr<Network> network;
  std::vector<ns3::Ptr<Messenger>> messengers;
  LossLedger ledger;

  UdpRig(const json& object, std::size_t hosts, std::uint32_t seed = 1) {
    ns3::Simulator::Destroy();
    ns3::RngSeedManager::SetSeed(seed);
    ns3::RngSeedManager::SetRun(1);
    ns3::Config::SetDefault("ns3::ArpCache::PendingQueueSize", ns3::UintegerValue(1024));
    json with_udp = object;
    with_udp["transport"] = "udp";
    const NetworkSettings settings = resolve_network(with_udp, "network");
    network = settings.build(hosts);
    messengers = Messenger::InstallOnHosts(*network);
    for (auto& m : messengers) m->UseDatagrams(settings.transport(), settings.mtu(), &ledger);
  }
  ~UdpRig() { ns3::Simulator::Destroy(); }
};

// Random payload bytes that are never zero, so a zero byte at the receiver means "lost".
std::vector<std::uint8_t> nonzero_bytes(std::size_t n, std::mt19937& rng) {
  std::vector<std::uint8_t> out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(1 + rng() % 255);
  return out;
}

TEST(UdpTransport, CarriesEveryByteInOrderOnACleanNetwork) {
  UdpRig rig({{"family", "ethernet"}, {"rate", "1Gbps"}}, 3);
  std::mt19937 rng(3);
  const std::vector<std::size_t> sizes = {0, 1, 1391, 1392, 1393, 20000, 300000};
  std::map<std::uint32_t, std::vector<std::vector<std::uint8_t>>> sent;
  std::map<std::uint32_t, std::size_t> next;
  std::size_t delivered = 0;
  rig.messengers[2]->SetHandler([&](Message&& m) {
    const auto& expected = sent[m.source];
    ASSERT_LT(next[m.source], expected.size());
    EXPECT_EQ(m.payload, expected[next[m.source]]) << "message " << next[m.source] << " from "
                                                   << m.source;
    EXPECT_EQ(m.step, next[m.source]);
    ++next[m.source];
    ++delivered;
  });
  ns3::Simulator::Schedule(ns3::Seconds(0.1), [&] {
    for (std::uint32_t src : {0u, 1u}) {
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        Message m;
        m.kind = 5;
        m.step = i;
        m.payload = nonzero_bytes(sizes[i], rng);
        if (i % 2 == 0) m.loss = {12, 4};  // tolerant or not, nothing is lost here
        sent[src].push_back(m.payload);
        rig.messengers[src]->Send(2, std::move(m));
      }
    }
  });
  ns3::Simulator::Stop(ns3::Seconds(5));
  ns3::Simulator::Run();
  EXPECT_EQ(delivered, 2 * sizes.size());
  EXPECT_EQ(rig.ledger.total().lost_bytes, 0u);
  const auto* udp = rig.messengers[0]->datagrams();
  ASSERT_NE(udp, nullptr);
  EXPECT_EQ(udp->counters().fragments_resent, 0u);
  // From the MTU: a full datagram fills one 1500-byte IP packet exactly, never an IP fragment.
  EXPECT_EQ(udp->fragment_bytes(), (1500u - 28 - 60) / 8 * 8);
  DatagramHeader h;
  EXPECT_LE(build_datagram(h, nullptr, 0).size() + udp->fragment_bytes() + kUdpIpHeaderBytes, 1500u);
}

// Host 0's link drops 5 % of the packets in each direction (uniform). Its datagrams cross one
// impaired queue, so a tolerant fragment is lost with p = 0.05; with F fragments the lost
// fraction has a standard deviation sqrt(p (1 - p) / F) (fragments are equal-sized but the
// last of each message): the test allows 4 sigma. Every lost byte is a zero at a whole
// element, everything else equals what was sent, and the first 12 bytes (the "header") and
// the intolerant messages arrive whole.
TEST(UdpTransport, LosesTheConfiguredFractionOfTolerantBytesOnly) {
  const double p = 0.05;
  UdpRig rig({{"family", "ethernet"}, {"rate", "100Mbps"}, {"delay", "1ms"},
              {"impairments", {{"hosts", {0}}, {"loss", {{"model", "uniform"}, {"rate", p}}}}}},
             2);
  std::mt19937 rng(5);
  const int messages = 40;
  const std::size_t bytes = 12 + 4 * 25000;  // header + 25,000 floats: ~73 fragments
  std::vector<std::vector<std::uint8_t>> sent;
  std::uint64_t zero_bytes = 0, tolerant_bytes = 0;
  int received = 0, intact_intolerant = 0;
  rig.messengers[1]->SetHandler([&](Message&& m) {
    const auto& expected = sent.at(m.step);
    ASSERT_EQ(m.payload.size(), expected.size());
    ++received;
    if (m.kind == 2) {  // intolerant: retransmitted until whole
      intact_intolerant += m.payload == expected ? 1 : 0;
      return;
    }
    for (std::size_t i = 0; i < 12; ++i) ASSERT_EQ(m.payload[i], expected[i]) << "header lost";
    for (std::size_t e = 12; e < m.payload.size(); e += 4) {
      const bool zero = m.payload[e] == 0 && m.payload[e + 1] == 0 && m.payload[e + 2] == 0 &&
                        m.payload[e + 3] == 0;
      if (zero) {
        zero_bytes += 4;
      } else {
        for (std::size_t k = 0; k < 4; ++k) ASSERT_EQ(m.payload[e + k], expected[e + k]);
      }
    }
    tolerant_bytes += m.payload.size() - 12;
  });
  for (int i = 0; i < messages + 4; ++i) {
    sent.push_back(nonzero_bytes(bytes, rng));
    // One message every 20 ms: 100 kB take 8 ms at 100 Mb/s, so queues never overflow and
    // every loss is the impairment's.
    ns3::Simulator::Schedule(ns3::Seconds(0.1 + 0.02 * i), [&, i] {
      Message m;
      m.kind = i < messages ? 1 : 2;
      m.step = static_cast<std::uint64_t>(i);
      m.payload = sent[static_cast<std::size_t>(i)];
      if (i < messages) m.loss = {12, 4};
      rig.messengers[0]->Send(1, std::move(m));
    });
  }
  ns3::Simulator::Stop(ns3::Seconds(30));
  ns3::Simulator::Run();
  ASSERT_EQ(received, messages + 4);
  EXPECT_EQ(intact_intolerant, 4);
  const double fragments = messages * static_cast<double>(tolerant_bytes / messages) /
                           ((1500 - 28 - 60) / 8 * 8);
  const double observed = static_cast<double>(zero_bytes) / static_cast<double>(tolerant_bytes);
  const double sigma = std::sqrt(p * (1 - p) / fragments);
  std::printf("[udp] lost %.4f of the tolerant bytes (configured %.2f, 4 sigma %.4f, %.0f "
              "fragments); ledger: %.4f\n",
              observed, p, 4 * sigma, fragments, rig.ledger.total().loss_fraction());
  EXPECT_NEAR(observed, p, 4 * sigma);
  // The ledger counts exactly what was zero-filled (our bytes are never zero otherwise).
  EXPECT_EQ(rig.ledger.total().lost_bytes, zero_bytes);
  EXPECT_EQ(rig.ledger.total().lossy_bytes, tolerant_bytes);
  EXPECT_GT(rig.ledger.total().damaged, 0u);
  const auto* udp = rig.messengers[0]->datagrams();
  EXPECT_GT(udp->counters().fragments_resent, 0u);  // headers and intolerant parts were resent
}

// ---------------------------------------------------------------------------------------------
// Training over UDP.

json udp_run(const std::string& codec, const std::string& topology, double loss) {
  json network = {{"rate", "100Mbps"}, {"delay", "1ms"}, {"transport", "udp"}};
  if (loss > 0) network["impairments"] = {{"loss", {{"model", "uniform"}, {"rate", loss}}}};
  return {{"gradwire", 1},
          {"name", "udp-" + codec},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {64}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 1.0}, {"train_samples", 4000},
                       {"test_samples", 1000}}},
          {"training", {{"workers", 4}, {"steps", 60}, {"batch", 16}, {"eval_every", 30},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"codec", codec == "topk" ? json{{"kind", "topk"}, {"ratio", 0.05}, {"error_feedback", true}}
                                    : json{{"kind", codec}}},
          {"topology", {{"kind", topology}}},
          {"network", network}};
}

TEST(UdpTraining, LostGradientIsRecordedPerStepAndTrainingGoesOn) {
  for (const std::string topology : {"ring", "ps"}) {
    Engine engine(load_scenario(udp_run("none", topology, 0.02)));
    const RunResult r = engine.run("", nullptr);
    const auto steps = testing::lines_of(r.metrics_jsonl, "step");
    ASSERT_EQ(steps.size(), 60u) << topology;
    std::uint64_t lost = 0;
    for (const auto& s : steps) {
      ASSERT_TRUE(s.contains("lost_bytes")) << s.dump();
      ASSERT_TRUE(s.contains("loss_fraction"));
      lost += s["lost_bytes"].get<std::uint64_t>();
    }
    const json& udp = r.summary.at("udp");
    std::printf("[udp-run] %s, 2%% loss per impaired link: lost %.4f of the gradient bytes, "
                "accuracy %.3f\n",
                topology.c_str(), udp["loss_fraction"].get<double>(),
                r.summary["final_accuracy"].get<double>());
    EXPECT_EQ(udp["lost_bytes"].get<std::uint64_t>(), lost);
    EXPECT_DOUBLE_EQ(r.summary["lost_gradient_fraction"].get<double>(),
                     udp["loss_fraction"].get<double>());
    // Every host is impaired: a datagram crosses two lossy queues (1 - 0.98^2 = 3.96 %); a
    // run sends a few thousand value datagrams, so 2.5-5.5 % is about 4 sigma either side.
    EXPECT_GT(udp["loss_fraction"].get<double>(), 0.025) << topology;
    EXPECT_LT(udp["loss_fraction"].get<double>(), 0.055) << topology;
    EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.5) << topology;
  }
}

TEST(UdpTraining, IntolerantCodecsAreRetransmittedAndLoseNothing) {
  Engine engine(load_scenario(udp_run("topk", "ring", 0.02)));
  const RunResult r = engine.run("", nullptr);
  EXPECT_EQ(testing::lines_of(r.metrics_jsonl, "step").size(), 60u);
  EXPECT_EQ(r.summary.at("udp")["lost_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_GT(r.summary["final_accuracy"].get<double>(), 0.5);
}

TEST(UdpTraining, CleanUdpMatchesTcpAccuracyAndTcpRunsHaveNoLossFields) {
  Engine udp(load_scenario(udp_run("none", "ring", 0.0)));
  const RunResult u = udp.run("", nullptr);
  json tcp_doc = udp_run("none", "ring", 0.0);
  tcp_doc["network"].erase("transport");
  Engine tcp(load_scenario(tcp_doc));
  const RunResult t = tcp.run("", nullptr);
  // Nothing lost: both apply exactly the same updates; only the timing differs.
  EXPECT_EQ(u.summary.at("udp")["lost_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(u.summary["final_accuracy"].get<double>(),
                   t.summary["final_accuracy"].get<double>());
  EXPECT_FALSE(t.summary.contains("udp"));
  EXPECT_FALSE(testing::lines_of(t.metrics_jsonl, "step").front().contains("lost_bytes"));
}

}  // namespace
}  // namespace gradwire
