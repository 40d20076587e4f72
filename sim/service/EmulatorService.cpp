#include "sim/service/EmulatorService.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <ostream>

#include <ns3/core-module.h>

#include "common/AtomicOutput.h"
#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "netmodels/Network.h"
#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/Worker.h"
#include "sim/engine/SimulatedWorld.h"
#include "sim/service/ClockSynchronizer.h"
#include "sim/service/CurveKeys.h"
#include "sim/service/HostLayout.h"
#include "sim/service/PeerConnections.h"
#include "sim/service/ReportParser.h"
#include "sim/service/ServiceMetrics.h"
#include "sim/service/ServiceRegistration.h"

namespace gradwire {

namespace {

// How often a waiting service looks at the lost-hosts hook and its deadlines.
constexpr int kPollSliceMs = 50;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

// The socket loop: every message from a client is received here and either handed to the
// registration (before the run) or checked as the answer to the one command outstanding.
struct EmulatorService::Impl final : ClockSynchronizer::Exchange {
  struct Incoming {
    std::string identity;
    ProtocolMessage message;
    int fd = -1;  // the connection it came from (-1: not known)
  };

  Scenario sc;
  ServiceOptions opt;
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::router};
  PeerConnections peers{context, socket};  // before bind: every connection is seen accepted
  std::string endpoint;

  HostLayout layout;
  ReportParser parser;
  ServiceRegistration registration;
  ServiceMetrics metrics;
  ClockSynchronizer sync;

  std::ostream* log = nullptr;
  Clock::time_point wall_start;
  std::map<std::string, Clock::time_point> welcomed_at;  // registered clients, before the run

  Impl(Scenario scenario, ServiceOptions options)
      : sc(std::move(scenario)),
        opt(std::move(options)),
        layout(HostLayout::of(sc)),
        parser(layout, opt.max_message_bytes),
        registration(sc, layout, opt.max_message_bytes, parser),
        metrics(sc, layout),
        sync(layout, registration, metrics, *this) {}

  void note(const std::string& line) override {
    if (log) *log << "gradwire serve: " << line << "\n" << std::flush;
  }

  // --- sending --------------------------------------------------------------------------
  /// Sends to a client; false when ZeroMQ cannot route to it any more.
  bool send_to(const std::string& identity, const nlohmann::json& header,
               const ClockSynchronizer::Payloads& payloads = {}) {
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
    metrics.count_error_reply();
    const auto host = registration.host_of(identity);
    note("error reply (" + code + ") to " +
         (host ? layout.host_name(*host) : std::string("an unregistered client")) + ": " +
         message);
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
    // The routing id frame is made by the ROUTER; the frames after it came off the connection.
    in.fd = -1;
    if (frames.size() > 1) {
      try {
        in.fd = frames[1].get(ZMQ_SRCFD);
      } catch (const zmq::error_t&) {
      }
    }
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
      if (h < layout.hosts && !sync.lost(h)) sync.lose(h, "its process exited");
    }
  }

  /// A message from a client other than the one whose answer is awaited.
  void reply_stray(const Incoming& in, std::uint32_t awaited) {
    const bool known = registration.host_of(in.identity).has_value();
    if (!known && in.message.type() == "hello") {
      reply_error(in.identity, "registration_closed",
                  "the run has started: every host is taken");
    } else if (!known) {
      reply_error(in.identity, "unknown_client", "say hello first");
    } else {
      reply_error(in.identity, "out_of_order",
                  "unexpected \"" + in.message.type() + "\": the service is waiting for " +
                      layout.host_name(awaited) + "; clients send only in answer to a command",
                  echoable_seq(in.message.header));
    }
  }

