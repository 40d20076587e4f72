#include "sim/service/ServiceRegistration.h"

#include <limits>
#include <ostream>

#include <nlohmann/json.hpp>

#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/Worker.h"
#include "sim/engine/Scenario.h"
#include "sim/service/ProtocolFrames.h"

namespace gradwire {

ServiceRegistration::ServiceRegistration(const Scenario& scenario, const HostLayout& layout,
                                         std::uint64_t max_message_bytes,
                                         const ReportParser& parser)
    : scenario_(scenario),
      layout_(layout),
      max_message_bytes_(max_message_bytes),
      parser_(parser),
      clients_(layout.hosts) {}

void ServiceRegistration::open(std::int64_t start_ns, std::ostream* progress) {
  start_ns_ = start_ns;
  progress_ = progress;
}

std::optional<nlohmann::json> ServiceRegistration::handle(const std::string& identity,
                                                          ProtocolMessage& m) {
  const int n = layout_.workers;
  const auto known = by_identity_.find(identity);
  if (m.type() == "hello") {
    if (known != by_identity_.end()) {
      throw ProtocolError("out_of_order", "already registered as " + layout_.host_name(known->second));
    }
    const std::string role = get_string(m.header, "role");
    std::uint32_t h = 0;
    if (role == "worker") {
      const auto it = m.header.find("rank");
      if (it == m.header.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0 ||
          it->get<std::int64_t>() >= n) {
        throw ProtocolError("bad_host", "\"rank\" must be an integer in [0, " +
                                            std::to_string(n) + ")");
      }
      h = static_cast<std::uint32_t>(it->get<std::int64_t>());
    } else if (role == "server") {
      if (!layout_.with_server) {
        throw ProtocolError("bad_host", "this scenario's topology (" + scenario_.topology.name() +
                                            ") has no server host");
      }
      h = static_cast<std::uint32_t>(n);
    } else {
      throw ProtocolError("malformed", "\"role\" must be \"worker\" or \"server\"");
    }
    if (!clients_[h].identity.empty()) {
      throw ProtocolError("bad_host", layout_.host_name(h) + " is already registered");
    }
    Client& c = clients_[h];
    c.identity = identity;
    c.worker = role == "worker";
    by_identity_[identity] = h;
    nlohmann::json w = welcome(h, role);
    if (progress_) *progress_ << "[" << scenario_.name << "] " << layout_.host_name(h) << " registered\n";
    return w;
  }
  if (known == by_identity_.end()) throw ProtocolError("unknown_client", "say hello first");
  const std::uint32_t h = known->second;
  Client& c = clients_[h];
  if (m.type() != "report" || c.reported) {
    throw ProtocolError("out_of_order", "unexpected \"" + m.type() +
                                            "\" before the run starts (expected one report "
                                            "answering the welcome)");
  }
  if (get_uint(m.header, "seq", std::numeric_limits<std::uint64_t>::max()) != c.seq) {
    throw ProtocolError("out_of_order", "the welcome is seq " + std::to_string(c.seq));
  }
  c.initial = parser_.parse_report(m, h, 0);
  c.reported = true;
  // gradwire workers say how large their model is and where it runs (for summary.json).
  if (const auto p = get_optional_int(m.header, "parameters"); p && *p > parameters_) {
    parameters_ = *p;
  }
  if (h == 0 && m.header.contains("device") && m.header["device"].is_string()) {
    device_ = m.header["device"].get<std::string>();
  }
  return std::nullopt;
}

nlohmann::json ServiceRegistration::welcome(std::uint32_t h, const std::string& role) const {
  const int n = layout_.workers;
  nlohmann::json w = make_header("welcome");
  w["seq"] = clients_[h].seq;  // 0: the client's first report answers it
  w["host"] = h;
  w["role"] = role;
  w["hosts"] = layout_.hosts;
  w["workers"] = n;
  w["server"] = layout_.with_server ? nlohmann::json(n) : nlohmann::json();
  w["time_ns"] = 0;
  w["start_ns"] = start_ns_;
  w["max_message_bytes"] = max_message_bytes_;
  w["scenario"] = scenario_.resolved;
  return w;
}

std::optional<std::uint32_t> ServiceRegistration::release(const std::string& identity) {
  const auto it = by_identity_.find(identity);
  if (it == by_identity_.end()) return std::nullopt;
  const std::uint32_t h = it->second;
  clients_[h] = Client{};
  by_identity_.erase(it);
  if (progress_) *progress_ << "[" << scenario_.name << "] " << layout_.host_name(h) << " free again\n";
  return h;
}

std::vector<std::pair<std::uint32_t, std::string>> ServiceRegistration::unreported_registrations()
    const {
  std::vector<std::pair<std::uint32_t, std::string>> out;
  for (std::uint32_t h = 0; h < layout_.hosts; ++h) {
    if (!clients_[h].identity.empty() && !clients_[h].reported) out.emplace_back(h, clients_[h].identity);
  }
  return out;
}

bool ServiceRegistration::all_reported() const {
  for (const Client& c : clients_) {
    if (!c.reported) return false;
  }
  return true;
}

std::string ServiceRegistration::missing_hosts() const {
  std::string out;
  for (std::uint32_t h = 0; h < layout_.hosts; ++h) {
    if (clients_[h].reported) continue;
    out += (out.empty() ? "" : ", ") + layout_.host_name(h) +
           (clients_[h].identity.empty() ? " (never registered)" : " (registered, no report)");
  }
  return out;
}

std::optional<std::uint32_t> ServiceRegistration::host_of(const std::string& identity) const {
  const auto it = by_identity_.find(identity);
  if (it == by_identity_.end()) return std::nullopt;
  return it->second;
}

ParsedReport ServiceRegistration::take_initial(std::uint32_t h) {
  return std::move(*clients_[h].initial);
}

}  // namespace gradwire
