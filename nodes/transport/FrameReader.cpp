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
void store_le(std::uint8_t* out, T v) {
  std::memcpy(out, &v, sizeof(T));
}

}  // namespace

void write_frame_header(const Message& m, std::uint8_t* out) {
  store_le<std::uint32_t>(out, kFrameMagic);
  store_le<std::uint32_t>(out + 4, m.source);
  store_le<std::uint32_t>(out + 8, m.kind);
  store_le<std::uint32_t>(out + 12, m.round);
  store_le<std::uint64_t>(out + 16, m.step);
  store_le<std::uint64_t>(out + 24, m.payload.size());
}

void append_frame(const Message& m, std::vector<std::uint8_t>& out) {
  const std::size_t at = out.size();
  out.resize(at + kFrameHeaderBytes + m.payload.size());
  write_frame_header(m, out.data() + at);
  std::copy(m.payload.begin(), m.payload.end(),
            out.begin() + static_cast<std::ptrdiff_t>(at + kFrameHeaderBytes));
}

void FrameReader::feed(const std::uint8_t* data, std::size_t size,
                       const std::function<void(Message&&)>& on_message) {
  feed(
      size,
      [&data](std::uint8_t* out, std::size_t n) {
        std::memcpy(out, data, n);
        data += n;
      },
      on_message);
}

void FrameReader::feed(std::size_t size, const Read& read,
                       const std::function<void(Message&&)>& on_message) {
  for (;;) {
    if (header_bytes_ < kFrameHeaderBytes) {
      const std::size_t n = std::min(size, kFrameHeaderBytes - header_bytes_);
      if (n == 0) return;
      read(header_ + header_bytes_, n);
      header_bytes_ += n;
      size -= n;
      if (header_bytes_ < kFrameHeaderBytes) return;
      if (load_le<std::uint32_t>(header_) != kFrameMagic) {
        throw FrameError("message stream corrupt: bad frame magic");
      }
      length_ = load_le<std::uint64_t>(header_ + 24);
      if (length_ > kMaxFramePayload) {
        throw FrameError("message stream corrupt: frame claims " + std::to_string(length_) +
                         " payload bytes");
      }
      message_ = Message{};
      message_.source = load_le<std::uint32_t>(header_ + 4);
      message_.kind = load_le<std::uint32_t>(header_ + 8);
      message_.round = load_le<std::uint32_t>(header_ + 12);
      message_.step = load_le<std::uint64_t>(header_ + 16);
      // Room for the payload, but no more than kReserveAhead before its bytes arrive: the
      // length is the sender's claim, and a corrupt header must not make the receiver
      // allocate up to kMaxFramePayload for bytes that never come.
      message_.payload.reserve(static_cast<std::size_t>(std::min(length_, kReserveAhead)));
    }
    std::vector<std::uint8_t>& payload = message_.payload;
    if (payload.size() < length_) {
      const auto n = static_cast<std::size_t>(
          std::min<std::uint64_t>(size, length_ - payload.size()));
      if (n == 0) return;
      const std::size_t have = payload.size();
      payload.resize(have + n);  // within the reservation; zeroes bytes still in cache
      read(payload.data() + have, n);
      size -= n;
      if (payload.size() < length_) return;
    }
    header_bytes_ = 0;
    Message done = std::move(message_);  // the next header starts a fresh message_
    on_message(std::move(done));
  }
}

}  // namespace gradwire