  /// Sends `command` to host `h` and waits for its answer of type `expect`, which `parse`
  /// checks (throwing ProtocolError). Invalid answers get an error reply and the wait goes on;
  /// other clients' messages get error replies. nullopt when the client is lost.
  template <class Parse>
  auto exchange(std::uint32_t h, nlohmann::json command,
                const ClockSynchronizer::Payloads& payloads, const std::string& expect,
                Parse parse) -> std::optional<decltype(parse(std::declval<ProtocolMessage&>()))> {
    const std::string& identity = registration.identity(h);
    command["seq"] = registration.next_seq(h);
    metrics.count_command();
    const auto wait_start = Clock::now();
    struct WaitCharge {
      ServiceMetrics& metrics;
      Clock::time_point start;
      ~WaitCharge() { metrics.add_client_wait(seconds_since(start)); }
    } charge{metrics, wait_start};
    if (!send_to(identity, command, payloads)) {
      sync.lose(h, "cannot send to it");
      return std::nullopt;
    }
    const auto deadline =
        wait_start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(opt.client_timeout_s));
    for (;;) {
      check_lost_hosts();
      if (sync.lost(h)) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        sync.lose(h, "no answer to \"" + command["type"].get<std::string>() + "\" within " +
                         std::to_string(opt.client_timeout_s) + " s");
        return std::nullopt;
      }
      Incoming in;
      if (!poll_one(static_cast<int>(std::min<std::int64_t>(left.count(), kPollSliceMs)), in)) continue;
      if (in.identity != identity) {
        reply_stray(in, h);
        continue;
      }
      const nlohmann::json seq = echoable_seq(in.message.header);
      try {
        if (in.message.type() != expect) {
          throw ProtocolError("out_of_order", "expected \"" + expect + "\" in answer to \"" +
                                                  command["type"].get<std::string>() + "\", got \"" +
                                                  in.message.type() + "\"");
        }
        if (get_uint(in.message.header, "seq", std::numeric_limits<std::uint64_t>::max()) !=
            registration.seq(h)) {
          throw ProtocolError("out_of_order", "answer carries seq " +
                                                  json_brief(in.message.header.value(
                                                      "seq", nlohmann::json())) +
                                                  ", the pending command is seq " +
                                                  std::to_string(registration.seq(h)));
        }
        return parse(in.message);
      } catch (const ProtocolError& e) {
        reply_error(in.identity, e.code(), e.what(), seq);
      }
    }
  }

  std::optional<ParsedReport> exchange_report(std::uint32_t h, nlohmann::json command,
                                              const ClockSynchronizer::Payloads& payloads,
                                              std::int64_t command_ns) override {
    return exchange(h, std::move(command), payloads, "report", [&](ProtocolMessage& m) {
      return parser.parse_report(m, h, command_ns);
    });
  }

  std::optional<ParsedEvaluation> exchange_evaluation(std::uint32_t h,
                                                      nlohmann::json command) override {
    return exchange(h, std::move(command), {}, "evaluation", [](ProtocolMessage& m) {
      return ReportParser::parse_evaluation(m);
    });
  }

  // --- registration ---------------------------------------------------------------------
  void handle_registration(Incoming& in) {
    const nlohmann::json seq = echoable_seq(in.message.header);
    try {
      if (auto welcome = registration.handle(in.identity, in.message)) send_to(in.identity, *welcome);
    } catch (const ProtocolError& e) {
      reply_error(in.identity, e.code(), e.what(), seq);
    }
  }

  /// Frees the hosts of clients whose connection has closed before the run started.
  void free_closed_registrations() {
    for (const std::string& identity : peers.drain()) {
      if (const auto h = registration.release(identity)) {
        note(layout.host_name(*h) + " is free again: its client disconnected before the run "
                                    "started");
      }
      welcomed_at.erase(identity);
    }
  }

  /// Frees the hosts of clients that did not answer their welcome within --client-timeout, as
  /// any command must be answered: a client that is connected but silent holds no host for ever.
  void free_silent_registrations() {
    for (const auto& [h, identity] : registration.unreported_registrations()) {
      const auto it = welcomed_at.find(identity);
      if (it == welcomed_at.end() || seconds_since(it->second) <= opt.client_timeout_s) continue;
      registration.release(identity);
      peers.forget(identity);
      welcomed_at.erase(it);
      note(layout.host_name(h) + " is free again: its client sent no report within " +
           std::to_string(opt.client_timeout_s) + " s of its welcome");
    }
  }

  void register_message(Incoming& in) {
    // Closes that happened before this message was sent are queued by now (PeerConnections).
    free_closed_registrations();
    if (in.message.type() == "hello" && in.fd >= 0 && peers.closed(in.fd)) {
      note("a hello from a client that has already disconnected was ignored");
      return;
    }
    const bool known = registration.host_of(in.identity).has_value();
    handle_registration(in);
    if (!known && registration.host_of(in.identity)) {
      if (in.fd >= 0) peers.remember(in.identity, in.fd);
      welcomed_at[in.identity] = Clock::now();
    }
  }

  bool register_all() {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(opt.register_timeout_s));
    while (!registration.all_reported()) {
      check_lost_hosts();
      if (sync.ending()) return false;
      free_closed_registrations();
      free_silent_registrations();
      if (Clock::now() >= deadline) {
        sync.finish_run("registration_timeout",
                        "not every host registered within " +
                            std::to_string(opt.register_timeout_s) +
                            " s: " + registration.missing_hosts());
        note(sync.end_message());
        return false;
      }
      Incoming in;
      if (poll_one(kPollSliceMs, in)) register_message(in);
    }
    // Every host is played by a client that answered: nothing more to map.
    peers.stop();
    return true;
  }

  void end_clients(const nlohmann::json& summary) {
    nlohmann::json e = make_header("end");
    e["reason"] = sync.end_reason();
    e["message"] = sync.end_message();
    e["time_ns"] = ClockSynchronizer::now_ns();
    e["summary"] = summary;
    for (std::uint32_t h = 0; h < layout.hosts; ++h) {
      const std::string& identity = registration.identity(h);
      if (!identity.empty() && !sync.lost(h)) send_to(identity, e);
    }
  }
};

