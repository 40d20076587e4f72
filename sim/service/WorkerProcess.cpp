#include "sim/service/WorkerProcess.h"

#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include <ns3/core-module.h>
#include <ns3/node.h>
#include <torch/torch.h>

#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/ConfigError.h"
#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/TrainingScheme.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/InertEndpoint.h"
#include "nodes/transport/RemoteEndpoint.h"
#include "sim/engine/Evaluation.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/engine/TrainingSetup.h"
#include "sim/service/CurveKeys.h"
#include "sim/service/LocalEventQueue.h"
#include "sim/service/ServiceConnection.h"

namespace gradwire {

namespace {

nlohmann::json step_json(const StepRecord& r) {
  return {{"rank", r.rank},          {"step", r.step},
          {"start_s", r.start_s},    {"compute_s", r.compute_s},
          {"comm_s", r.comm_s},      {"codec_s", r.codec_s},    {"end_s", r.end_s},
          {"optimizer_s", r.optimizer_s},
          {"bytes_sent", r.bytes_sent}, {"payload_bytes", r.payload_bytes},
          {"density", r.density},    {"loss", r.loss},
          {"compute_wall_s", r.compute_wall_s}};
}

nlohmann::json update_json(const StalenessEvent& e) {
  return {{"rank", e.rank},
          {"version", e.version},
          {"staleness", e.staleness},
          {"sim_time_s", e.sim_time_s}};
}

/// Thrown to leave the command loop with an exit code and a message.
struct Exit {
  int code;
  std::string message;
};

/// The process's whole life: register, build, follow commands, end.
class WorkerClient {
 public:
  WorkerClient(const WorkerProcessOptions& options, std::ostream& err)
      : options_(options), err_(err) {}

