// The simulated network as a service (`gradwire serve`, and the hub of `gradwire run
// --processes`): builds a scenario's ns-3 network with a Messenger on every host and lets
// clients in other processes play those hosts over ZeroMQ (sim/service/PROTOCOL.md).
//
// Time stays consistent by conservative synchronisation, one command at a time: each client
// announces the simulated instant of its next local event (or that it only waits for
// messages); the service turns that into an ns-3 event, so ns-3 never runs past an instant at
// which some client could still send. When ns-3 reaches a client's instant, or a message's
// last byte reaches a client's host, the service sends that client one command ("advance to
// t", with the delivery) and waits, inside that ns-3 event, for its report (messages sent at
// t or later, its next instant). A client's sends thus enter ns-3 exactly where an in-process
// worker's would, which makes a run with worker processes reproduce the in-process run bit for
// bit, and no message is ever delivered in a client's past.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/Scenario.h"
#include "sim/service/ProtocolFrames.h"

namespace gradwire {

struct ServiceOptions {
  /// ZeroMQ endpoint to bind; non-loopback addresses need `curve_secret_key_file`.
  std::string bind = "tcp://127.0.0.1:5555";
  /// Messages larger than this (all frames together) get a too_large error reply.
  std::uint64_t max_message_bytes = kDefaultMaxMessageBytes;
  /// A client must answer each command within this many wall seconds, or it is reported lost
  /// and the run ends.
  double client_timeout_s = 60;
  /// Every host of the scenario must have registered and reported within this many seconds.
  double register_timeout_s = 120;
  /// Z85 CURVE secret key file; when set, clients must connect with the matching public key.
  std::string curve_secret_key_file;
  /// Polled while the service waits: hosts whose client is known to be gone (a worker process
  /// that exited), so the run ends at once instead of after the timeout. May be empty.
  std::function<std::vector<std::uint32_t>()> lost_hosts;
};

struct ServiceResult {
  bool complete = false;  ///< every worker finished
  std::string reason;     ///< "complete", "client_lost", "stalled" or "registration_timeout"
  std::string message;    ///< what happened, for people
  nlohmann::json summary;        ///< as summary.json (complete runs)
  std::string metrics_jsonl;     ///< the metrics lines the workers' reports produced
  std::string directory;         ///< where outputs went ("" when none were written)
};

class EmulatorService {
 public:
  EmulatorService(Scenario scenario, ServiceOptions options);
  ~EmulatorService();
  EmulatorService(const EmulatorService&) = delete;
  EmulatorService& operator=(const EmulatorService&) = delete;

  /// Binds the socket and returns the endpoint clients connect to (a port "*" is resolved).
  /// ConfigError (exit code 2) for a non-loopback bind without CURVE keys or a bad key file.
  std::string bind();

  /// Serves one run: waits for every host to register, runs the network, ends every client
  /// with an "end" message. Writes runs/<name>/{scenario,metrics,summary} under `out_dir`
  /// (when not empty) if the run completed. Progress goes to `progress`, client problems to
  /// `log` (either may be null). Binds first if bind() was not called.
  ServiceResult serve(const std::string& out_dir, std::ostream* progress, std::ostream* log);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradwire
