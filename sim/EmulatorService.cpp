#include "sim/EmulatorService.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include <ns3/core-module.h>

#include "codecs/ConfigError.h"
#include "netmodels/NetworkFactory.h"
#include "nodes/AsyncParameterServer.h"
#include "nodes/Messenger.h"
#include "nodes/Worker.h"
#include "sim/AtomicOutput.h"
#include "sim/CurveKeys.h"
#include "sim/Evaluation.h"
#include "sim/MetricsRecorder.h"
#include "sim/SimulatedWorld.h"

namespace gradwire {

namespace {

// How often a waiting service looks at the lost-hosts hook and its deadlines.
constexpr int kPollSliceMs = 50;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::int64_t now_ns() { return ns3::Simulator::Now().GetNanoSeconds(); }

/// One message a client sent, checked and ready for its host's Messenger.
struct ParsedSend {
  std::uint32_t to = 0;
  std::int64_t time_ns = 0;
  bool data = true;
  Message message;
};

/// A client's answer to "welcome" or "advance", checked as a whole before any of it is used.
struct ParsedReport {
  std::vector<ParsedSend> sends;
  std::optional<std::int64_t> next_ns;
  bool finished = false;
  std::vector<StepRecord> steps;
  std::vector<StalenessEvent> updates;
};

struct ParsedEvaluation {
  EvalResult result;
  double consensus = 0;
};

/// What the service remembers of a message in flight between two hosts. A Messenger keeps one
/// TCP connection per destination, so deliveries of a (source, destination) pair come in send
/// order and a FIFO per pair is enough.
struct InFlight {
  bool data = true;  // false: the client gave only a size; deliver the size, not the zeros
  std::int64_t sent_ns = 0;
};

}  // namespace

struct EmulatorService::Impl {
  struct Client {
    std::string identity;  // empty: nobody has registered this host
    bool worker = true;
    std::uint64_t seq = 0;
    bool reported = false;  // answered its welcome
    std::optional<ParsedReport> initial;
    bool finished = false;
    bool lost = false;
    ns3::EventId wake;
    std::int64_t wake_ns = -1;  // -1: no wake-up pending
  };

  struct Incoming {
    std::string identity;
    ProtocolMessage message;
  };

  Scenario sc;
  ServiceOptions opt;
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::router};
  std::string endpoint;

  int n = 0;
  bool with_server = false;
  std::uint32_t hosts = 0;
  std::vector<Client> clients;  // index = host
  std::map<std::string, std::uint32_t> by_identity;

  SimulatedWorld* world = nullptr;  // set while serve() runs
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::deque<InFlight>> in_flight;

  std::unique_ptr<MetricsRecorder> recorder;
  std::int64_t parameters = 0;
  std::string device;
  double staleness_sum = 0;
  std::uint64_t staleness_count = 0;

  std::uint64_t commands = 0, deliveries = 0, dropped = 0, error_replies = 0;
  double client_wait_s = 0;  // wall time spent waiting for clients inside the event loop
  bool running = false;      // inside Simulator::Run
  bool ending = false;       // Stop() requested: no more commands
  std::string end_reason;
  std::string end_message;
  std::ostream* progress = nullptr;
  std::ostream* log = nullptr;
  Clock::time_point wall_start;

  Impl(Scenario scenario, ServiceOptions options) : sc(std::move(scenario)), opt(std::move(options)) {
    n = sc.training.workers;
    with_server = sc.topology.kind == "ps";
    hosts = static_cast<std::uint32_t>(n) + (with_server ? 1 : 0);
    clients.resize(hosts);
  }

  std::string host_name(std::uint32_t h) const {
    return h < static_cast<std::uint32_t>(n) ? "worker " + std::to_string(h)
                                             : "server (host " + std::to_string(h) + ")";
  }

  void note(const std::string& line) {
    if (log) *log << "gradwire serve: " << line << "\n" << std::flush;
  }

  // --- sending --------------------------------------------------------------------------
  /// Sends to a client; false when ZeroMQ cannot route to it any more.
  bool send_to(const std::string& identity, const nlohmann::json& header,
               const std::vector<const std::vector<std::uint8_t>*>& payloads = {}) {
    try {
      send_frames(socket, &identity, header, payloads);
      return true;
    } catch (const zmq::error_t& e) {
      note("cannot send to a client: " + std::string(e.what()));
      return false;
    }
  }

  void reply_error(const std::string& identity, const std::string& code,
                   const std::string& message, const nlohmann::json& seq = nullptr) {
    nlohmann::json h = make_header("error");
    h["code"] = code;
    h["message"] = message;
    if (!seq.is_null()) h["seq"] = seq;
    ++error_replies;
    auto it = by_identity.find(identity);
    note("error reply (" + code + ") to " +
         (it == by_identity.end() ? std::string("an unregistered client") : host_name(it->second)) +
         ": " + message);
    send_to(identity, h);
  }

  // --- receiving ------------------------------------------------------------------------
  /// Waits up to `timeout_ms` for one well-formed message. Malformed, oversized or
  /// wrong-version messages are answered with an error here and not returned.
  bool poll_one(int timeout_ms, Incoming& in) {
    std::vector<zmq::message_t> frames;
    if (!receive_frames(socket, timeout_ms, frames)) return false;
    if (frames.empty()) return false;
    in.identity = frames[0].to_string();
    frames.erase(frames.begin());
    try {
      in.message = decode_frames(frames, opt.max_message_bytes);
      return true;
    } catch (const ProtocolError& e) {
      reply_error(in.identity, e.code(), e.what());
      return false;
    }
  }

  /// Hosts the lost-hosts hook reports; each is reported once and ends the run.
  void check_lost_hosts() {
    if (!opt.lost_hosts) return;
    for (std::uint32_t h : opt.lost_hosts()) {
      if (h < hosts && !clients[h].lost) lose(h, "its process exited");
    }
  }

  void lose(std::uint32_t h, const std::string& why) {
    Client& c = clients[h];
    if (c.lost) return;
    c.lost = true;
    if (c.wake_ns >= 0) {
      ns3::Simulator::Cancel(c.wake);
      c.wake_ns = -1;
    }
    note(host_name(h) + " lost: " + why);
    finish_run("client_lost", host_name(h) + " lost: " + why);
  }

  void finish_run(const std::string& reason, const std::string& message) {
    if (end_reason.empty()) {
      end_reason = reason;
      end_message = message;
    }
    ending = true;
    if (running) ns3::Simulator::Stop();
  }

  /// A message from a client other than the one whose answer is awaited.
  void reply_stray(const Incoming& in, std::uint32_t awaited) {
    const bool known = by_identity.count(in.identity) > 0;
    if (!known && in.message.type() == "hello") {
      reply_error(in.identity, "registration_closed",
                  "the run has started: every host is taken");
    } else if (!known) {
      reply_error(in.identity, "unknown_client", "say hello first");
    } else {
      reply_error(in.identity, "out_of_order",
                  "unexpected \"" + in.message.type() + "\": the service is waiting for " +
                      host_name(awaited) + "; clients send only in answer to a command",
                  in.message.header.value("seq", nlohmann::json()));
    }
  }

