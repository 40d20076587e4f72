#include "nodes/transport/FrameReader.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace gradwire {
namespace {

/// The most FrameReader reserves for a frame's announced payload; longer payloads grow the
/// buffer as they arrive.
constexpr std::uint64_t kReserveAhead = std::uint64_t{64} << 20;

template <typename T>
T load_le(const std::uint8_t* p) {
  T v{};
  std::memcpy(&v, p, sizeof(T));  // x86-64 and aarch64 are little-endian, as is the wire
  return v;
}

template <typename T>
void store_le(std::vector<std::uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

}  // namespace

void append_frame(const Message& m, std::vector<std::uint8_t>& out) {
  out.reserve(out.size() + kFrameHeaderBytes + m.payload.size());
  store_le<std::uint32_t>(out, kFrameMagic);
  store_le<std::uint32_t>(out, m.source);
  store_le<std::uint32_t>(out, m.kind);
  store_le<std::uint32_t>(out, m.round);
  store_le<std::uint64_t>(out, m.step);
  store_le<std::uint64_t>(out, m.payload.size());
  out.insert(out.end(), m.payload.begin(), m.payload.end());
}

void FrameReader::feed(const std::uint8_t* data, std::size_t size,
                       const std::function<void(Message&&)>& on_message) {
  buffer_.insert(buffer_.end(), data, data + size);
  while (buffer_.size() - start_ >= kFrameHeaderBytes) {
    const std::uint8_t* h = buffer_.data() + start_;
    if (load_le<std::uint32_t>(h) != kFrameMagic) {
      throw FrameError("message stream corrupt: bad frame magic");
    }
    const std::uint64_t length = load_le<std::uint64_t>(h + 24);
    if (length > kMaxFramePayload) {
      throw FrameError("message stream corrupt: frame claims " + std::to_string(length) +
                       " payload bytes");
    }
    if (buffer_.size() - start_ < kFrameHeaderBytes + length) {
      // Room for the rest of the frame, but no more than kReserveAhead before the bytes
      // arrive: the length is the sender's claim, and a corrupt header must not make the
      // receiver allocate up to kMaxFramePayload for bytes that never come.
      buffer_.reserve(start_ + kFrameHeaderBytes + std::min(length, kReserveAhead));
      break;
    }
    Message m;
    m.source = load_le<std::uint32_t>(h + 4);
    m.kind = load_le<std::uint32_t>(h + 8);
    m.round = load_le<std::uint32_t>(h + 12);
    m.step = load_le<std::uint64_t>(h + 16);
    m.payload.assign(h + kFrameHeaderBytes, h + kFrameHeaderBytes + length);
    start_ += kFrameHeaderBytes + length;
    on_message(std::move(m));
  }
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = 0;
  } else if (start_ > (1u << 20) && start_ > buffer_.size() / 2) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
}

}  // namespace gradwire
