// Little-endian byte writing and bounds-checked byte reading, for every format gradwire puts on
// a wire: codec payloads, datagrams, saved state.
//
// Bytes cross simulated machines and may be truncated or corrupted by a bug anywhere upstream,
// so every read goes through ByteReader, which checks the remaining length first and throws
// DecodeError naming the payload, the field, the offset and what was missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/ByteSpan.h"
#include "common/DecodeError.h"

namespace gradwire {

// Fixed-width little-endian loads and stores. memcpy (not a pointer cast) keeps them legal on
// unaligned payload offsets; on little-endian hosts the compiler turns them into plain moves.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define GRADWIRE_BIG_ENDIAN 1
#endif

inline std::uint32_t load_u32_le(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
#ifdef GRADWIRE_BIG_ENDIAN
  v = __builtin_bswap32(v);
#endif
  return v;
}

inline void store_u32_le(std::uint8_t* p, std::uint32_t v) {
#ifdef GRADWIRE_BIG_ENDIAN
  v = __builtin_bswap32(v);
#endif
  std::memcpy(p, &v, sizeof v);
}

inline void store_u64_le(std::uint8_t* p, std::uint64_t v) {
  store_u32_le(p, static_cast<std::uint32_t>(v));
  store_u32_le(p + 4, static_cast<std::uint32_t>(v >> 32));
}

inline float load_f32_le(const std::uint8_t* p) {
  const std::uint32_t bits = load_u32_le(p);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline void store_f32_le(std::uint8_t* p, float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  store_u32_le(p, bits);
}

/// dst[i] += src[i] for `count` little-endian float32 values (summable payloads' accumulate).
inline void add_f32_array_le(std::uint8_t* dst, const std::uint8_t* src, std::uint64_t count) {
  for (std::uint64_t i = 0; i < count; ++i) {
    store_f32_le(dst + 4 * i, load_f32_le(dst + 4 * i) + load_f32_le(src + 4 * i));
  }
}

/// Appends little-endian values to a growing byte vector it owns. Call take() to get the bytes.
class ByteWriter {
 public:
  ByteWriter() = default;
  /// Reserves `expected_size` bytes up front: codecs know their payload size before writing,
  /// and a single allocation matters at 10M-element gradients.
  explicit ByteWriter(std::size_t expected_size) { bytes_.reserve(expected_size); }

  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void f32(float v);
  /// Appends `count` floats as little-endian float32.
  void f32_array(const float* values, std::size_t count);
  /// Appends `count` u32 values as little-endian.
  void u32_array(const std::uint32_t* values, std::size_t count);
  /// Appends raw bytes unchanged.
  void raw(const void* data, std::size_t count);
  /// Grows the buffer by `count` bytes and returns where they start, for callers that fill a
  /// region in place (e.g. converting int64 indices to u32 without a temporary). The pointer is
  /// valid until the next append.
  std::uint8_t* extend(std::size_t count);

  std::size_t size() const { return bytes_.size(); }
  /// Moves the bytes out; the writer is empty afterwards.
  Bytes take() { return std::move(bytes_); }

 private:
  Bytes bytes_;
};

/// Reads little-endian values from a ByteSpan it does not own, checking every length first.
/// `what` names the payload in error messages, e.g. "topk payload".
class ByteReader {
 public:
  ByteReader(ByteSpan span, std::string what) : span_(span), what_(std::move(what)) {}

  std::uint8_t u8(const char* field);
  std::uint16_t u16(const char* field);
  std::uint32_t u32(const char* field);
  std::uint64_t u64(const char* field);
  float f32(const char* field);
  /// Claims `count` items of `item_size` bytes and returns a pointer to the first one; throws
  /// DecodeError (with no overflow in the size computation) when fewer bytes remain.
  const std::uint8_t* take(std::size_t count, std::size_t item_size, const char* field);
  /// Throws DecodeError unless every byte has been read (payload sizes are exact).
  void expect_end() const;

  std::size_t offset() const { return offset_; }
  std::size_t remaining() const { return span_.size - offset_; }
  const std::string& what() const { return what_; }

  /// Throws DecodeError("<what>: <message>").
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const std::uint8_t* need(std::size_t bytes, const char* field);

  ByteSpan span_;
  std::size_t offset_ = 0;
  std::string what_;
};

}  // namespace gradwire