  /// Sends `command` to host `h` and waits for its answer of type `expect`, which `parse`
  /// checks (throwing ProtocolError). Invalid answers get an error reply and the wait goes on;
  /// other clients' messages get error replies. nullopt when the client is lost.
  template <class Parse>
  auto exchange(std::uint32_t h, nlohmann::json command,
                const std::vector<const std::vector<std::uint8_t>*>& payloads,
                const std::string& expect, Parse parse)
      -> std::optional<decltype(parse(std::declval<ProtocolMessage&>()))> {
    Client& c = clients[h];
    command["seq"] = ++c.seq;
    ++commands;
    const auto wait_start = Clock::now();
    struct WaitCharge {
      Impl* self;
      Clock::time_point start;
      ~WaitCharge() { self->client_wait_s += seconds_since(start); }
    } charge{this, wait_start};
    if (!send_to(c.identity, command, payloads)) {
      lose(h, "cannot send to it");
      return std::nullopt;
    }
    const auto deadline =
        wait_start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(opt.client_timeout_s));
    for (;;) {
      check_lost_hosts();
      if (c.lost) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        lose(h, "no answer to \"" + command["type"].get<std::string>() + "\" within " +
                    std::to_string(opt.client_timeout_s) + " s");
        return std::nullopt;
      }
      Incoming in;
      if (!poll_one(static_cast<int>(std::min<std::int64_t>(left.count(), kPollSliceMs)), in)) continue;
      if (in.identity != c.identity) {
        reply_stray(in, h);
        continue;
      }
      const nlohmann::json seq = in.message.header.value("seq", nlohmann::json());
      try {
        if (in.message.type() != expect) {
          throw ProtocolError("out_of_order", "expected \"" + expect + "\" in answer to \"" +
                                                  command["type"].get<std::string>() + "\", got \"" +
                                                  in.message.type() + "\"");
        }
        if (get_uint(in.message.header, "seq", std::numeric_limits<std::uint64_t>::max()) != c.seq) {
          throw ProtocolError("out_of_order", "answer carries seq " + seq.dump() +
                                                  ", the pending command is seq " +
                                                  std::to_string(c.seq));
        }
        return parse(in.message);
      } catch (const ProtocolError& e) {
        reply_error(in.identity, e.code(), e.what(), seq);
      }
    }
  }

  // --- reports ---------------------------------------------------------------------------
  StepRecord parse_step(const nlohmann::json& j, std::uint32_t h) const {
    if (!j.is_object()) throw ProtocolError("malformed", "a step record must be an object");
    StepRecord r;
    r.rank = static_cast<int>(get_uint(j, "rank", hosts));
    if (static_cast<std::uint32_t>(r.rank) != h) {
      throw ProtocolError("malformed", "step record of rank " + std::to_string(r.rank) +
                                           " from host " + std::to_string(h));
    }
    r.step = static_cast<std::int64_t>(get_uint(j, "step", std::numeric_limits<std::int64_t>::max()));
    r.start_s = get_number(j, "start_s");
    r.compute_s = get_number(j, "compute_s");
    r.comm_s = get_number(j, "comm_s");
    r.end_s = get_number(j, "end_s");
    r.bytes_sent = get_uint(j, "bytes_sent", std::numeric_limits<std::uint64_t>::max());
    r.payload_bytes = get_uint(j, "payload_bytes", std::numeric_limits<std::uint64_t>::max());
    r.density = get_number(j, "density");
    r.loss = get_number(j, "loss");
    r.compute_wall_s = j.contains("compute_wall_s") ? get_number(j, "compute_wall_s") : 0.0;
    return r;
  }

  ParsedReport parse_report(ProtocolMessage& m, std::uint32_t h, std::int64_t command_ns) {
    ParsedReport r;
    const nlohmann::json& head = m.header;
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
      if (size > opt.max_message_bytes) {
        throw ProtocolError("too_large", "send of " + std::to_string(size) +
                                             " bytes exceeds the limit of " +
                                             std::to_string(opt.max_message_bytes) + " bytes");
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
      e.rank = static_cast<int>(get_uint(u, "rank", static_cast<std::uint64_t>(n)));
      e.version = get_uint(u, "version", std::numeric_limits<std::uint64_t>::max());
      e.staleness = get_uint(u, "staleness", std::numeric_limits<std::uint64_t>::max());
      e.sim_time_s = get_number(u, "sim_time_s");
      r.updates.push_back(e);
    }
    return r;
  }

  void apply_report(std::uint32_t h, ParsedReport&& r) {
    for (auto& s : r.sends) inject(h, std::move(s));
    for (const auto& u : r.updates) {
      staleness_sum += static_cast<double>(u.staleness);
      ++staleness_count;
      recorder->staleness(u);
    }
    for (const auto& s : r.steps) on_step(s);
    Client& c = clients[h];
    if (r.finished) {
      c.finished = true;
      set_wake(h, std::nullopt);
      bool all = true;
      for (const Client& x : clients) all = all && (!x.worker || x.finished);
      if (all) finish_run("complete", "every worker finished");
    } else {
      set_wake(h, r.next_ns);
    }
  }

  void inject(std::uint32_t h, ParsedSend&& s) {
    if (running && s.time_ns == now_ns()) {
      send_now(h, std::move(s));
      return;
    }
    ns3::Simulator::Schedule(ns3::NanoSeconds(s.time_ns) - ns3::Simulator::Now(),
                             [this, h, s]() mutable { send_now(h, std::move(s)); });
  }

  void send_now(std::uint32_t h, ParsedSend&& s) {
    in_flight[{h, s.to}].push_back(InFlight{s.data, s.time_ns});
    world->messengers()[h]->Send(s.to, std::move(s.message));
  }

  /// Keeps a pending wake-up that is still right (its place among simultaneous events is
  /// where an in-process worker's event would be); otherwise replaces it.
  void set_wake(std::uint32_t h, std::optional<std::int64_t> at) {
    Client& c = clients[h];
    if (at && c.wake_ns == *at) return;
    if (c.wake_ns >= 0) {
      ns3::Simulator::Cancel(c.wake);
      c.wake_ns = -1;
    }
    if (!at || c.lost) return;
    c.wake_ns = *at;
    c.wake = ns3::Simulator::Schedule(ns3::NanoSeconds(*at) - ns3::Simulator::Now(),
                                      [this, h]() { wake(h); });
  }

  nlohmann::json advance_command(std::uint32_t h) const {
    nlohmann::json cmd = make_header("advance");
    cmd["time_ns"] = now_ns();
    cmd["bytes_sent"] = world->messengers()[h]->bytes_sent();
    cmd["deliveries"] = nlohmann::json::array();
    return cmd;
  }

  void wake(std::uint32_t h) {
    Client& c = clients[h];
    c.wake_ns = -1;
    if (ending || c.lost || c.finished) return;
    const std::int64_t t = now_ns();
    auto report = exchange(h, advance_command(h), {}, "report",
                           [&](ProtocolMessage& m) { return parse_report(m, h, t); });
    if (report) apply_report(h, std::move(*report));
  }

  void on_delivery(std::uint32_t h, Message&& m) {
    InFlight info;
    auto& fifo = in_flight[{m.source, h}];
    if (!fifo.empty()) {
      info = fifo.front();
      fifo.pop_front();
    }
    Client& c = clients[h];
    if (ending || c.lost || c.finished) {
      ++dropped;
      return;
    }
    ++deliveries;
    const std::int64_t t = now_ns();
    nlohmann::json cmd = advance_command(h);
    nlohmann::json d = message_entry(m, info.data);
    d["from"] = m.source;
    d["sent_ns"] = info.sent_ns;
    cmd["deliveries"].push_back(d);
    std::vector<const std::vector<std::uint8_t>*> payloads;
    if (info.data) payloads.push_back(&m.payload);
    auto report = exchange(h, cmd, payloads, "report",
                           [&](ProtocolMessage& msg) { return parse_report(msg, h, t); });
    if (report) apply_report(h, std::move(*report));
  }

  // --- metrics -----------------------------------------------------------------------------
  /// Evaluations are done by the host holding the model the scheme names: the server for the
  /// asynchronous parameter server, worker 0 otherwise (its replica is the common model).
  std::uint32_t evaluation_host() const {
    return with_server && sc.topology.mode == "async" ? static_cast<std::uint32_t>(n) : 0u;
  }

  void on_step(const StepRecord& record) {
    if (!recorder->record(record, n)) return;
    const std::int64_t done = record.step + 1;
    if (done % sc.training.eval_every != 0 && done != sc.training.steps) return;
    const std::uint32_t e = evaluation_host();
    if (clients[e].identity.empty() || clients[e].lost || ending) return;
    nlohmann::json cmd = make_header("evaluate");
    cmd["step"] = done;
    cmd["time_ns"] = now_ns();
    auto ev = exchange(e, cmd, {}, "evaluation", [](ProtocolMessage& m) {
      ParsedEvaluation p;
      p.result.accuracy = get_number(m.header, "accuracy");
      p.result.loss = get_number(m.header, "loss");
      p.result.samples = static_cast<std::int64_t>(
          get_uint(m.header, "samples", std::numeric_limits<std::int64_t>::max()));
      p.consensus = m.header.contains("consensus_distance")
                        ? get_number(m.header, "consensus_distance")
                        : 0.0;
      return p;
    });
    if (ev) recorder->evaluation(done, ns3::Simulator::Now().GetSeconds(), ev->result, ev->consensus);
  }

  // --- registration --------------------------------------------------------------------------
  void handle_registration(Incoming& in) {
    ProtocolMessage& m = in.message;
    const auto known = by_identity.find(in.identity);
    const nlohmann::json seq = m.header.value("seq", nlohmann::json());
    try {
      if (m.type() == "hello") {
        if (known != by_identity.end()) {
          throw ProtocolError("out_of_order", "already registered as " + host_name(known->second));
        }
        const std::string role = m.header.value("role", std::string());
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
          if (!with_server) {
            throw ProtocolError("bad_host", "this scenario's topology (" + sc.topology.kind +
                                                ") has no server host");
          }
          h = static_cast<std::uint32_t>(n);
        } else {
          throw ProtocolError("malformed", "\"role\" must be \"worker\" or \"server\"");
        }
        if (!clients[h].identity.empty()) {
          throw ProtocolError("bad_host", host_name(h) + " is already registered");
        }
        Client& c = clients[h];
        c.identity = in.identity;
        c.worker = role == "worker";
        by_identity[in.identity] = h;
        nlohmann::json w = make_header("welcome");
        w["seq"] = c.seq;  // 0: the client's first report answers it
        w["host"] = h;
        w["role"] = role;
        w["hosts"] = hosts;
        w["workers"] = n;
        w["server"] = with_server ? nlohmann::json(n) : nlohmann::json();
        w["time_ns"] = 0;
        w["start_ns"] = ns3::Seconds(world->network().ready_time_s()).GetNanoSeconds();
        w["max_message_bytes"] = opt.max_message_bytes;
        w["scenario"] = sc.resolved;
        if (progress) *progress << "[" << sc.name << "] " << host_name(h) << " registered\n";
        send_to(in.identity, w);
        return;
      }
      if (known == by_identity.end()) throw ProtocolError("unknown_client", "say hello first");
      const std::uint32_t h = known->second;
      Client& c = clients[h];
      if (m.type() != "report" || c.reported) {
        throw ProtocolError("out_of_order", "unexpected \"" + m.type() +
                                                "\" before the run starts (expected one report "
                                                "answering the welcome)");
      }
      if (get_uint(m.header, "seq", std::numeric_limits<std::uint64_t>::max()) != c.seq) {
        throw ProtocolError("out_of_order", "the welcome is seq " + std::to_string(c.seq));
      }
      c.initial = parse_report(m, h, 0);
      c.reported = true;
      // gradwire workers say how large their model is and where it runs (for summary.json).
      if (const auto p = get_optional_int(m.header, "parameters"); p && *p > parameters) {
        parameters = *p;
      }
      if (h == 0 && m.header.contains("device") && m.header["device"].is_string()) {
        device = m.header["device"].get<std::string>();
      }
    } catch (const ProtocolError& e) {
      reply_error(in.identity, e.code(), e.what(), seq);
    }
  }

  bool all_reported() const {
    for (const Client& c : clients) {
      if (!c.reported) return false;
    }
    return true;
  }

  std::string missing_hosts() const {
    std::string out;
    for (std::uint32_t h = 0; h < hosts; ++h) {
      if (clients[h].reported) continue;
      out += (out.empty() ? "" : ", ") + host_name(h) +
             (clients[h].identity.empty() ? " (never registered)" : " (registered, no report)");
    }
    return out;
  }

  bool register_all() {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(opt.register_timeout_s));
    while (!all_reported()) {
      check_lost_hosts();
      if (ending) return false;
      if (Clock::now() >= deadline) {
        finish_run("registration_timeout",
                   "not every host registered within " + std::to_string(opt.register_timeout_s) +
                       " s: " + missing_hosts());
        note(end_message);
        return false;
      }
      Incoming in;
      if (poll_one(kPollSliceMs, in)) handle_registration(in);
    }
    return true;
  }

  void end_clients(const nlohmann::json& summary) {
    nlohmann::json e = make_header("end");
    e["reason"] = end_reason;
    e["message"] = end_message;
    e["time_ns"] = now_ns();
    e["summary"] = summary;
    for (const Client& c : clients) {
      if (!c.identity.empty() && !c.lost) send_to(c.identity, e);
    }
  }
};

