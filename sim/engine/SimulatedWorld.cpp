#include "sim/engine/SimulatedWorld.h"

#include <ns3/core-module.h>

#include "netmodels/Network.h"
#include "nodes/transport/LossLedger.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

SimulatedWorld::SimulatedWorld(const Scenario& scenario, std::size_t hosts) {
  ns3::Simulator::Destroy();
  // RngRun fixed: the scenario seed carries the randomness.
  ns3::RngSeedManager::SetSeed(static_cast<std::uint32_t>(scenario.seed % 4294967295u) + 1);
  ns3::RngSeedManager::SetRun(1);
  const TransportConfig& transport = scenario.network.transport();
  // A burst of datagrams to a host not yet in the ARP cache would find ns-3's default pending
  // queue of 3 packets (Linux keeps ~100); TCP never notices, as its SYN goes first. Set on
  // every world so runs do not depend on what an earlier world in the process chose.
  ns3::Config::SetDefault("ns3::ArpCache::PendingQueueSize",
                          ns3::UintegerValue(transport.udp() ? 1024 : 3));
  try {
    network_ = scenario.network.build(hosts);
    messengers_ = Messenger::InstallOnHosts(*network_, kMessengerPort);
    if (transport.udp()) {
      ledger_ = std::make_unique<LossLedger>();
      for (const auto& m : messengers_) {
        m->UseDatagrams(transport, scenario.network.mtu(), ledger_.get());
      }
    }
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
