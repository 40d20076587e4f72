// The emulator service's wire format (sim/service/PROTOCOL.md): every ZeroMQ message is a multipart
// message of one JSON header frame ({"v": 1, "type": ..., ...}) followed by zero or more binary
// payload frames, referenced in order by the header's entries that have "data": true.
// Shared by the service (ROUTER socket) and its clients (DEALER sockets).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "nodes/transport/Message.h"

namespace gradwire {

/// Protocol version carried in every header ("v").
constexpr int kProtocolVersion = 1;
/// Default limit on one message's total size (all frames), in bytes; configurable.
constexpr std::uint64_t kDefaultMaxMessageBytes = std::uint64_t{64} << 20;
/// Headers are small; a larger one is treated as malformed without parsing it.
constexpr std::size_t kMaxHeaderBytes = std::size_t{1} << 20;

/// A message that breaks the protocol. `code` is the machine-readable error code the service
/// replies with (malformed, unsupported_version, too_large, out_of_order, in_past, ...).
class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(std::string code, const std::string& message)
      : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

/// One decoded protocol message.
struct ProtocolMessage {
  nlohmann::json header;
  std::vector<std::vector<std::uint8_t>> payloads;  ///< the binary frames after the header
  std::size_t next_payload = 0;                     ///< for take_payload()

  const std::string type() const { return header.value("type", std::string()); }
  /// The next unread payload frame; ProtocolError("malformed") when there is none.
  std::vector<std::uint8_t> take_payload();
};

/// A header with "v" and "type" set.
nlohmann::json make_header(const std::string& type);

/// Decodes frames received from a socket (the identity frame already removed). Checks the
/// total size against `max_bytes` (too_large), the header (a JSON object, malformed), the
/// version (unsupported_version) and that "type" is a string.
ProtocolMessage decode_frames(std::vector<zmq::message_t>& frames, std::uint64_t max_bytes);

/// Sends header + payloads as one multipart message, prefixed by `identity` when not null
/// (ROUTER sockets). Payloads are copied into ZeroMQ messages.
void send_frames(zmq::socket_t& socket, const std::string* identity, const nlohmann::json& header,
                 const std::vector<const std::vector<std::uint8_t>*>& payloads);

/// Receives one whole multipart message, waiting at most `timeout_ms`; false on timeout.
bool receive_frames(zmq::socket_t& socket, int timeout_ms, std::vector<zmq::message_t>& frames);

// --- field access with protocol errors ---------------------------------------------------
/// Required unsigned integer field (malformed if absent, not an integer or > max).
std::uint64_t get_uint(const nlohmann::json& object, const char* key, std::uint64_t max);
/// Required signed integer field.
std::int64_t get_int(const nlohmann::json& object, const char* key);
/// Optional integer field: nullopt when absent or null.
std::optional<std::int64_t> get_optional_int(const nlohmann::json& object, const char* key);
bool get_bool(const nlohmann::json& object, const char* key, bool fallback);
double get_number(const nlohmann::json& object, const char* key);
/// A string field, `fallback` when absent; ProtocolError "malformed" when of another type.
std::string get_string(const nlohmann::json& object, const char* key,
                       const std::string& fallback = "");
/// The header's "seq" when it is a sequence number (an unsigned integer), null otherwise: an
/// error reply echoes only that, never what a client sent in its place.
nlohmann::json echoable_seq(const nlohmann::json& header);
/// Required array field (an absent key gives an empty array).
const nlohmann::json& get_array(const nlohmann::json& object, const char* key);

/// The JSON entry of a message in a "sends" or "deliveries" list: kind, round, step, size,
/// data (whether its bytes travel as a payload frame).
nlohmann::json message_entry(const Message& message, bool data);

}  // namespace gradwire
