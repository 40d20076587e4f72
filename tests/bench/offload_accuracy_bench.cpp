// Segment offload against per-frame simulation: for every transfer or all-reduce of the grid,
// the simulated time with `network.offload` off and on, their difference, and the wall time
// each took. The accuracy bound in netmodels/README.md is this table's worst row.
//
//   offload_accuracy_bench [--kinds transfer,ring,ps] [--workers 2,8,16,64]
//                          [--bytes 1e3,1e4,1e5,1e6,1e7,1e8] [--rates 1e9,1e10,2.5e10]
//                          [--frames 44] [--max-frame-bytes 2e9] [--queue 1000] [--trace]
//                          [--seeds 1] [--jitter 10e-6]
// Rows whose per-frame run would move more than --max-frame-bytes in total are skipped (the
// per-frame simulation of 64 workers x 100 MB takes many minutes). --frames 1 turns offload
// off altogether (EthernetConfig::offload_active), so both columns are then per-frame.
// --trace adds, under each row, what the switch's port towards the receiver (the parameter
// server) sent in each simulation: data frames, frames dropped, its idle time between the
// first and the last data frame, and when the flows through it sent their last frame.
//
// --seeds K runs each row K times, every worker starting at a random offset within --jitter
// seconds (10 us unless given): under heavy incast a drop-tail queue's losses, and whether a
// retransmission timeout fires, change with sub-microsecond shifts in either simulation, so
// there the two are compared as distributions. The row then gives each simulation's mean,
// standard deviation and range over the runs without a timeout, and how many runs had one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <ns3/node-list.h>
#include <ns3/traffic-control-layer.h>

#include "BenchArguments.h"
#include "CollectiveTiming.h"
#include "TimingSpread.h"
#include "netmodels/EthernetNetwork.h"
#include "netmodels/OffloadNetDevice.h"

namespace {

using gradwire::testing::number_list;
using gradwire::testing::split_list;

// What the switch's port towards the last host (the receiver, or the parameter server) sent:
// the bottleneck of a transfer and of the PS's incast. Wire time is each packet's frames as
// the offloading device bills them, in both simulations.
struct BottleneckTrace {
  static constexpr std::uint32_t kDataBytes = 200;  // larger packets carry data, not ACKs

  BottleneckTrace(double rate, std::uint32_t frame_mtu) : rate_bps(rate), mtu(frame_mtu) {}

  double rate_bps;
  std::uint32_t mtu;
  std::uint64_t data_frames = 0;
  std::uint64_t dropped_frames = 0;
  bool started = false;
  double tx_end_s = 0;
  double idle_s = 0;  // idle between the first and the last data frame
  std::map<std::uint32_t, double> flow_end;  // by source address: its last data frame
  std::map<std::uint32_t, int> flow_drops;

  /// The IP packet's frames and its source address; `ppp` skips the point-to-point header.
  struct Seen {
    gradwire::WireFrames wire;
    std::uint32_t ip_bytes;
    std::uint32_t source;
  };
  Seen see(const ns3::Packet& packet, bool ppp) const {
    std::uint8_t head[130] = {};
    const std::uint32_t skip = ppp ? 2 : 0;
    const std::uint32_t len = packet.CopyData(head, sizeof head);
    const std::uint8_t* ip = head + skip;
    const std::uint32_t ip_bytes = packet.GetSize() - skip;
    return Seen{gradwire::OffloadNetDevice::frames_of(ip, len > skip ? len - skip : 0, ip_bytes,
                                                      mtu, gradwire::kEthernetFramingBytes),
                ip_bytes,
                (std::uint32_t{ip[12]} << 24) | (std::uint32_t{ip[13]} << 16) |
                    (std::uint32_t{ip[14]} << 8) | ip[15]};
  }
  void sent(const ns3::Packet& packet, bool ppp) {
    const double now = ns3::Simulator::Now().GetSeconds();
    const Seen seen = see(packet, ppp);
    if (seen.ip_bytes > kDataBytes) {
      if (started && now > tx_end_s) idle_s += now - tx_end_s;
      started = true;
      data_frames += seen.wire.frames;
      flow_end[seen.source] = now;
    }
    tx_end_s = std::max(tx_end_s, now) + seen.wire.bytes * 8 / rate_bps;
  }
  void dropped(const ns3::Packet& packet, bool ppp) {
    const Seen seen = see(packet, ppp);
    dropped_frames += seen.wire.frames;
    if (seen.ip_bytes > kDataBytes) ++flow_drops[seen.source];
  }

