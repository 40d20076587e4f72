// What a training scheme needs from a host's message layer, and nothing more: send a framed
// Message to another host, receive whole Messages through a handler, know one's own index.
//
// In-process runs use Messenger (an ns-3 Application moving the bytes over simulated TCP);
// a worker running as its own process (`gradwire worker`) can use an endpoint that forwards to
// the emulator service. Collectives and schemes only ever see this interface, so the same
// protocol code runs in both (cf. ASTRA-sim's AstraNetworkAPI: the network behind a few calls).
#pragma once

#include <cstdint>
#include <functional>

#include "nodes/transport/Message.h"

namespace gradwire {

class Endpoint {
 public:
  using Handler = std::function<void(Message&&)>;

  virtual ~Endpoint() = default;

  /// Called for every complete message received, in arrival order per source, at the
  /// simulated instant its last byte arrives.
  virtual void SetHandler(Handler handler) = 0;

  /// Queues `message` for host `destination` (message.source is set to this host) and
  /// returns at once. Sending to oneself is a logic error.
  virtual void Send(std::uint32_t destination, Message message) = 0;

  /// This host's index in the scenario (workers first, then the server).
  virtual std::uint32_t self() const = 0;

  /// Frame bytes (header + payload) this host has put on the wire so far.
  virtual std::uint64_t bytes_sent() const = 0;
};

}  // namespace gradwire
