// Reassembles framed Messages from a TCP byte stream delivered in arbitrary pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "nodes/transport/Message.h"

namespace gradwire {

class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FrameReader {
 public:
  /// Consumes `size` bytes; calls `on_message` for every frame completed by them, in order.
  /// Throws FrameError on a bad magic number or an impossible length.
  void feed(const std::uint8_t* data, std::size_t size,
            const std::function<void(Message&&)>& on_message);

  /// Bytes of an incomplete frame held so far.
  std::size_t pending() const { return buffer_.size() - start_; }

 private:
  std::vector<std::uint8_t> buffer_;
  std::size_t start_ = 0;  // first unconsumed byte; compacted lazily to keep feed() O(n)
};

}  // namespace gradwire
