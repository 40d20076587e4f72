// A client's connection to the emulator service: one ZeroMQ DEALER socket speaking the
// protocol of sim/service/PROTOCOL.md. Every wait has a timeout, so a vanished service never hangs a
// client. Used by worker processes, tests and the benchmark.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "sim/service/ProtocolFrames.h"

namespace gradwire {

struct ConnectionOptions {
  std::string endpoint;           ///< e.g. tcp://127.0.0.1:5555
  std::string server_public_key;  ///< Z85 CURVE key of the service; empty: no CURVE
  /// Messages from the service larger than this are refused (ProtocolError too_large).
  std::uint64_t max_message_bytes = std::uint64_t{1} << 40;
};

class ServiceConnection {
 public:
  /// Connects (ZeroMQ connects lazily: a wrong address shows up as a receive timeout).
  explicit ServiceConnection(const ConnectionOptions& options);

  void send(const nlohmann::json& header,
            const std::vector<const std::vector<std::uint8_t>*>& payloads = {});
  /// The next message, waiting at most `timeout_s`; nullopt on timeout.
  std::optional<ProtocolMessage> receive(double timeout_s);
  /// Raw access for tests that must send what no well-behaved client would.
  zmq::socket_t& socket() { return socket_; }

 private:
  ConnectionOptions options_;
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

}  // namespace gradwire
