#include "common/ByteIo.h"

#include <sstream>

namespace gradwire {

// ---------------------------------------------------------------------------------------------
// ByteWriter

void ByteWriter::u16(std::uint16_t v) {
  bytes_.push_back(static_cast<std::uint8_t>(v));
  bytes_.push_back(static_cast<std::uint8_t>(v >> 8));
}

void ByteWriter::u32(std::uint32_t v) { store_u32_le(extend(4), v); }

void ByteWriter::u64(std::uint64_t v) {
  std::uint8_t* p = extend(8);
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

void ByteWriter::f32(float v) { store_f32_le(extend(4), v); }

void ByteWriter::f32_array(const float* values, std::size_t count) {
#ifdef GRADWIRE_BIG_ENDIAN
  std::uint8_t* p = extend(count * 4);
  for (std::size_t i = 0; i < count; ++i) store_f32_le(p + 4 * i, values[i]);
#else
  // The host layout already is the wire layout: one memcpy.
  raw(values, count * sizeof(float));
#endif
}

void ByteWriter::u32_array(const std::uint32_t* values, std::size_t count) {
#ifdef GRADWIRE_BIG_ENDIAN
  std::uint8_t* p = extend(count * 4);
  for (std::size_t i = 0; i < count; ++i) store_u32_le(p + 4 * i, values[i]);
#else
  raw(values, count * sizeof(std::uint32_t));
#endif
}

void ByteWriter::raw(const void* data, std::size_t count) {
  if (count == 0) return;  // data may be null for empty tensors
  // insert copies straight into the reservation; extend's resize would zero it first, a
  // second pass over a gradient-sized payload.
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  bytes_.insert(bytes_.end(), bytes, bytes + count);
}

std::uint8_t* ByteWriter::extend(std::size_t count) {
  const std::size_t old = bytes_.size();
  bytes_.resize(old + count);
  return bytes_.data() + old;
}

// ---------------------------------------------------------------------------------------------
// ByteReader

void ByteReader::fail(const std::string& message) const { throw DecodeError(what_ + ": " + message); }

const std::uint8_t* ByteReader::need(std::size_t bytes, const char* field) {
  if (bytes > remaining()) {
    std::ostringstream msg;
    msg << what_ << " truncated: need " << bytes << " bytes for " << field << " at offset "
        << offset_ << ", " << remaining() << " left";
    throw DecodeError(msg.str());
  }
  const std::uint8_t* p = span_.data + offset_;
  offset_ += bytes;
  return p;
}

std::uint8_t ByteReader::u8(const char* field) { return *need(1, field); }

std::uint16_t ByteReader::u16(const char* field) {
  const std::uint8_t* p = need(2, field);
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

std::uint32_t ByteReader::u32(const char* field) { return load_u32_le(need(4, field)); }

std::uint64_t ByteReader::u64(const char* field) {
  const std::uint8_t* p = need(8, field);
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

float ByteReader::f32(const char* field) { return load_f32_le(need(4, field)); }

const std::uint8_t* ByteReader::take(std::size_t count, std::size_t item_size,
                                     const char* field) {
  // Compare by division so a corrupt count cannot overflow count * item_size into a small
  // number that passes the check.
  if (item_size != 0 && count > remaining() / item_size) {
    std::ostringstream msg;
    msg << what_ << " truncated: need " << count << " x " << item_size << " bytes for " << field
        << " at offset " << offset_ << ", " << remaining() << " left";
    throw DecodeError(msg.str());
  }
  return need(count * item_size, field);
}

void ByteReader::expect_end() const {
  if (remaining() != 0) {
    std::ostringstream msg;
    msg << what_ << " has " << remaining() << " trailing bytes after offset " << offset_;
    throw DecodeError(msg.str());
  }
}

}  // namespace gradwire
