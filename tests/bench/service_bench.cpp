// What the emulator service costs per message on loopback. Two clients play the two hosts of
// a 1 Gbps Ethernet scenario; the service runs in a thread of this process (as it does in
// `gradwire run --processes`), the clients talk to it over tcp://127.0.0.1.
//
//   BM_CommandRoundTrip: client 0 only announces "my next event is 1 us later"; one iteration
//     is one service -> client -> service round trip plus the ns-3 event between them.
//   BM_MessageThroughService/SIZE: client 0 sends SIZE bytes to host 1 at each of its events;
//     one iteration is the whole life of one message: report with the payload, ns-3 carrying
//     it over simulated TCP, delivery to client 1 and its report, the next wake of client 0.
//   BM_MessageInProcess/SIZE: the same message between two in-process Messengers: the ns-3
//     share of the above, so the difference is what the service adds per message.
//
// Counters p50_us and p99_us are the median and 99th percentile of the per-iteration wall time
// (microseconds); Google Benchmark's own time is the mean.
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include <ns3/core-module.h>

#include "netmodels/Network.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/service/EmulatorService.h"
#include "sim/service/ServiceConnection.h"

namespace gradwire {
namespace {

using Clock = std::chrono::steady_clock;

nlohmann::json two_hosts() {
  return {{"gradwire", 1},
          {"name", "service-bench"},
          {"model", {{"kind", "mlp"}}},
          {"dataset", {{"kind", "synthetic"}}},
          {"training", {{"workers", 2}}},
          {"topology", {{"kind", "ring"}}},
          {"network", {{"rate", "1Gbps"}}}};
}

ProtocolMessage receive(ServiceConnection& c) {
  auto m = c.receive(10.0);
  if (!m) throw std::runtime_error("service_bench: no message within 10 s");
  if (m->type() == "error") throw std::runtime_error("service_bench: " + m->header.dump());
  return std::move(*m);
}

nlohmann::json report(std::uint64_t seq, nlohmann::json next, bool finished) {
  nlohmann::json r = make_header("report");
  r["seq"] = seq;
  r["next_ns"] = std::move(next);
  r["finished"] = finished;
  r["sends"] = nlohmann::json::array();
  return r;
}

void percentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}

/// Runs the service for the benchmark's lifetime and registers the two clients.
struct Bench {
  std::unique_ptr<EmulatorService> service;
  std::thread thread;
  std::unique_ptr<ServiceConnection> c0, c1;
  std::uint64_t seq0 = 0;
  std::int64_t t0 = 0;

  Bench() {
    ServiceOptions o;
    o.bind = "tcp://127.0.0.1:*";
    service = std::make_unique<EmulatorService>(load_scenario(two_hosts()), o);
    const std::string endpoint = service->bind();
    thread = std::thread([this] { service->serve("", nullptr, nullptr); });
    c0 = std::make_unique<ServiceConnection>(ConnectionOptions{endpoint, "", 1ull << 32});
    c1 = std::make_unique<ServiceConnection>(ConnectionOptions{endpoint, "", 1ull << 32});
    for (int r = 0; r < 2; ++r) {
      nlohmann::json h = make_header("hello");
      h["role"] = "worker";
      h["rank"] = r;
      (r == 0 ? *c0 : *c1).send(h);
    }
    const std::int64_t start = receive(*c0).header["start_ns"];
    receive(*c1);
    c0->send(report(0, start, false));
    c1->send(report(0, nullptr, false));
    ProtocolMessage first = receive(*c0);  // the first wake of client 0
    seq0 = first.header["seq"];
    t0 = first.header["time_ns"];
  }

  /// Client 0 sends a last message and finishes; client 1 finishes on its delivery.
  ~Bench() {
    nlohmann::json last = report(seq0, nullptr, true);
    last["sends"].push_back({{"to", 1}, {"kind", 0}, {"size", 1}, {"data", false}});
    c0->send(last);
    for (;;) {
      ProtocolMessage m = receive(*c1);
      if (m.type() != "advance") break;
      c1->send(report(m.header["seq"], nullptr, true));
    }
    thread.join();
  }
};

void BM_CommandRoundTrip(benchmark::State& state) {
  Bench b;
  std::vector<double> us;
  for (auto _ : state) {
    const auto start = Clock::now();
    b.c0->send(report(b.seq0, b.t0 + 1000, false));
    ProtocolMessage m = receive(*b.c0);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    b.seq0 = m.header["seq"];
    b.t0 = m.header["time_ns"];
  }
  percentiles(state, us);
}
BENCHMARK(BM_CommandRoundTrip)->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(1.0);

void BM_MessageThroughService(benchmark::State& state) {
  Bench b;
  const std::vector<std::uint8_t> payload(static_cast<std::size_t>(state.range(0)), 0x5a);
  std::vector<double> us;
  for (auto _ : state) {
    const auto start = Clock::now();
    // Next event 100 ms later: long after even 1 MiB has arrived on 1 Gbps.
    nlohmann::json r = report(b.seq0, b.t0 + 100000000, false);
    r["sends"].push_back({{"to", 1}, {"kind", 1}, {"size", payload.size()}, {"data", true}});
    b.c0->send(r, {&payload});
    ProtocolMessage d = receive(*b.c1);
    b.c1->send(report(d.header["seq"], nullptr, false));
    ProtocolMessage m = receive(*b.c0);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    b.seq0 = m.header["seq"];
    b.t0 = m.header["time_ns"];
  }
  percentiles(state, us);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_MessageThroughService)
    ->Arg(1024)
    ->Arg(64 * 1024)
    ->Arg(1024 * 1024)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(1.0);

void BM_MessageInProcess(benchmark::State& state) {
  const Scenario sc = load_scenario(two_hosts());
  ns3::Simulator::Destroy();
  std::unique_ptr<Network> network = sc.network.build(2);
  auto messengers = Messenger::InstallOnHosts(*network, 9000);
  messengers[1]->SetHandler([](Message&&) { ns3::Simulator::Stop(); });
  Message m;
  m.kind = 1;
  m.payload.assign(static_cast<std::size_t>(state.range(0)), 0x5a);
  auto send_one = [&]() {
    ns3::Simulator::Schedule(ns3::MicroSeconds(1), [&]() { messengers[0]->Send(1, m); });
    ns3::Simulator::Run();
  };
  send_one();  // connection set-up outside the measurement, as for the service's first wake
  std::vector<double> us;
  for (auto _ : state) {
    const auto start = Clock::now();
    send_one();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  percentiles(state, us);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
  messengers.clear();
  ns3::Simulator::Destroy();
}
BENCHMARK(BM_MessageInProcess)
    ->Arg(1024)
    ->Arg(64 * 1024)
    ->Arg(1024 * 1024)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->MinTime(1.0);

}  // namespace
}  // namespace gradwire

BENCHMARK_MAIN();