EmulatorService::EmulatorService(Scenario scenario, ServiceOptions options)
    : impl_(std::make_unique<Impl>(std::move(scenario), std::move(options))) {}

EmulatorService::~EmulatorService() = default;

std::string EmulatorService::bind() {
  Impl& s = *impl_;
  if (!s.endpoint.empty()) return s.endpoint;
  if (!s.opt.curve_secret_key_file.empty()) {
    const CurveKeyPair keys = read_curve_secret_key(s.opt.curve_secret_key_file, "--curve-secret-key");
    s.socket.set(zmq::sockopt::curve_server, 1);
    s.socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  } else if (!is_loopback_endpoint(s.opt.bind)) {
    throw ConfigError("--bind",
                      "refusing to serve on " + s.opt.bind +
                          ", which is not a loopback address, without ZeroMQ CURVE keys: make "
                          "a key pair with `gradwire curve-keygen PREFIX`, pass "
                          "--curve-secret-key PREFIX.secret here and --curve-server-key "
                          "PREFIX.public to the clients");
  }
  // Oversized messages up to twice the limit still get an error reply; beyond that ZeroMQ
  // drops the connection without reading them into memory.
  const std::uint64_t hard_limit = std::max<std::uint64_t>(2 * s.opt.max_message_bytes,
                                                           s.opt.max_message_bytes + (1u << 20));
  s.socket.set(zmq::sockopt::maxmsgsize,
               static_cast<std::int64_t>(std::min<std::uint64_t>(
                   hard_limit, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))));
  s.socket.set(zmq::sockopt::router_mandatory, 1);  // unroutable replies fail, never block
  s.socket.set(zmq::sockopt::sndtimeo, 5000);
  s.socket.set(zmq::sockopt::linger, 2000);
  try {
    s.socket.bind(s.opt.bind);
  } catch (const zmq::error_t& e) {
    throw ConfigError("--bind", "cannot bind " + s.opt.bind + ": " + e.what());
  }
  s.endpoint = s.socket.get(zmq::sockopt::last_endpoint);
  return s.endpoint;
}

