// Stands for a host that lives in another process. A collective built in a worker process
// keeps state for every rank, but only its own rank's endpoint is live; the others need an
// address (self()) and somewhere to install a handler that will never be called. Sending from
// one of them means the process is doing another host's work: a logic error.
#pragma once

#include <stdexcept>
#include <string>

#include "nodes/transport/Endpoint.h"

namespace gradwire {

class InertEndpoint : public Endpoint {
 public:
  explicit InertEndpoint(std::uint32_t self) : self_(self) {}

  void SetHandler(Handler) override {}
  void Send(std::uint32_t destination, Message) override {
    throw std::logic_error("host " + std::to_string(self_) +
                           " is not served by this process (send to " +
                           std::to_string(destination) + ")");
  }
  std::uint32_t self() const override { return self_; }
  std::uint64_t bytes_sent() const override { return 0; }

 private:
  std::uint32_t self_;
};

}  // namespace gradwire
