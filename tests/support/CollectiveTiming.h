// Test support: the simulated time of one transfer or one synchronous all-reduce of dense
// fp32 gradients through the real ns-3 Ethernet star, and the wall time ns-3 took for it.
// Used to compare segment offload with per-frame simulation.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ns3/core-module.h>
#include <torch/torch.h>

#include "NetworkFixture.h"
#include "codecs/CodecRegistry.h"
#include "nodes/schemes/ParameterServer.h"
#include "nodes/schemes/RingAllReduce.h"

namespace gradwire::testing {

struct CollectiveTiming {
  double simulated_s = 0;  ///< when the last worker had its result (or the message arrived)
  double wall_s = 0;       ///< wall time of building and running the simulation
};

/// `kind`: "transfer" (host 0 sends `bytes` to host 1), "ring" or "ps" (all-reduce of a
/// `bytes` gradient over `workers`; ps adds the server host). Starts at simulated time 0.
/// `starts`, if given, holds each worker's start time (else all start at 0); `before_run`, if
/// given, is called once the star is built (to connect traces).
inline CollectiveTiming time_collective(const std::string& kind, int workers, std::int64_t bytes,
                                        const EthernetConfig& config,
                                        const std::vector<double>& starts = {},
                                        const std::function<void()>& before_run = {}) {
  const auto start = std::chrono::steady_clock::now();
  CollectiveTiming out;
  if (kind == "transfer") {
    StarWithMessengers star(config, 2);
    star.messengers[1]->SetHandler(
        [&](Message&&) { out.simulated_s = ns3::Simulator::Now().GetSeconds(); });
    Message m;
    m.payload.assign(static_cast<std::size_t>(bytes), 7);
    ns3::Simulator::Schedule(ns3::Seconds(0), [&] { star.messengers[0]->Send(1, m); });
    if (before_run) before_run();
    ns3::Simulator::Run();
  } else {
    const bool ps = kind == "ps";
    const std::int64_t numel = std::max<std::int64_t>(1, bytes / 4);
    StarWithMessengers star(config, static_cast<std::size_t>(workers + (ps ? 1 : 0)));
    const auto spec = CodecRegistry::builtin().resolve({{"kind", "none"}}, "codec");
    std::vector<std::unique_ptr<Codec>> codecs;
    std::vector<Codec*> raw;
    for (int r = 0; r <= workers; ++r) {
      codecs.push_back(
          CodecRegistry::builtin().create(spec, CodecContext{r, workers, 1, numel, {}, 0}));
      if (r < workers) raw.push_back(codecs.back().get());
    }
    std::unique_ptr<Collective> collective;
    if (ps) {
      collective = std::make_unique<ParameterServer>(
          star.raw(0, static_cast<std::size_t>(workers)),
          ns3::PeekPointer(star.messengers[static_cast<std::size_t>(workers)]), raw,
          codecs.back().get());
    } else {
      collective =
          std::make_unique<RingAllReduce>(star.raw(0, static_cast<std::size_t>(workers)), raw);
    }
    const at::Tensor grad = torch::ones({numel});
    for (int r = 0; r < workers; ++r) {
      const double start = r < static_cast<int>(starts.size()) ? starts[r] : 0.0;
      ns3::Simulator::Schedule(ns3::Seconds(start), [&, r] {
        collective->contribute(r, 0, grad, [&](const at::Tensor&) {
          out.simulated_s = ns3::Simulator::Now().GetSeconds();
        });
      });
    }
    if (before_run) before_run();
    ns3::Simulator::Run();
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace gradwire::testing
