// One ns-3 simulation as a run builds it: a fresh simulator seeded from the scenario, the
// scenario's network and a Messenger on every host (over TCP, or UDP datagrams when the
// scenario's network.transport says so). The in-process engine and the emulator
// service build exactly this, which is why their runs are bit-identical. The destructor tears
// the simulation down on every exit path, so a failed run leaves no half-built world behind.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <ns3/ptr.h>

namespace gradwire {

class LossLedger;
class Messenger;
class Network;
struct Scenario;

class SimulatedWorld {
 public:
  /// Port every host's Messenger listens on.
  static constexpr std::uint16_t kMessengerPort = 9000;

  SimulatedWorld(const Scenario& scenario, std::size_t hosts);
  ~SimulatedWorld();
  SimulatedWorld(const SimulatedWorld&) = delete;
  SimulatedWorld& operator=(const SimulatedWorld&) = delete;

  Network& network() const { return *network_; }
  /// Index i is host i (workers first, then the server).
  const std::vector<ns3::Ptr<Messenger>>& messengers() const { return messengers_; }
  /// Gradient bytes lost per step; null unless the scenario's transport is udp.
  const LossLedger* loss_ledger() const { return ledger_.get(); }

 private:
  std::unique_ptr<Network> network_;
  std::vector<ns3::Ptr<Messenger>> messengers_;
  std::unique_ptr<LossLedger> ledger_;
};

}  // namespace gradwire
