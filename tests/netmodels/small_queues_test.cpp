// Host queueing as Linux does it: TCP Small Queues keep a socket's bytes below it to about a
// millisecond of its rate, so a host's ACKs and small messages never wait behind a window of
// its own bulk data, and a bulk transfer still fills its link.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <ns3/boolean.h>
#include <ns3/config.h>
#include <ns3/object-vector.h>
#include <ns3/point-to-point-net-device.h>
#include <ns3/queue.h>
#include <ns3/rng-seed-manager.h>
#include <ns3/simulator.h>
#include <ns3/tcp-l4-protocol.h>

#include "netmodels/NetworkFactory.h"
#include "netmodels/SmallQueuesTcpSocket.h"
#include "nodes/transport/Messenger.h"

namespace gradwire {
namespace {

using nlohmann::json;

json ethernet(const std::string& rate, bool offload) {
  return {{"family", "ethernet"}, {"rate", rate}, {"delay", "5us"}, {"offload", offload}};
}

// Sets SmallQueuesTcpSocket's `SmallQueues` default for one scope.
class SmallQueues {
 public:
  explicit SmallQueues(bool on) { set(on); }
  ~SmallQueues() { set(true); }

 private:
  static void set(bool on) {
    ns3::Config::SetDefault("gradwire::SmallQueuesTcpSocket::SmallQueues", ns3::BooleanValue(on));
  }
};

struct Exchange {
  std::unique_ptr<Network> network;
  std::vector<ns3::Ptr<Messenger>> messengers;
  double bulk_s = -1;         // the bulk message's transfer time
  double small_s = -1;        // the small message's, sent while the bulk one is on its way
  std::uint32_t max_nic_bytes = 0;  // most bytes host 0's point-to-point NIC queue held

