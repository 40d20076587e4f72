// Several independent protocols over one host's endpoint: each gets a channel, an Endpoint of
// its own, and sees only its own messages. Gradient buckets use one channel per bucket, so one
// collective per bucket runs over the same connections without knowing about the others.
//
// The channel travels in the top 16 bits of Message::step (steps stay below 2^48), so frames
// keep their size and layout; channel 0 leaves every byte as it was.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nodes/transport/Endpoint.h"

namespace gradwire {

class EndpointChannels {
 public:
  static constexpr int kMaxChannels = 1 << 16;
  static constexpr int kStepBits = 48;

  /// Takes over `base`'s handler. `base` must outlive this object.
  EndpointChannels(Endpoint& base, int channels);
  ~EndpointChannels();
  EndpointChannels(const EndpointChannels&) = delete;
  EndpointChannels& operator=(const EndpointChannels&) = delete;

  int channels() const { return static_cast<int>(views_.size()); }
  /// The training step a (possibly channel-tagged) Message::step names.
  static constexpr std::uint64_t training_step(std::uint64_t step) {
    return step & ((std::uint64_t{1} << kStepBits) - 1);
  }

  /// The endpoint of channel `c` (valid as long as this object).
  Endpoint& channel(int c);

  /// Messages that named a channel this host does not have (corrupt or foreign): dropped.
  std::uint64_t dropped() const { return dropped_; }

 private:
  class View;
  void deliver(Message&& message);

  Endpoint& base_;
  std::vector<std::unique_ptr<View>> views_;
  std::uint64_t dropped_ = 0;
};

}  // namespace gradwire