  int run() {
    ConnectionOptions co;
    co.endpoint = options_.connect;
    if (!options_.server_key_file.empty()) {
      co.server_public_key = read_curve_public_key(options_.server_key_file, "--curve-server-key");
    }
    ServiceConnection connection(co);
    connection_ = &connection;

    nlohmann::json hello = make_header("hello");
    hello["role"] = options_.server ? "server" : "worker";
    if (!options_.server) hello["rank"] = options_.rank;
    connection.send(hello);
    ProtocolMessage welcome = await("the welcome");
    if (welcome.type() == "error") {
      throw Exit{2, "the service refused registration: " + get_string(welcome.header, "code") + ": " +
                        get_string(welcome.header, "message")};
    }
    if (welcome.type() != "welcome") throw Exit{1, "expected a welcome, got " + welcome.type()};

    const Scenario sc = load_scenario(welcome.header.at("scenario"));
    const auto& topo = sc.topology;
    if (!topo.scheme().processes) {
      throw ConfigError("topology.kind", "worker processes support " + schemes_with_processes() +
                                             "; \"" + topo.name() +
                                             "\" evaluates every worker's model "
                                             "in one place, so run it in-process");
    }
    const auto self = static_cast<std::uint32_t>(get_uint(welcome.header, "host", 1u << 30));
    const auto hosts = static_cast<std::uint32_t>(get_uint(welcome.header, "hosts", 1u << 30));
    const std::int64_t start_ns = get_int(welcome.header, "start_ns");
    torch::set_num_threads(options_.threads > 0           ? options_.threads
                           : sc.compute.threads > 0 ? sc.compute.threads
                                                    : 1);

    // The asynchronous server starts from the workers' (identical) initial parameters and
    // needs to know how many steps each worker runs: it gets stand-ins for all of them.
    const bool async_server = options_.server && topo.async();
    std::vector<int> ranks;
    if (!options_.server) ranks.push_back(options_.rank);
    if (async_server) {
      for (int r = 0; r < sc.training.workers; ++r) ranks.push_back(r);
    }
    TrainingSetup setup(sc, ranks);

    // A local simulator with no network: its event list is this process's clock.
    ns3::Simulator::Destroy();
    struct SimulatorGuard {
      ~SimulatorGuard() { ns3::Simulator::Destroy(); }
    } guard;
    LocalEventQueue::install();
    RemoteEndpoint remote(self, hosts);
    std::vector<std::unique_ptr<InertEndpoint>> others;
    auto endpoint = [&](std::uint32_t h) -> Endpoint* {
      if (h == self) return &remote;
      others.push_back(std::make_unique<InertEndpoint>(h));
      return others.back().get();
    };
    std::vector<Endpoint*> worker_endpoints;
    for (int r = 0; r < setup.workers(); ++r) worker_endpoints.push_back(endpoint(static_cast<std::uint32_t>(r)));
    Endpoint* server_endpoint =
        setup.with_server() ? endpoint(static_cast<std::uint32_t>(setup.workers())) : nullptr;
    setup.build_scheme(worker_endpoints, server_endpoint,
                       [this](const StalenessEvent& e) { updates_.push_back(e); });

    std::vector<ns3::Ptr<Worker>> stand_ins;  // never started: they only answer questions
    if (async_server) {
      for (int r = 0; r < setup.workers(); ++r) {
        stand_ins.push_back(setup.make_worker(r, worker_endpoints[r], [](const StepRecord&) {}, [](int) {}));
        setup.scheme().on_start(*stand_ins.back());
      }
    }
    ns3::Ptr<ns3::Node> node = ns3::CreateObject<ns3::Node>();
    if (!options_.server) {
      ns3::Ptr<Worker> w = setup.make_worker(
          options_.rank, &remote, [this](const StepRecord& r) { steps_.push_back(r); },
          [this](int) { finished_ = true; });
      w->SetStartTime(ns3::NanoSeconds(start_ns));
      node->AddApplication(w);
    }

    nlohmann::json first = report_header(0, remote);
    first["parameters"] = setup.parameters();
    first["device"] = setup.device_name();
    send_report(first, remote);

    for (;;) {
      ProtocolMessage m = await("a command");
      const std::string type = m.type();
      if (type == "advance") {
        const std::uint64_t seq = get_uint(m.header, "seq", ~std::uint64_t{0});
        const std::int64_t t = get_int(m.header, "time_ns");
        if (t < ns3::Simulator::Now().GetNanoSeconds()) {
          throw Exit{1, "the service asked to advance to " + std::to_string(t) +
                            " ns, before this process's clock"};
        }
        remote.set_reported_bytes_sent(get_uint(m.header, "bytes_sent", ~std::uint64_t{0}));
        const ns3::Time until = ns3::NanoSeconds(t) - ns3::Simulator::Now();
        for (const auto& d : get_array(m.header, "deliveries")) {
          Message msg;
          msg.source = static_cast<std::uint32_t>(get_uint(d, "from", hosts - 1));
          msg.kind = static_cast<std::uint32_t>(get_uint(d, "kind", ~std::uint32_t{0}));
          msg.round = static_cast<std::uint32_t>(get_uint(d, "round", ~std::uint32_t{0}));
          msg.step = get_uint(d, "step", ~std::uint64_t{0});
          const std::uint64_t size = get_uint(d, "size", ~std::uint64_t{0});
          if (get_bool(d, "data", true)) {
            msg.payload = m.take_payload();
          } else {
            msg.payload.assign(size, 0);
          }
          ns3::Simulator::Schedule(until, [&remote, msg]() mutable { remote.deliver(std::move(msg)); });
        }
        // Our events up to t (those due at t before the deliveries), then the deliveries.
        // Events they schedule for t itself run at the next command for t, after whatever
        // else the network does at t: the order an in-process run has.
        ns3::Simulator::Stop(until);
        ns3::Simulator::Run();
        send_report(report_header(seq, remote), remote);
      } else if (type == "evaluate") {
        const EvalResult r = setup.evaluate();
        nlohmann::json e = make_header("evaluation");
        e["seq"] = m.header.at("seq");
        e["accuracy"] = r.accuracy;
        e["loss"] = r.loss;
        e["samples"] = r.samples;
        if (r.top5_accuracy >= 0) e["top5_accuracy"] = r.top5_accuracy;
        if (r.perplexity >= 0) e["perplexity"] = r.perplexity;
        e["consensus_distance"] = setup.consensus_distance();
        connection.send(e);
      } else if (type == "end") {
        const std::string reason = get_string(m.header, "reason");
        if (reason == "complete") {
          if (!options_.quiet) err_ << "gradwire worker (" << who() << "): run complete\n";
          return 0;
        }
        throw Exit{1, "the service ended the run: " + reason + ": " + get_string(m.header, "message")};
      } else if (type == "error") {
        throw Exit{1, "the service rejected our message: " + get_string(m.header, "code") + ": " +
                          get_string(m.header, "message")};
      } else {
        throw Exit{1, "unexpected \"" + type + "\" from the service"};
      }
    }
  }

