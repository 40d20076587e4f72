// The message layer of a host whose network lives in another process (the emulator service,
// `gradwire serve`): Send() only records the message and the local simulated instant it was
// sent at; the process that owns the connection ships the outbox to the service, and calls
// deliver() for each message the service reports as arrived, at its simulated arrival time.
// Holds no socket, so collectives and schemes can be tested against it without ZeroMQ.
#pragma once

#include <cstdint>
#include <vector>

#include "nodes/transport/Endpoint.h"

namespace gradwire {

class RemoteEndpoint : public Endpoint {
 public:
  /// One message handed to Send() and not yet shipped.
  struct Outgoing {
    std::uint32_t destination = 0;
    std::int64_t time_ns = 0;  ///< local simulated time of the Send() call
    Message message;
  };

  /// `self`: this host's index; `hosts`: number of hosts in the scenario.
  RemoteEndpoint(std::uint32_t self, std::uint32_t hosts);

  void SetHandler(Handler handler) override;
  /// Records the message, stamped with ns3::Simulator::Now(). Throws std::logic_error for a
  /// destination that is this host or out of range.
  void Send(std::uint32_t destination, Message message) override;
  std::uint32_t self() const override { return self_; }
  /// The service's count of frame bytes this host's messenger handed to TCP (as of the last
  /// command), plus the frames sent since then: what an in-process Messenger reports when TCP
  /// takes every byte at once.
  std::uint64_t bytes_sent() const override { return reported_bytes_sent_ + unreported_bytes_; }

  /// Hands a message that arrived (at the current local simulated time) to the handler.
  void deliver(Message&& message);
  /// The service's byte counter for this host, as carried by its latest command.
  void set_reported_bytes_sent(std::uint64_t bytes);
  /// Moves the outbox out (in Send() order) and empties it.
  std::vector<Outgoing> take_outbox();

 private:
  std::uint32_t self_;
  std::uint32_t hosts_;
  Handler handler_;
  std::vector<Outgoing> outbox_;
  std::uint64_t reported_bytes_sent_ = 0;
  std::uint64_t unreported_bytes_ = 0;
};

}  // namespace gradwire
