// Wall-clock cost of simulating one synchronous all-reduce through ns-3, and the simulated time
// it yields, for dense payloads at two MTUs and several cluster sizes. The simulated time is
// reported as a counter next to the analytic 2(n-1)/n S/B bound.
#include <memory>

#include <benchmark/benchmark.h>
#include <ns3/core-module.h>
#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "netmodels/AlphaBetaModel.h"
#include "netmodels/EthernetNetwork.h"
#include "nodes/schemes/ParameterServer.h"
#include "nodes/schemes/RingAllReduce.h"
#include "nodes/transport/Messenger.h"

namespace gradwire {
namespace {

// Simulates one all-reduce of `numel` floats per worker; returns the simulated seconds.
double simulate(bool ring, int n, std::int64_t numel, std::uint32_t mtu, double rate_bps) {
  ns3::Simulator::Destroy();
  EthernetConfig config;
  config.mtu = mtu;
  config.rate_bps = rate_bps;
  const int hosts = n + (ring ? 0 : 1);
  EthernetNetwork network(config, static_cast<std::size_t>(hosts));
  const auto messengers = Messenger::InstallOnHosts(network);
  std::vector<Endpoint*> raw;
  for (const auto& m : messengers) raw.push_back(ns3::PeekPointer(m));
  const auto spec = CodecRegistry::builtin().resolve({{"kind", "none"}}, "codec");
  std::vector<std::unique_ptr<Codec>> codecs;
  std::vector<Codec*> codec_ptrs;
  for (int r = 0; r <= n; ++r) {
    codecs.push_back(CodecRegistry::builtin().create(spec, CodecContext{r, n, 1, numel, {}, 0}));
    if (r < n) codec_ptrs.push_back(codecs.back().get());
  }
  std::unique_ptr<Collective> collective;
  if (ring) {
    collective = std::make_unique<RingAllReduce>(raw, codec_ptrs);
  } else {
    std::vector<Endpoint*> workers(raw.begin(), raw.begin() + n);
    collective = std::make_unique<ParameterServer>(workers, raw[n], codec_ptrs, codecs[n].get());
  }
  const at::Tensor grad = torch::ones({numel});
  double finished = 0;
  for (int r = 0; r < n; ++r) {
    ns3::Simulator::Schedule(ns3::Seconds(0), [&, r] {
      collective->contribute(r, 0, grad, [&](const at::Tensor&) {
        finished = ns3::Simulator::Now().GetSeconds();
      });
    });
  }
  ns3::Simulator::Run();
  ns3::Simulator::Destroy();
  return finished;
}

void BM_RingAllReduce(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::int64_t numel = state.range(1);
  const auto mtu = static_cast<std::uint32_t>(state.range(2));
  double sim = 0;
  for (auto _ : state) sim = simulate(true, n, numel, mtu, 1e9);
  state.counters["sim_s"] = sim;
  state.counters["bound_s"] = AlphaBetaModel(0, 1e9).ring_allreduce_time(4.0 * numel, n);
  state.SetBytesProcessed(state.iterations() * 4 * numel * n);
}

void BM_ParameterServer(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::int64_t numel = state.range(1);
  const auto mtu = static_cast<std::uint32_t>(state.range(2));
  double sim = 0;
  for (auto _ : state) sim = simulate(false, n, numel, mtu, 1e9);
  state.counters["sim_s"] = sim;
  state.counters["bound_s"] = AlphaBetaModel(0, 1e9).parameter_server_time(4.0 * numel, n);
  state.SetBytesProcessed(state.iterations() * 4 * numel * n);
}

// {workers, floats per worker (61706 = the quickstart LeNet; 2.5M = 10 MB), MTU}
BENCHMARK(BM_RingAllReduce)
    ->Args({4, 61706, 1500})
    ->Args({4, 2'500'000, 1500})
    ->Args({4, 2'500'000, 9000})
    ->Args({8, 2'500'000, 9000})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParameterServer)
    ->Args({4, 61706, 1500})
    ->Args({4, 2'500'000, 9000})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gradwire

BENCHMARK_MAIN();
