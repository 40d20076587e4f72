#include "sim/service/ProtocolFrames.h"

#include <limits>

#include "common/JsonFields.h"

namespace gradwire {

namespace {
const nlohmann::json kEmptyArray = nlohmann::json::array();
}

std::vector<std::uint8_t> ProtocolMessage::take_payload() {
  if (next_payload >= payloads.size()) {
    throw ProtocolError("malformed", "an entry with \"data\": true has no payload frame (" +
                                         std::to_string(payloads.size()) + " frames sent)");
  }
  return std::move(payloads[next_payload++]);
}

nlohmann::json make_header(const std::string& type) {
  return nlohmann::json{{"v", kProtocolVersion}, {"type", type}};
}

ProtocolMessage decode_frames(std::vector<zmq::message_t>& frames, std::uint64_t max_bytes) {
  std::uint64_t total = 0;
  for (const auto& f : frames) total += f.size();
  if (total > max_bytes) {
    throw ProtocolError("too_large", "message of " + std::to_string(total) +
                                         " bytes exceeds the limit of " +
                                         std::to_string(max_bytes) + " bytes");
  }
  if (frames.empty()) throw ProtocolError("malformed", "empty message");
  if (frames[0].size() > kMaxHeaderBytes) {
    throw ProtocolError("malformed", "header frame larger than " +
                                         std::to_string(kMaxHeaderBytes) + " bytes");
  }
  ProtocolMessage m;
  try {
    m.header = parse_json(frames[0].to_string_view());
  } catch (const JsonTooDeep& e) {
    throw ProtocolError("malformed", std::string("the first frame must be a JSON object: it ") +
                                         e.what());
  } catch (const JsonSyntaxError& e) {
    throw ProtocolError("malformed", std::string("the first frame must be a JSON object: it is ") +
                                         e.what());
  }
  if (!m.header.is_object()) throw ProtocolError("malformed", "the first frame must be a JSON object");
  const auto v = m.header.find("v");
  if (v == m.header.end()) {
    throw ProtocolError("malformed", "header lacks the protocol version \"v\"");
  }
  if (!v->is_number_integer()) {
    throw ProtocolError("malformed", "\"v\" must be the protocol version as an integer (" +
                                         std::to_string(kProtocolVersion) + "), got " +
                                         json_brief(*v));
  }
  if (v->get<std::int64_t>() != kProtocolVersion) {
    throw ProtocolError("unsupported_version",
                        "protocol version " + json_brief(*v) + " is not supported (this service speaks " +
                            std::to_string(kProtocolVersion) + ")");
  }
  const auto t = m.header.find("type");
  if (t == m.header.end() || !t->is_string()) {
    throw ProtocolError("malformed", "header lacks a string \"type\"");
  }
  for (std::size_t i = 1; i < frames.size(); ++i) {
    const auto* p = static_cast<const std::uint8_t*>(frames[i].data());
    m.payloads.emplace_back(p, p + frames[i].size());
  }
  return m;
}

void send_frames(zmq::socket_t& socket, const std::string* identity, const nlohmann::json& header,
                 const std::vector<const std::vector<std::uint8_t>*>& payloads) {
  if (identity) socket.send(zmq::buffer(*identity), zmq::send_flags::sndmore);
  const std::string text = header.dump();
  socket.send(zmq::buffer(text), payloads.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    const auto& p = *payloads[i];
    socket.send(zmq::buffer(p.data(), p.size()),
                i + 1 == payloads.size() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
}

bool receive_frames(zmq::socket_t& socket, int timeout_ms, std::vector<zmq::message_t>& frames) {
  frames.clear();
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(std::max(0, timeout_ms))) <= 0) return false;
  // A multipart message arrives atomically: once its first frame is readable, all are.
  do {
    zmq::message_t part;
    if (!socket.recv(part, zmq::recv_flags::none)) return !frames.empty();
    frames.push_back(std::move(part));
  } while (frames.back().more());
  return true;
}

std::uint64_t get_uint(const nlohmann::json& o, const char* key, std::uint64_t max) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer() || (it->is_number_integer() && !it->is_number_unsigned() && it->get<std::int64_t>() < 0)) {
    throw ProtocolError("malformed", std::string("\"") + key + "\" must be an integer >= 0");
  }
  const std::uint64_t v = it->get<std::uint64_t>();
  if (v > max) {
    throw ProtocolError("malformed", std::string("\"") + key + "\" is " + std::to_string(v) +
                                         ", at most " + std::to_string(max) + " allowed");
  }
  return v;
}

std::int64_t get_int(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer() ||
      (it->is_number_unsigned() &&
       it->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
    throw ProtocolError("malformed", std::string("\"") + key + "\" must be an integer");
  }
  return it->get<std::int64_t>();
}

std::optional<std::int64_t> get_optional_int(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return std::nullopt;
  return get_int(o, key);
}

std::string get_string(const nlohmann::json& o, const char* key, const std::string& fallback) {
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (!it->is_string()) {
    throw ProtocolError("malformed", std::string("\"") + key + "\" must be a string, got " +
                                         json_brief(*it));
  }
  return it->get<std::string>();
}

nlohmann::json echoable_seq(const nlohmann::json& header) {
  const auto it = header.find("seq");
  if (it == header.end() || !it->is_number_unsigned()) return nullptr;
  return *it;
}

bool get_bool(const nlohmann::json& o, const char* key, bool fallback) {
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (!it->is_boolean()) throw ProtocolError("malformed", std::string("\"") + key + "\" must be true or false");
  return it->get<bool>();
}

double get_number(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end()) throw ProtocolError("malformed", std::string("\"") + key + "\" is missing");
  if (it->is_null()) return std::numeric_limits<double>::quiet_NaN();  // JSON has no NaN
  if (!it->is_number()) throw ProtocolError("malformed", std::string("\"") + key + "\" must be a number");
  return it->get<double>();
}

const nlohmann::json& get_array(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end()) return kEmptyArray;
  if (!it->is_array()) throw ProtocolError("malformed", std::string("\"") + key + "\" must be an array");
  return *it;
}

nlohmann::json message_entry(const Message& m, bool data) {
  return nlohmann::json{{"kind", m.kind},
                        {"round", m.round},
                        {"step", m.step},
                        {"size", m.payload.size()},
                        {"data", data}};
}

}  // namespace gradwire
