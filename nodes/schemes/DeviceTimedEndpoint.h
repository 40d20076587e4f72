// A host's endpoint whose messages leave when the codec work that produced them is done on
// the host's device (DeviceStreams): without it, a payload would cross the network before it
// was encoded. Messages keep the order they were sent in: each leaves no earlier than the
// one before it, since protocols rely on the order of one connection.
#pragma once

#include "nodes/transport/Endpoint.h"

namespace gradwire {

class DeviceStreams;

class DeviceTimedEndpoint : public Endpoint {
 public:
  /// `base` and `device` must outlive this endpoint.
  DeviceTimedEndpoint(Endpoint& base, const DeviceStreams& device);

  void SetHandler(Handler handler) override { base_.SetHandler(std::move(handler)); }
  void Send(std::uint32_t destination, Message message) override;
  std::uint32_t self() const override { return base_.self(); }
  std::uint64_t bytes_sent() const override { return base_.bytes_sent(); }

 private:
  Endpoint& base_;
  const DeviceStreams& device_;
  double last_departure_ = 0;  // simulated instant the latest message leaves
};

}  // namespace gradwire
