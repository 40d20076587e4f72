#include "netmodels/TransportConfig.h"

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"

namespace gradwire {

TransportConfig TransportConfig::from_json(const nlohmann::json& value, const std::string& path) {
  TransportConfig c;
  if (value.is_null()) return c;
  if (value.is_string()) {
    nlohmann::json object = {{"kind", value}};
    return from_json(object, path);
  }
  if (!value.is_object()) {
    throw ConfigError(path, "expected \"tcp\", \"udp\" or an object {\"kind\": ...}");
  }
  JsonFields fields(value, path);
  fields.allow({"kind", "reassembly_timeout", "retransmit_timeout", "reorder_window",
                "max_retries", "datagram_bytes"});
  c.kind = fields.string("kind", "tcp", {"tcp", "udp"});
  c.reassembly_timeout_s = read_duration(fields, "reassembly_timeout", c.reassembly_timeout_s);
  c.retransmit_timeout_s = read_duration(fields, "retransmit_timeout", c.retransmit_timeout_s);
  c.reorder_window_s = read_duration(fields, "reorder_window", c.reorder_window_s);
  if (c.reassembly_timeout_s <= 0) {
    throw ConfigError(fields.path_of("reassembly_timeout"), "expected a duration > 0");
  }
  if (c.retransmit_timeout_s <= 0) {
    throw ConfigError(fields.path_of("retransmit_timeout"), "expected a duration > 0");
  }
  c.max_retries = static_cast<std::uint32_t>(fields.integer("max_retries", c.max_retries, 1, 1000));
  // Below 64 bytes the 60-byte datagram header would dominate; above 65,000 a datagram no
  // longer fits in one IPv4 packet.
  const std::int64_t bytes = fields.integer("datagram_bytes", 0, 0, 65000);
  if (bytes != 0 && bytes < 64) {
    throw ConfigError(fields.path_of("datagram_bytes"), "expected 0 (from the MTU) or 64..65000");
  }
  c.datagram_bytes = static_cast<std::uint32_t>(bytes);
  return c;
}

nlohmann::json TransportConfig::to_json() const {
  if (!udp()) return nlohmann::json{{"kind", kind}};
  return {{"kind", kind},
          {"reassembly_timeout", format_duration(reassembly_timeout_s)},
          {"retransmit_timeout", format_duration(retransmit_timeout_s)},
          {"reorder_window", format_duration(reorder_window_s)},
          {"max_retries", max_retries},
          {"datagram_bytes", datagram_bytes}};
}

}  // namespace gradwire
