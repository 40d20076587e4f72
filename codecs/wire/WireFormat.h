// The 12-byte header that starts every codec payload (layout in codecs/README.md), over the
// checked byte reader and writer of common/ByteIo.h. Codecs never index raw payload memory
// they have not first claimed through the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "codecs/Codec.h"
#include "common/ByteIo.h"
#include "common/ByteSpan.h"

namespace gradwire {

/// First byte of every payload: 'G'. Catches payloads that are not ours (or shifted framing).
constexpr std::uint8_t kPayloadMagic = 0x47;
/// Header size in bytes: magic, codec id, format version, flags, u64 element count.
constexpr std::size_t kPayloadHeaderSize = 12;
/// Element counts above 2^40 (4 TiB of float32) cannot come from a real gradient; a header
/// stating one is treated as corrupt rather than trusted for an allocation.
constexpr std::uint64_t kMaxPayloadElements = std::uint64_t{1} << 40;

/// The fields of the common payload header.
struct PayloadHeader {
  CodecId codec = CodecId::kDense;
  std::uint8_t version = 0;
  std::uint8_t flags = 0;
  std::uint64_t numel = 0;
};

/// Appends the 12-byte header (flags are always 0 in this version).
void write_header(ByteWriter& writer, CodecId codec, std::uint8_t version, std::uint64_t numel);

/// Reads and validates the header: magic, codec id == `expected`, version == `version`,
/// flags == 0, element count <= kMaxPayloadElements. `codec_name` is used in messages.
PayloadHeader read_header(ByteReader& reader, CodecId expected, const std::string& codec_name,
                          std::uint8_t version = 1);

/// Reads the header without expecting a particular codec (for dispatching on its id). Checks
/// magic, flags and the element-count limit only.
PayloadHeader peek_header(ByteSpan payload);

}  // namespace gradwire