  // Host 0 sends `bulk` bytes to host 1 at t = start and, `small_after` seconds later, 100 bytes
  // to host 2 (each pair's connection is opened beforehand, as a run's are).
  Exchange(const json& object, std::size_t bulk, double small_after) {
    ns3::Simulator::Destroy();
    ns3::RngSeedManager::SetSeed(1);
    ns3::RngSeedManager::SetRun(1);
    network = resolve_network(object, "network").build(3);
    messengers = Messenger::InstallOnHosts(*network);
    const double start = std::max(0.5, network->ready_time_s() + 0.2);
    const auto send = [this](std::uint32_t from, std::uint32_t to, std::size_t bytes) {
      Message m;
      m.kind = 1;
      m.payload.assign(bytes, static_cast<std::uint8_t>(to));
      messengers[from]->Send(to, std::move(m));
    };
    // Warm-up messages open the connections and leave nothing behind.
    ns3::Simulator::Schedule(ns3::Seconds(start - 0.2), [=] { send(0, 1, 10); send(0, 2, 10); });
    std::map<std::uint32_t, int> seen;
    for (std::uint32_t to : {1u, 2u}) {
      messengers[to]->SetHandler([&, to, start, small_after, bulk](Message&& m) {
        if (++seen[to] == 1) return;  // the warm-up message
        const double now = ns3::Simulator::Now().GetSeconds();
        if (to == 1) {
          EXPECT_EQ(m.payload.size(), bulk);
          bulk_s = now - start;
        } else {
          small_s = now - start - small_after;
        }
        // A little longer: the last frames' link-layer acknowledgements (Wi-Fi) come after.
        if (bulk_s >= 0 && small_s >= 0) ns3::Simulator::Stop(ns3::MilliSeconds(50));
      });
    }
    ns3::Simulator::Schedule(ns3::Seconds(start), [=] { send(0, 1, bulk); });
    ns3::Simulator::Schedule(ns3::Seconds(start + small_after), [=] { send(0, 2, 100); });
    // Device 0 is the loopback; a per-frame Ethernet host's NIC is device 1.
    const auto nic = ns3::DynamicCast<ns3::PointToPointNetDevice>(network->host(0)->GetDevice(1));
    std::function<void()> sample = [this, nic, &sample] {
      max_nic_bytes = std::max(max_nic_bytes, nic->GetQueue()->GetNBytes());
      ns3::Simulator::Schedule(ns3::MicroSeconds(100), sample);
    };
    if (nic) ns3::Simulator::Schedule(ns3::Seconds(start), sample);
    ns3::Simulator::Stop(ns3::Seconds(start + 30));
    ns3::Simulator::Run();
  }
  ~Exchange() { ns3::Simulator::Destroy(); }
};

// A host that sends a window of bulk data must still get a small message (or an ACK) out at
// once. Without small queues the NIC's queue holds the part of the window beyond the path,
// and the small message waits behind all of it.
TEST(SmallQueues, SmallMessageIsNotStuckBehindTheHostsOwnBulkData) {
  for (const bool offload : {false, true}) {
    SCOPED_TRACE(offload ? "offload" : "per-frame");
    const json net = ethernet("100Mbps", offload);
    const Exchange linux_like(net, 8'000'000, 0.3);
    ASSERT_GT(linux_like.bulk_s, 0);
    ASSERT_GT(linux_like.small_s, 0);
    // 100 bytes on an idle path take ~50 us; small queues let a few ms of bulk data go first
    // (measured: 3.7 ms per-frame, where slow start's pacing ratio of 2 doubles Linux's limit;
    // 0.4 ms with offload, whose sockets wait for room for half the limit at a time).
    EXPECT_LT(linux_like.small_s, 0.006);
    // 8 MB at 100 Mbit/s with Ethernet framing: ~0.68 s; small queues keep the link full.
    const double wire_s = 8e6 * 1538.0 / 1448.0 * 8 / 100e6;
    EXPECT_LT(linux_like.bulk_s, wire_s * 1.03);

    SmallQueues off(false);
    const Exchange fifo(net, 8'000'000, 0.3);
    std::printf("%s: small message %.2f ms (whole window in the NIC: %.2f ms), bulk %.4f s (%.4f s)\n",
                offload ? "offload" : "per-frame", linux_like.small_s * 1e3, fifo.small_s * 1e3,
                linux_like.bulk_s, fifo.bulk_s);
    // The same exchange with the whole window in the NIC's queue: the message waits behind
    // what CUBIC's window holds beyond the path (measured: 16.4-16.6 ms).
    EXPECT_GT(fifo.small_s, 0.012);
    EXPECT_NEAR(fifo.bulk_s, linux_like.bulk_s, 0.01 * fifo.bulk_s);
  }
}

// What a socket keeps below it is about Linux's limit: the NIC's queue holds a few
// milliseconds of the link (8 ms is 100 KB at 100 Mbit/s; measured: 70.6 KB), not what the
// window holds beyond the path (measured: 415 KB).
TEST(SmallQueues, NicQueueHoldsMillisecondsNotTheWindow) {
  const Exchange linux_like(ethernet("100Mbps", false), 8'000'000, 0.3);
  EXPECT_GT(linux_like.max_nic_bytes, 2 * 1500u);
  EXPECT_LT(linux_like.max_nic_bytes, 100'000u);
  SmallQueues off(false);
  const Exchange fifo(ethernet("100Mbps", false), 8'000'000, 0.3);
  std::printf("NIC queue at most %u bytes (whole window in the NIC: %u bytes)\n",
              linux_like.max_nic_bytes, fifo.max_nic_bytes);
  EXPECT_GT(fifo.max_nic_bytes, 300'000u);
}

std::vector<ns3::Ptr<ns3::TcpSocketBase>> tcp_sockets(ns3::Ptr<ns3::Node> node) {
  ns3::ObjectVectorValue list;
  node->GetObject<ns3::TcpL4Protocol>()->GetAttribute("SocketList", list);
  std::vector<ns3::Ptr<ns3::TcpSocketBase>> out;
  for (auto it = list.Begin(); it != list.End(); ++it) {
    out.push_back(ns3::DynamicCast<ns3::TcpSocketBase>(it->second));
  }
  return out;
}

// Wired hosts keep small queues: Ethernet's, and an LTE cell's server behind the PGW. An LTE
// UE hands its packets to the modem at once, and a Wi-Fi station's driver frees them at its
// own pace: both keep ns-3's socket.
TEST(SmallQueues, WiredHostsOpenTheirSocketsAsLinuxWould) {
  const std::map<std::string, std::pair<json, std::vector<bool>>> cases = {
      {"ethernet", {ethernet("1Gbps", false), {true, true, true}}},
      {"ethernet offload", {ethernet("1Gbps", true), {true, true, true}}},
      {"wifi", {{{"family", "wifi"}, {"standard", "ax"}}, {false, false, false}}},
      {"lte", {{{"family", "lte"}}, {false, false, true}}},
  };
  for (const auto& [name, c] : cases) {
    SCOPED_TRACE(name);
    const auto& [object, small_queues] = c;
    const Exchange run(object, 200'000, 0.01);
    ASSERT_GT(run.bulk_s, 0);
    for (std::size_t h = 0; h < run.network->host_count(); ++h) {
      const auto sockets = tcp_sockets(run.network->host(h));
      EXPECT_FALSE(sockets.empty()) << "host " << h;
      for (const auto& socket : sockets) {
        const auto tsq = ns3::DynamicCast<SmallQueuesTcpSocket>(socket);
        // Listeners' forks (the accepted connections) keep the class too.
        EXPECT_EQ(static_cast<bool>(tsq), small_queues[h]) << "host " << h;
        if (tsq) EXPECT_EQ(tsq->BytesBelow(), 0u) << "everything host " << h << " sent left it";
      }
    }
  }
}

// A socket's bytes that netem drops or delays leave its account: with 1 % loss a transfer
// still ends (a lost segment never reaches the NIC, and counting it would hold the socket
// below its limit for ever), and with 20 ms of netem delay it is not held to its limit per
// delay.
TEST(SmallQueues, NetemDropsAndDelaysLeaveTheSocketsAccount) {
  json lossy = ethernet("100Mbps", false);
  lossy["impairments"] = {{"loss", {{"model", "uniform"}, {"rate", 0.01}}}};
  const Exchange lost(lossy, 2'000'000, 0.01);
  EXPECT_GT(lost.bulk_s, 0.16);
  EXPECT_LT(lost.bulk_s, 5.0);
  json delayed = ethernet("100Mbps", false);
  delayed["impairments"] = {{"delay", "20ms"}};
  const Exchange slow(delayed, 2'000'000, 0.01);
  SmallQueues off(false);
  const Exchange reference(delayed, 2'000'000, 0.01);
  std::printf("1 %% loss: 2 MB in %.3f s; 20 ms netem delay: %.3f s (%.3f s without small queues)\n",
              lost.bulk_s, slow.bulk_s, reference.bulk_s);
  EXPECT_NEAR(slow.bulk_s, reference.bulk_s, 0.02 * reference.bulk_s);
}

}  // namespace
}  // namespace gradwire
