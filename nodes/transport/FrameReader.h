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
  /// Copies the next `n` bytes of a source into `out`; called with consecutive ranges.
  using Read = std::function<void(std::uint8_t* out, std::size_t n)>;

  /// Consumes `size` bytes; calls `on_message` for every frame completed by them, in order.
  /// Throws FrameError on a bad magic number or an impossible length.
  void feed(const std::uint8_t* data, std::size_t size,
            const std::function<void(Message&&)>& on_message);
  /// The same for `size` bytes taken through `read`: each byte is copied once, straight into
  /// the header or the payload of the message it belongs to (a socket's packets need no
  /// staging buffer).
  void feed(std::size_t size, const Read& read,
            const std::function<void(Message&&)>& on_message);

  /// Bytes of an incomplete frame held so far.
  std::size_t pending() const {
    return header_bytes_ + (header_bytes_ == kFrameHeaderBytes ? message_.payload.size() : 0);
  }

 private:
  std::uint8_t header_[kFrameHeaderBytes] = {};
  std::size_t header_bytes_ = 0;  // of the frame in progress; kFrameHeaderBytes: payload next
  std::uint64_t length_ = 0;      // its announced payload length
  Message message_;               // its fields and the payload received so far
};

}  // namespace gradwire
