// Test support: an ns-3 Ethernet star with a Messenger on every host, torn down after use.
#pragma once

#include <memory>
#include <vector>

#include <ns3/core-module.h>

#include "netmodels/EthernetNetwork.h"
#include "nodes/transport/Messenger.h"

namespace gradwire::testing {

struct StarWithMessengers {
  std::unique_ptr<EthernetNetwork> network;
  std::vector<ns3::Ptr<Messenger>> messengers;

  StarWithMessengers(const EthernetConfig& config, std::size_t hosts) {
    ns3::Simulator::Destroy();
    network = std::make_unique<EthernetNetwork>(config, hosts);
    messengers = Messenger::InstallOnHosts(*network);
  }
  ~StarWithMessengers() { ns3::Simulator::Destroy(); }

  std::vector<Endpoint*> raw(std::size_t first, std::size_t count) const {
    std::vector<Endpoint*> out;
    for (std::size_t i = first; i < first + count; ++i) out.push_back(ns3::PeekPointer(messengers[i]));
    return out;
  }
};

}  // namespace gradwire::testing