ServiceResult EmulatorService::serve(const std::string& out_dir, std::ostream* progress,
                                     std::ostream* log) {
  Impl& s = *impl_;
  const Scenario& sc = s.sc;
  s.progress = progress;
  s.log = log;
  s.wall_start = Clock::now();
  bind();

  std::unique_ptr<RunDirectory> dir;
  if (!out_dir.empty()) dir = std::make_unique<RunDirectory>(out_dir, sc.name);

  // The same world an in-process run builds: same seed, same network, same Messengers.
  SimulatedWorld world(sc, s.hosts);
  s.world = &world;
  struct Forget {  // the world dies with this scope, on every exit path
    Impl& s;
    ~Forget() { s.world = nullptr; }
  } forget{s};
  for (std::uint32_t h = 0; h < s.hosts; ++h) {
    world.messengers()[h]->SetHandler([&s, h](Message&& m) { s.on_delivery(h, std::move(m)); });
  }
  if (progress) {
    *progress << "[" << sc.name << "] serving " << s.hosts << " hosts (" << s.n << " workers"
              << (s.with_server ? " + server" : "") << ") on " << s.endpoint << ", "
              << world.network().describe() << "\n"
              << std::flush;
  }

  ServiceResult result;
  const bool registered = s.register_all();
  double run_wall = 0;
  if (registered) {
    s.recorder = std::make_unique<MetricsRecorder>(sc, s.parameters, progress, s.wall_start);
    // Initial reports in host order, so simultaneous first events are ordered as in-process.
    for (std::uint32_t h = 0; h < s.hosts; ++h) s.apply_report(h, std::move(*s.clients[h].initial));
    const auto run_start = Clock::now();
    if (!s.ending) {
      s.running = true;
      ns3::Simulator::Run();
      s.running = false;
    }
    run_wall = seconds_since(run_start);
    if (s.end_reason.empty()) {
      std::string waiting;
      for (std::uint32_t h = 0; h < s.hosts; ++h) {
        if (!s.clients[h].finished) waiting += (waiting.empty() ? "" : ", ") + s.host_name(h);
      }
      s.finish_run("stalled", "nothing left to simulate while " + waiting +
                                  " still wait for messages");
      s.note(s.end_message);
    }
  }
  const double sim_end = ns3::Simulator::Now().GetSeconds();
  result.reason = s.end_reason;
  result.message = s.end_message;
  result.complete = s.end_reason == "complete";
  if (s.recorder) {
    std::uint64_t bytes_on_wire = 0;
    for (const auto& m : world.messengers()) bytes_on_wire += m->bytes_sent();
    result.summary = s.recorder->summary(sim_end, bytes_on_wire, seconds_since(s.wall_start),
                                         run_wall - s.client_wait_s);
    result.summary["network_description"] = world.network().describe();
    result.summary["device"] = s.device.empty() ? nlohmann::json() : nlohmann::json(s.device);
    result.summary["mean_staleness"] =
        s.with_server && sc.topology.mode == "async"
            ? nlohmann::json(s.staleness_count ? s.staleness_sum / static_cast<double>(s.staleness_count) : 0.0)
            : nlohmann::json();
    result.summary["service"] = {{"clients", s.hosts},
                                 {"commands", s.commands},
                                 {"deliveries", s.deliveries},
                                 {"dropped_deliveries", s.dropped},
                                 {"error_replies", s.error_replies},
                                 {"client_wait_s", s.client_wait_s}};
    result.metrics_jsonl = s.recorder->jsonl();
  }
  s.end_clients(result.complete ? result.summary : nlohmann::json());
  if (result.complete && dir) {
    write_file_atomically(dir->staging() + "/scenario.json", sc.resolved.dump(2) + "\n");
    write_file_atomically(dir->staging() + "/metrics.jsonl", result.metrics_jsonl);
    write_file_atomically(dir->staging() + "/summary.json", result.summary.dump(2) + "\n");
    dir->commit();
    result.directory = dir->final_path();
  }
  if (progress && result.complete && s.recorder) s.recorder->print_final(*progress, result.summary);
  return result;
}

}  // namespace gradwire
