#include "codecs/wire/WireFormat.h"

#include <sstream>

namespace gradwire {

// ---------------------------------------------------------------------------------------------
// Header

void write_header(ByteWriter& writer, CodecId codec, std::uint8_t version, std::uint64_t numel) {
  writer.u8(kPayloadMagic);
  writer.u8(static_cast<std::uint8_t>(codec));
  writer.u8(version);
  writer.u8(0);  // flags: none defined yet; readers reject non-zero so they can gain meaning
  writer.u64(numel);
}

namespace {

PayloadHeader read_common(ByteReader& reader) {
  PayloadHeader h;
  const std::uint8_t magic = reader.u8("magic");
  if (magic != kPayloadMagic) {
    std::ostringstream msg;
    msg << "bad magic byte 0x" << std::hex << static_cast<int>(magic) << " (expected 0x47 'G'); "
        << "not a gradwire payload or misaligned framing";
    reader.fail(msg.str());
  }
  h.codec = static_cast<CodecId>(reader.u8("codec id"));
  h.version = reader.u8("format version");
  h.flags = reader.u8("flags");
  h.numel = reader.u64("element count");
  if (h.flags != 0) {
    reader.fail("unsupported header flags 0x" + std::to_string(h.flags) + " (expected 0)");
  }
  if (h.numel > kMaxPayloadElements) {
    reader.fail("element count " + std::to_string(h.numel) +
                " exceeds the limit of 2^40; payload corrupt");
  }
  return h;
}

}  // namespace

PayloadHeader read_header(ByteReader& reader, CodecId expected, const std::string& codec_name,
                          std::uint8_t version) {
  const PayloadHeader h = read_common(reader);
  if (h.codec != expected) {
    reader.fail("codec id " + std::to_string(static_cast<int>(h.codec)) + " is not " +
                codec_name + " (id " + std::to_string(static_cast<int>(expected)) + ")");
  }
  if (h.version != version) {
    reader.fail("format version " + std::to_string(h.version) + " not supported (expected " +
                std::to_string(version) + ")");
  }
  return h;
}

PayloadHeader peek_header(ByteSpan payload) {
  ByteReader reader(payload, "payload header");
  return read_common(reader);
}

}  // namespace gradwire
