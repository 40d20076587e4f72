// How application messages cross the network (`network.transport` in a scenario). The network
// resolves it with the rest of its object (NetworkSettings::transport()); the transport layer
// (nodes/transport: Messenger, DatagramTransport) acts on it.
//
//   "tcp" (default): one TCP connection per host pair; loss becomes retransmission delay.
//   "udp": messages are cut into datagrams (nodes/transport/DatagramTransport). Datagrams holding the
//          loss-tolerant part of a gradient payload (common/LossTolerance.h) are sent once and
//          lost ones arrive as zeros: lost gradient information, recorded per step. Everything
//          else (payload headers, parameters, payloads of codecs that cannot decode partial
//          bytes) is retransmitted at the application level until it arrives.
//
// Either a string ("udp") or an object {"kind": "udp", "reassembly_timeout": "20ms", ...}.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/FieldTable.h"

namespace gradwire {

struct TransportConfig {
  std::string kind = "tcp";  ///< "tcp" | "udp"
  /// udp: how long a receiver waits after the latest datagram of an incomplete message before
  /// it gives up on the rest (used only when the sender's end-of-message marker is lost).
  double reassembly_timeout_s = 0.02;
  /// udp: how long after its end-of-message marker a sender waits for the acknowledgement
  /// before it asks again (doubles per try, as TCP's RTO; Linux's minimum RTO is 200 ms).
  double retransmit_timeout_s = 0.2;
  /// udp: how long a receiver waits after the end-of-message marker before treating missing
  /// datagrams as lost. 0 suits FIFO paths; set it above the jitter when links reorder.
  double reorder_window_s = 0.0;
  /// udp: tries before a sender gives a message up (the receiver is gone).
  std::uint32_t max_retries = 12;
  /// udp: payload bytes per datagram; 0 derives it from the network's MTU.
  std::uint32_t datagram_bytes = 0;

  bool udp() const { return kind == "udp"; }

  /// Its keys as an object, each bound to its member; the udp keys are written only for udp.
  static const FieldTable<TransportConfig>& keys();
  /// Reads `network.transport` (string or object; absent: tcp). ConfigError names the path.
  static TransportConfig from_json(const nlohmann::json& value, const std::string& path);
  nlohmann::json to_json() const;
};

}  // namespace gradwire
