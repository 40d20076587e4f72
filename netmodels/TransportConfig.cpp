#include "netmodels/TransportConfig.h"

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/JsonFields.h"
#include "common/Units.h"

namespace gradwire {

namespace {

/// A udp duration key that must be positive.
template <typename Member>
FieldTable<TransportConfig>& add_positive_duration(FieldTable<TransportConfig>& keys,
                                                   ParamSpec spec, Member member) {
  return keys.add(
      std::move(spec),
      [member](const JsonFields& f, const ParamSpec& s, TransportConfig& c) {
        c.*member = declared_duration(f, s);
        if (c.*member <= 0) throw ConfigError(f.path_of(s.name), "expected a duration > 0");
      },
      [member](const TransportConfig& c, const ParamSpec& s, nlohmann::json& out) {
        out[s.name] = format_duration(c.*member);
      });
}

}  // namespace

const FieldTable<TransportConfig>& TransportConfig::keys() {
  using namespace params;
  using C = TransportConfig;
  static const FieldTable<C> kKeys = [] {
    const auto udp = [](const C& c) { return c.udp(); };
    FieldTable<C> t;
    t.add(choice("kind", "tcp", {"tcp", "udp"},
                 "`tcp`: one ns-3 TCP connection per host pair; loss becomes retransmission "
                 "delay. `udp`: messages cut into datagrams (nodes/transport/DatagramTransport), "
                 "no congestion control"),
          &C::kind);
    add_positive_duration(t, duration("reassembly_timeout", "20ms",
                                      "udp: a receiver gives up waiting for the rest of a "
                                      "message this long after its latest datagram (only when "
                                      "both end markers were lost)"),
                          &C::reassembly_timeout_s)
        .written_when(udp);
    add_positive_duration(t, duration("retransmit_timeout", "200ms",
                                      "udp: a sender repeats its end-of-message marker when no "
                                      "acknowledgement came (doubling, as TCP's RTO; Linux's "
                                      "minimum RTO is 200 ms)"),
                          &C::retransmit_timeout_s)
        .written_when(udp);
    t.add(duration("reorder_window", "0s",
                   "udp: how long after the end marker missing datagrams are still awaited; 0 "
                   "suits FIFO paths (every family here keeps packet order)"),
          &C::reorder_window_s)
        .written_when(udp)
        .add(integer("max_retries", 12, 1, 1000,
                     "udp: unanswered tries before a sender gives a message up (the receiver is "
                     "gone)"),
             &C::max_retries)
        .written_when(udp)
        // Below 64 bytes the 60-byte datagram header would dominate; above 65,000 a datagram
        // no longer fits in one IPv4 packet.
        .add(integer("datagram_bytes", 0, 0, 65000,
                     "udp: payload bytes per datagram, 0 or 64..65000; 0 = MTU - 28 (IP + UDP) "
                     "- 60 (datagram header), rounded down to 8"),
             [](const JsonFields& f, const ParamSpec& s, C& c) {
               const std::int64_t bytes = declared_integer(f, s);
               if (bytes != 0 && bytes < 64) {
                 throw ConfigError(f.path_of(s.name), "expected 0 (from the MTU) or 64..65000");
               }
               c.datagram_bytes = static_cast<std::uint32_t>(bytes);
             },
             [](const C& c, const ParamSpec& s, nlohmann::json& out) {
               out[s.name] = c.datagram_bytes;
             })
        .written_when(udp);
    return t;
  }();
  return kKeys;
}

TransportConfig TransportConfig::from_json(const nlohmann::json& value, const std::string& path) {
  if (value.is_null()) return TransportConfig{};
  if (value.is_string()) return from_json(nlohmann::json{{"kind", value}}, path);
  if (!value.is_object()) {
    throw ConfigError(path, "expected \"tcp\", \"udp\" or an object {\"kind\": ...}");
  }
  return keys().read_object(value, path);
}

nlohmann::json TransportConfig::to_json() const { return keys().write_object(*this); }

}  // namespace gradwire
