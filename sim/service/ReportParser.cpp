#include "sim/service/ReportParser.h"

#include <algorithm>

#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/Worker.h"
#include "sim/service/ProtocolFrames.h"

namespace gradwire {

ReportParser::ReportParser(const HostLayout& layout, std::uint64_t max_message_bytes)
    : layout_(layout), max_message_bytes_(max_message_bytes) {}

StepRecord ReportParser::parse_step(const nlohmann::json& j, std::uint32_t h) const {
  if (!j.is_object()) throw ProtocolError("malformed", "a step record must be an object");
  StepRecord r;
  r.rank = static_cast<int>(get_uint(j, "rank", layout_.hosts));
  if (static_cast<std::uint32_t>(r.rank) != h) {
    throw ProtocolError("malformed", "step record of rank " + std::to_string(r.rank) +
                                         " from host " + std::to_string(h));
  }
  r.step = static_cast<std::int64_t>(get_uint(j, "step", std::numeric_limits<std::int64_t>::max()));
  r.start_s = get_number(j, "start_s");
  r.compute_s = get_number(j, "compute_s");
  r.comm_s = get_number(j, "comm_s");
  r.codec_s = j.contains("codec_s") ? get_number(j, "codec_s") : 0.0;
  r.optimizer_s = j.contains("optimizer_s") ? get_number(j, "optimizer_s") : 0.0;
  r.end_s = get_number(j, "end_s");
  r.bytes_sent = get_uint(j, "bytes_sent", std::numeric_limits<std::uint64_t>::max());
  r.payload_bytes = get_uint(j, "payload_bytes", std::numeric_limits<std::uint64_t>::max());
  r.density = get_number(j, "density");
  r.loss = get_number(j, "loss");
  r.compute_wall_s = j.contains("compute_wall_s") ? get_number(j, "compute_wall_s") : 0.0;
  return r;
}

ParsedReport ReportParser::parse_report(ProtocolMessage& m, std::uint32_t h,
                                        std::int64_t command_ns) const {
  const std::uint32_t hosts = layout_.hosts;
  ParsedReport r;
  const nlohmann::json& head = m.header;
  // Size-only sends become that many bytes for ns-3 to carry. One per other host at the
  // message limit is what any scheme sends in a step; more would let one short header make the
  // service allocate without bound.
  const std::uint64_t others = std::max<std::uint32_t>(1, hosts - 1);
  const std::uint64_t materialise_limit =
      max_message_bytes_ > std::numeric_limits<std::uint64_t>::max() / others
          ? std::numeric_limits<std::uint64_t>::max()
          : max_message_bytes_ * others;
  std::uint64_t materialised = 0;
  for (const auto& s : get_array(head, "sends")) {
    if (!s.is_object()) throw ProtocolError("malformed", "each send must be an object");
    ParsedSend p;
    p.to = static_cast<std::uint32_t>(get_uint(s, "to", std::numeric_limits<std::uint32_t>::max()));
    if (p.to >= hosts || p.to == h) {
      throw ProtocolError("bad_destination",
                          "host " + std::to_string(p.to) + " is not another host of this scenario (" +
                              std::to_string(hosts) + " hosts)");
    }
    p.time_ns = s.contains("time_ns") ? get_int(s, "time_ns") : command_ns;
    if (p.time_ns < command_ns) {
      throw ProtocolError("in_past", "send stamped " + std::to_string(p.time_ns) +
                                         " ns, before the command's time " +
                                         std::to_string(command_ns) + " ns");
    }
    p.message.kind = static_cast<std::uint32_t>(get_uint(s, "kind", std::numeric_limits<std::uint32_t>::max()));
    p.message.round = static_cast<std::uint32_t>(s.contains("round") ? get_uint(s, "round", std::numeric_limits<std::uint32_t>::max()) : 0);
    p.message.step = s.contains("step") ? get_uint(s, "step", std::numeric_limits<std::uint64_t>::max()) : 0;
    const std::uint64_t size = get_uint(s, "size", std::numeric_limits<std::uint64_t>::max());
    if (size > max_message_bytes_) {
      throw ProtocolError("too_large", "send of " + std::to_string(size) +
                                           " bytes exceeds the limit of " +
                                           std::to_string(max_message_bytes_) + " bytes");
    }
    p.data = get_bool(s, "data", true);
    if (p.data) {
      p.message.payload = m.take_payload();
      if (p.message.payload.size() != size) {
        throw ProtocolError("malformed", "send declares " + std::to_string(size) +
                                             " bytes, its payload frame has " +
                                             std::to_string(p.message.payload.size()));
      }
    } else {
      materialised += size;
      if (materialised > materialise_limit) {
        throw ProtocolError("too_large", "the report's size-only sends add up to more than " +
                                             std::to_string(materialise_limit) +
                                             " bytes (the message limit for each other host)");
      }
      p.message.payload.assign(size, 0);  // the network carries a size's worth of bytes
    }
    r.sends.push_back(std::move(p));
  }
  if (m.next_payload != m.payloads.size()) {
    throw ProtocolError("malformed", std::to_string(m.payloads.size() - m.next_payload) +
                                         " payload frame(s) not claimed by any send");
  }
  r.finished = get_bool(head, "finished", false);
  r.next_ns = get_optional_int(head, "next_ns");
  if (r.next_ns && *r.next_ns < command_ns) {
    throw ProtocolError("in_past", "next_ns " + std::to_string(*r.next_ns) +
                                       " ns is before the command's time " +
                                       std::to_string(command_ns) + " ns");
  }
  for (const auto& s : get_array(head, "steps")) r.steps.push_back(parse_step(s, h));
  for (const auto& u : get_array(head, "updates")) {
    if (!u.is_object()) throw ProtocolError("malformed", "an update must be an object");
    StalenessEvent e;
    e.rank = static_cast<int>(get_uint(u, "rank", static_cast<std::uint64_t>(layout_.workers)));
    e.version = get_uint(u, "version", std::numeric_limits<std::uint64_t>::max());
    e.staleness = get_uint(u, "staleness", std::numeric_limits<std::uint64_t>::max());
    e.sim_time_s = get_number(u, "sim_time_s");
    r.updates.push_back(e);
  }
  return r;
}

ParsedEvaluation ReportParser::parse_evaluation(const ProtocolMessage& m) {
  ParsedEvaluation p;
  p.accuracy = get_number(m.header, "accuracy");
  p.loss = get_number(m.header, "loss");
  p.samples = static_cast<std::int64_t>(
      get_uint(m.header, "samples", std::numeric_limits<std::int64_t>::max()));
  if (m.header.contains("top5_accuracy")) p.top5_accuracy = get_number(m.header, "top5_accuracy");
  if (m.header.contains("perplexity")) p.perplexity = get_number(m.header, "perplexity");
  p.consensus = m.header.contains("consensus_distance")
                    ? get_number(m.header, "consensus_distance")
                    : 0.0;
  return p;
}

}  // namespace gradwire
