// Gradient bytes the UDP transport lost, per training step: every host's receiver adds what it
// zero-filled in the loss-tolerant part of the messages it delivered, under the step the
// message belongs to, and the metrics recorder reads it when the step's line is written.
#pragma once

#include <cstdint>
#include <map>

namespace gradwire {

class LossLedger {
 public:
  struct Entry {
    std::uint64_t lossy_bytes = 0;  ///< loss-tolerant payload bytes delivered (lost or not)
    std::uint64_t lost_bytes = 0;   ///< of those, bytes that never arrived (read as zeros)
    std::uint64_t messages = 0;     ///< messages delivered with a loss-tolerant part
    std::uint64_t damaged = 0;      ///< of those, messages with at least one lost datagram

    double loss_fraction() const {
      return lossy_bytes == 0 ? 0.0
                              : static_cast<double>(lost_bytes) / static_cast<double>(lossy_bytes);
    }
  };

  void add(std::uint64_t step, std::uint64_t lossy_bytes, std::uint64_t lost_bytes) {
    for (Entry* e : {&steps_[step], &total_}) {
      e->lossy_bytes += lossy_bytes;
      e->lost_bytes += lost_bytes;
      e->messages += 1;
      e->damaged += lost_bytes != 0 ? 1 : 0;
    }
  }

  /// What step `step` lost (zeros when nothing of it was lossy).
  Entry at(std::uint64_t step) const {
    const auto it = steps_.find(step);
    return it == steps_.end() ? Entry{} : it->second;
  }
  const Entry& total() const { return total_; }

 private:
  std::map<std::uint64_t, Entry> steps_;
  Entry total_;
};

}  // namespace gradwire
