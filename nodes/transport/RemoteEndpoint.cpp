#include "nodes/transport/RemoteEndpoint.h"

#include <stdexcept>
#include <string>
#include <utility>

#include <ns3/simulator.h>

namespace gradwire {

RemoteEndpoint::RemoteEndpoint(std::uint32_t self, std::uint32_t hosts)
    : self_(self), hosts_(hosts) {}

void RemoteEndpoint::SetHandler(Handler handler) { handler_ = std::move(handler); }

void RemoteEndpoint::Send(std::uint32_t destination, Message message) {
  if (destination == self_ || destination >= hosts_) {
    throw std::logic_error("RemoteEndpoint::Send: bad destination " + std::to_string(destination) +
                           " from host " + std::to_string(self_));
  }
  message.source = self_;
  unreported_bytes_ += kFrameHeaderBytes + message.payload.size();
  outbox_.push_back(
      Outgoing{destination, ns3::Simulator::Now().GetNanoSeconds(), std::move(message)});
}

void RemoteEndpoint::deliver(Message&& message) {
  if (handler_) handler_(std::move(message));
}

void RemoteEndpoint::set_reported_bytes_sent(std::uint64_t bytes) {
  reported_bytes_sent_ = bytes;
  unreported_bytes_ = 0;
}

std::vector<RemoteEndpoint::Outgoing> RemoteEndpoint::take_outbox() {
  std::vector<Outgoing> out;
  out.swap(outbox_);
  return out;
}

}  // namespace gradwire
