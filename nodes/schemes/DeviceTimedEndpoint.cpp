#include "nodes/schemes/DeviceTimedEndpoint.h"

#include <algorithm>

#include <ns3/simulator.h>

#include "nodes/schemes/DeviceStreams.h"

namespace gradwire {

DeviceTimedEndpoint::DeviceTimedEndpoint(Endpoint& base, const DeviceStreams& device)
    : base_(base), device_(device) {}

void DeviceTimedEndpoint::Send(std::uint32_t destination, Message message) {
  const double now = ns3::Simulator::Now().GetSeconds();
  last_departure_ = std::max({last_departure_, device_.send_ready_at(), now});
  const double wait = last_departure_ - now;
  if (wait <= 0) {
    base_.Send(destination, std::move(message));
    return;
  }
  ns3::Simulator::Schedule(ns3::Seconds(wait), [this, destination, m = std::move(message)]() mutable {
    base_.Send(destination, std::move(m));
  });
}

}  // namespace gradwire