  /// Connects to the switch's port of host `host` (the switch is the last node; its device 0
  /// is the loopback, port i is device i + 1). `ppp` strips the point-to-point header.
  void connect(std::uint32_t host) {
    const auto sw = ns3::NodeList::GetNode(ns3::NodeList::GetNNodes() - 1);
    const auto port = sw->GetDevice(host + 1);
    const bool ppp = port->GetInstanceTypeId().GetName() == "ns3::PointToPointNetDevice";
    port->TraceConnectWithoutContext(
        "PhyTxBegin", ns3::MakeCallback(+[](BottleneckTrace* t, bool p,
                                            ns3::Ptr<const ns3::Packet> packet) {
                                          t->sent(*packet, p);
                                        }).Bind(this, ppp));
    const auto drop = [this](bool with_ppp) {
      return ns3::MakeCallback(+[](BottleneckTrace* t, bool p,
                                   ns3::Ptr<const ns3::Packet> packet) {
               t->dropped(*packet, p);
             }).Bind(this, with_ppp);
    };
    port->TraceConnectWithoutContext("MacTxDrop", drop(ppp));
    // A point-to-point port whose queue is full stops traffic control, which drops the IP
    // packet before the device adds its header.
    if (ppp) {
      sw->GetObject<ns3::TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop",
                                                                            drop(false));
    }
  }
  void print(const char* simulation) const {
    std::vector<double> ends;
    for (const auto& f : flow_end) ends.push_back(f.second);
    std::sort(ends.begin(), ends.end());
    const auto at = [&](double q) {
      return ends.empty() ? 0.0 : ends[static_cast<std::size_t>(q * (ends.size() - 1))] * 1e3;
    };
    int most_drops = 0;
    for (const auto& f : flow_drops) most_drops = std::max(most_drops, f.second);
    std::printf("    %-9s bottleneck: %llu data frames, %llu dropped (at most %d of one flow), "
                "idle %.3f ms before its last data frame; flows' last frame at %.2f / %.2f / "
                "%.2f / %.2f ms (min, median, 90th, max)\n",
                simulation, static_cast<unsigned long long>(data_frames),
                static_cast<unsigned long long>(dropped_frames), most_drops, idle_s * 1e3, at(0),
                at(0.5), at(0.9), at(1));
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> kinds = {"transfer", "ring", "ps"};
  std::vector<double> workers = {2, 8, 16, 64};
  std::vector<double> sizes = {1e3, 1e4, 1e5, 1e6, 1e7, 1e8};
  std::vector<double> rates = {1e9, 1e10, 2.5e10};
  const gradwire::EthernetConfig defaults;
  double frames = defaults.offload_frames;
  double max_bytes = 2e9;
  double queue = 1000;
  bool trace = false;
  double jitter = 0;
  int seeds = 1;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--trace") {
      trace = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[i + 1];
    if (flag == "--kinds") kinds = split_list(value);
    else if (flag == "--workers") workers = number_list(value);
    else if (flag == "--bytes") sizes = number_list(value);
    else if (flag == "--rates") rates = number_list(value);
    else if (flag == "--frames") frames = std::stod(value);
    else if (flag == "--max-frame-bytes") max_bytes = std::stod(value);
    else if (flag == "--queue") queue = std::stod(value);
    else if (flag == "--jitter") jitter = std::stod(value);
    else if (flag == "--seeds") seeds = std::max(1, std::stoi(value));
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (seeds > 1 && jitter <= 0) jitter = 10e-6;
  if (seeds > 1) {
    std::printf("%-8s %4s %10s %6s | %-38s | %-38s | %7s\n", "kind", "n", "bytes", "Gbps",
                "per-frame: mean sd [min max] s, timeouts",
                "offload: mean sd [min max] s, timeouts", "means_%");
  } else {
    std::printf("%-8s %4s %10s %6s %12s %12s %8s %9s %9s\n", "kind", "n", "bytes", "Gbps",
                "frame_s", "offload_s", "err_%", "wall_fr", "wall_off");
  }
  double worst = 0;
  for (const auto& kind : kinds) {
    for (const double n : workers) {
      if (kind == "transfer" && n != workers.front()) continue;
      for (const double bytes : sizes) {
        const double moved = kind == "transfer" ? bytes : 2 * n * bytes;
        if (moved > max_bytes) continue;
        for (const double rate : rates) {
          gradwire::EthernetConfig config;
          config.rate_bps = rate;
          config.queue_packets = static_cast<std::uint32_t>(queue);
          const std::uint32_t last_host =
              kind == "transfer" ? 1 : static_cast<std::uint32_t>(n) - (kind == "ps" ? 0 : 1);
          gradwire::testing::TimingSpread frame_spread, offload_spread;
          for (int seed = 1; seed <= seeds; ++seed) {
            BottleneckTrace frame_trace{rate, config.mtu};
            BottleneckTrace offload_trace{rate, config.mtu};
            const auto connect = [&](BottleneckTrace& t) {
              return trace ? std::function<void()>([&t, last_host] { t.connect(last_host); })
                           : std::function<void()>();
            };
            config.offload = false;
            const auto per_frame = gradwire::testing::time_with_jitter(
                frame_spread, kind, static_cast<int>(n), static_cast<std::int64_t>(bytes), config,
                jitter, static_cast<std::uint64_t>(seed), connect(frame_trace));
            config.offload = true;
            config.offload_frames = static_cast<std::uint32_t>(frames);
            const auto offload = gradwire::testing::time_with_jitter(
                offload_spread, kind, static_cast<int>(n), static_cast<std::int64_t>(bytes), config,
                jitter, static_cast<std::uint64_t>(seed), connect(offload_trace));
            if (seeds == 1) {
              const double err = 100.0 * (offload.simulated_s - per_frame.simulated_s) /
                                 per_frame.simulated_s;
              worst = std::max(worst, std::fabs(err));
              std::printf("%-8s %4d %10.0f %6.1f %12.6f %12.6f %+8.3f %9.3f %9.3f\n",
                          kind.c_str(), kind == "transfer" ? 2 : static_cast<int>(n), bytes,
                          rate / 1e9, per_frame.simulated_s, offload.simulated_s, err,
                          per_frame.wall_s, offload.wall_s);
            }
            if (trace) {
              frame_trace.print("per-frame");
              offload_trace.print("offload");
            }
            std::fflush(stdout);
          }
          if (seeds > 1) {
            const double err =
                100.0 * (offload_spread.mean() - frame_spread.mean()) / frame_spread.mean();
            worst = std::max(worst, std::fabs(err));
            std::printf("%-8s %4d %10.0f %6.1f | %s | %s | %+7.2f\n", kind.c_str(),
                        kind == "transfer" ? 2 : static_cast<int>(n), bytes, rate / 1e9,
                        frame_spread.describe().c_str(), offload_spread.describe().c_str(), err);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  std::printf(seeds > 1 ? "worst |difference of the means without timeouts| %.3f %%\n"
                        : "worst |error| %.3f %%\n",
              worst);
  return 0;
}
