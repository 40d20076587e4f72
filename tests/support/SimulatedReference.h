// The simulator's side of the comparisons with real programs (`gradwire emulate`, a real
// kernel): the same bytes in the same pattern through SimulatedWorld, as `gradwire run` builds
// the scenario's network, with gradwire's own TCP transport.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ns3/core-module.h>
#include <torch/torch.h>

#include "GlooRingSchedule.h"
#include "codecs/CodecRegistry.h"
#include "netmodels/Network.h"
#include "nodes/schemes/RingAllReduce.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/engine/SimulatedWorld.h"

namespace gradwire::testing {

/// Seconds the scenario's network takes to deliver `bytes` from host 0 to host 1.
inline double simulated_transfer_s(const std::string& scenario_path, std::size_t bytes) {
  const Scenario sc = load_scenario(read_scenario_file(scenario_path));
  SimulatedWorld world(sc, 2);
  double arrived = -1;
  world.messengers()[1]->SetHandler([&](Message&&) { arrived = ns3::Simulator::Now().GetSeconds(); });
  const double start = world.network().ready_time_s();
  ns3::Simulator::Schedule(ns3::Seconds(start), [&] {
    Message m;
    m.payload.assign(bytes, 0x5a);
    world.messengers()[0]->Send(1, std::move(m));
  });
  ns3::Simulator::Stop(ns3::Seconds(120));
  ns3::Simulator::Run();
  return arrived - start;
}

/// Simulated seconds of one all-reduce of `elements` float32 over the scenario at `path` among
/// `hosts` hosts, until the last rank is done: gloo's ring schedule (`gloo` true) or gradwire's
/// own ring. -1 when it did not finish within two simulated minutes.
inline double simulated_all_reduce(const std::string& path, std::int64_t elements, bool gloo,
                                   int hosts = 4) {
  const Scenario sc = load_scenario(read_scenario_file(path));
  SimulatedWorld world(sc, static_cast<std::size_t>(hosts));
  std::vector<Endpoint*> endpoints;
  for (int r = 0; r < hosts; ++r) endpoints.push_back(ns3::PeekPointer(world.messengers()[r]));
  double seconds = 0;
  int finished = 0;
  const double start = world.network().ready_time_s();
  const auto done = [&] {
    seconds = std::max(seconds, ns3::Simulator::Now().GetSeconds() - start);
    // Radios keep scheduling (beacons, LTE's control channels): stop when the last rank is done.
    if (++finished == hosts) ns3::Simulator::Stop();
  };
  std::vector<std::unique_ptr<Codec>> codecs;
  std::vector<Codec*> raw;
  std::unique_ptr<RingAllReduce> ring;
  std::unique_ptr<GlooRingSchedule> schedule;
  if (gloo) {
    schedule = std::make_unique<GlooRingSchedule>(endpoints, elements * 4, [&](int) { done(); });
  } else {
    const auto none = CodecRegistry::builtin().resolve({{"kind", "none"}}, "codec");
    for (int r = 0; r < hosts; ++r) {
      codecs.push_back(CodecRegistry::builtin().create(none, CodecContext{r, hosts, 1, elements, {}, 0}));
      raw.push_back(codecs.back().get());
    }
    ring = std::make_unique<RingAllReduce>(endpoints, raw);
  }
  for (int r = 0; r < hosts; ++r) {
    ns3::Simulator::Schedule(ns3::Seconds(start), [&, r] {
      if (gloo) {
        schedule->start(r);
      } else {
        ring->contribute(r, 0, torch::full({elements}, static_cast<float>(r + 1)),
                         [&](const at::Tensor&) { done(); });
      }
    });
  }
  ns3::Simulator::Stop(ns3::Seconds(start + 120));
  ns3::Simulator::Run();
  return finished == hosts ? seconds : -1;
}

}  // namespace gradwire::testing