  std::string who() const {
    return options_.server ? std::string("server") : "worker " + std::to_string(options_.rank);
  }

 private:
  ProtocolMessage await(const std::string& what) {
    std::optional<ProtocolMessage> m = connection_->receive(options_.timeout_s);
    if (!m) {
      throw Exit{1, "no word from the service at " + options_.connect + " within " +
                        std::to_string(options_.timeout_s) + " s while waiting for " + what};
    }
    return std::move(*m);
  }

  nlohmann::json report_header(std::uint64_t seq, RemoteEndpoint& remote) {
    nlohmann::json h = make_header("report");
    h["seq"] = seq;
    outbox_ = remote.take_outbox();
    nlohmann::json sends = nlohmann::json::array();
    for (const auto& o : outbox_) {
      nlohmann::json s = message_entry(o.message, true);
      s["to"] = o.destination;
      s["time_ns"] = o.time_ns;
      sends.push_back(std::move(s));
    }
    h["sends"] = std::move(sends);
    const std::optional<std::int64_t> next = LocalEventQueue::next_event_ns();
    h["finished"] = finished_;
    h["next_ns"] = finished_ || !next ? nlohmann::json() : nlohmann::json(*next);
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& r : steps_) steps.push_back(step_json(r));
    steps_.clear();
    h["steps"] = std::move(steps);
    nlohmann::json updates = nlohmann::json::array();
    for (const auto& u : updates_) updates.push_back(update_json(u));
    updates_.clear();
    h["updates"] = std::move(updates);
    return h;
  }

  void send_report(const nlohmann::json& header, RemoteEndpoint&) {
    std::vector<const std::vector<std::uint8_t>*> payloads;
    for (const auto& o : outbox_) payloads.push_back(&o.message.payload);
    connection_->send(header, payloads);
    outbox_.clear();
  }

  const WorkerProcessOptions& options_;
  std::ostream& err_;
  ServiceConnection* connection_ = nullptr;
  std::vector<RemoteEndpoint::Outgoing> outbox_;
  std::vector<StepRecord> steps_;
  std::vector<StalenessEvent> updates_;
  bool finished_ = false;
};

}  // namespace

int run_worker_process(const WorkerProcessOptions& options, std::ostream& err) {
  if (options.exit_with_parent) {
    // A service killed hard cannot send "end"; its workers must not wait out their timeout.
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) return 1;  // the parent died before prctl took effect
  }
  WorkerClient client(options, err);
  const std::string who = client.who();
  if (!options.server && options.rank < 0) {
    err << "gradwire worker: give --rank N or --server\n";
    return 2;
  }
  try {
    return client.run();
  } catch (const Exit& e) {
    err << "gradwire worker (" << who << "): " << e.message << "\n";
    return e.code;
  } catch (const ConfigError& e) {
    err << "gradwire worker (" << who << "): error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "gradwire worker (" << who << "): error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gradwire
