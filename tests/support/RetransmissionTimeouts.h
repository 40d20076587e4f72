// Test support: whether a TCP retransmission timeout fired in a simulation. Each one that fires
// puts its socket into TCP's Loss state, which this counts over every connection open at the
// moment it starts listening.
#pragma once

#include <ns3/callback.h>
#include <ns3/config.h>
#include <ns3/nstime.h>
#include <ns3/simulator.h>
#include <ns3/tcp-socket-state.h>

namespace gradwire::testing {

class RetransmissionTimeouts {
 public:
  /// Listens from simulated time `seconds` on (once the connections to watch are open).
  void listen_from(double seconds) {
    ns3::Simulator::Schedule(ns3::Seconds(seconds), [this] {
      ns3::Config::ConnectWithoutContextFailSafe(
          "/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/CongState",
          ns3::MakeCallback(&RetransmissionTimeouts::changed, this));
    });
  }
  int fired() const { return fired_; }

 private:
  void changed(ns3::TcpSocketState::TcpCongState_t, ns3::TcpSocketState::TcpCongState_t now) {
    if (now == ns3::TcpSocketState::CA_LOSS) ++fired_;
  }

  int fired_ = 0;
};

}  // namespace gradwire::testing