namespace {

/// Participation samples every round in the one place that holds every worker; a client of
/// the service trains by its own rules, so the section would be silently ignored.
Scenario served(Scenario scenario) {
  if (scenario.participation.enabled) {
    throw ConfigError("participation", "participation is simulated in-process only (gradwire "
                                       "run), not through the service or --processes");
  }
  return scenario;
}

}  // namespace

EmulatorService::EmulatorService(Scenario scenario, ServiceOptions options)
    : impl_(std::make_unique<Impl>(served(std::move(scenario)), std::move(options))) {}

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
  s.log = log;
  s.wall_start = Clock::now();
  bind();

  std::unique_ptr<RunDirectory> dir;
  if (!out_dir.empty()) dir = std::make_unique<RunDirectory>(out_dir, sc.name);

  // The same world an in-process run builds: same seed, same network, same Messengers.
  SimulatedWorld world(sc, s.layout.hosts);
  s.sync.attach(world);
  struct Detach {  // the world dies with this scope, on every exit path
    ClockSynchronizer& sync;
    ~Detach() { sync.detach(); }
  } detach{s.sync};
  s.registration.open(ns3::Seconds(world.network().ready_time_s()).GetNanoSeconds(), progress);
  if (progress) {
    *progress << "[" << sc.name << "] serving " << s.layout.hosts << " hosts ("
              << s.layout.workers << " workers" << (s.layout.with_server ? " + server" : "")
              << ") on " << s.endpoint << ", " << world.network().describe() << "\n"
              << std::flush;
  }

  ServiceResult result;
  const bool registered = s.register_all();
  double run_wall = 0;
  if (registered) {
    s.metrics.start(s.registration.parameters(), progress, s.wall_start);
    // Initial reports in host order, so simultaneous first events are ordered as in-process.
    for (std::uint32_t h = 0; h < s.layout.hosts; ++h) {
      s.sync.apply_report(h, s.registration.take_initial(h));
    }
    const auto run_start = Clock::now();
    s.sync.run();
    run_wall = seconds_since(run_start);
    s.sync.end_if_stalled();
  }
  const double sim_end = ns3::Simulator::Now().GetSeconds();
  result.reason = s.sync.end_reason();
  result.message = s.sync.end_message();
  result.complete = result.reason == "complete";
  if (s.metrics.started()) {
    result.summary = s.metrics.summary(world, sim_end, run_wall, s.registration.device());
    result.metrics_jsonl = s.metrics.jsonl();
  }
  s.end_clients(result.complete ? result.summary : nlohmann::json());
  if (result.complete && dir) {
    write_file_atomically(dir->staging() + "/scenario.json", sc.resolved.dump(2) + "\n");
    write_file_atomically(dir->staging() + "/metrics.jsonl", result.metrics_jsonl);
    write_file_atomically(dir->staging() + "/summary.json", result.summary.dump(2) + "\n");
    dir->commit();
    result.directory = dir->final_path();
  }
  if (progress && result.complete && s.metrics.started()) {
    s.metrics.print_final(*progress, result.summary);
  }
  return result;
}

}  // namespace gradwire
