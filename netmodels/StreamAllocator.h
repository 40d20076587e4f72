// The ns-3 RNG stream numbers of one network. Without an explicit number ns-3 numbers a random
// variable's stream by creation order across the whole process, so a second simulation built in
// the same process would draw other values than the first. Every random part of a network
// (placement, mobility, loss, jitter, MAC backoff, LTE schedulers, background traffic) is given
// its streams from the allocator its network owns, in the spirit of ns-3's AssignStreams: the
// builder reserves a block and hands its first number to the part's AssignStreams (or
// SetStream). Each network starts at stream 0, so the same network built twice, in one process
// or two, with the same seed draws the same values.
#pragma once

#include <cstdint>

namespace gradwire {

class StreamAllocator {
 public:
  /// Reserves `count` consecutive streams and returns the first of them.
  std::int64_t reserve(std::int64_t count) {
    const std::int64_t first = next_;
    next_ += count;
    return first;
  }
  /// How many streams have been reserved so far (the next one to be handed out).
  std::int64_t reserved() const { return next_; }

 private:
  std::int64_t next_ = 0;
};

}  // namespace gradwire
