#include "sim/SimulatedWorld.h"

#include <ns3/core-module.h>

#include "netmodels/NetworkFactory.h"
#include "nodes/Messenger.h"
#include "sim/Scenario.h"

namespace gradwire {

SimulatedWorld::SimulatedWorld(const Scenario& scenario, std::size_t hosts) {
  ns3::Simulator::Destroy();
  // RngRun fixed: the scenario seed carries the randomness.
  ns3::RngSeedManager::SetSeed(static_cast<std::uint32_t>(scenario.seed % 4294967295u) + 1);
  ns3::RngSeedManager::SetRun(1);
  try {
    network_ = build_network(scenario.network, hosts);
    messengers_ = Messenger::InstallOnHosts(*network_, kMessengerPort);
  } catch (...) {
    ns3::Simulator::Destroy();
    throw;
  }
}

SimulatedWorld::~SimulatedWorld() {
  messengers_.clear();
  ns3::Simulator::Destroy();
  network_.reset();
}

}  // namespace gradwire
