// `gradwire serve`, `gradwire worker` and `gradwire curve-keygen`: the simulated network as a
// ZeroMQ service, one worker as its own process, and the keys a non-loopback service needs.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "sim/service/ProtocolFrames.h"
#include "sim/service/WorkerProcess.h"

namespace CLI {
class App;
}

namespace gradwire {

struct ServeCommandOptions {
  std::string file;
  std::vector<std::string> overrides;
  std::string bind = "tcp://127.0.0.1:5555";
  std::string out_dir;
  std::uint64_t max_message_bytes = kDefaultMaxMessageBytes;
  double client_timeout_s = 60;
  double register_timeout_s = 120;
  std::string curve_secret_key_file;
  bool quiet = false;
};

struct KeygenCommandOptions {
  std::string prefix;
};

CLI::App* add_serve_command(CLI::App& app, ServeCommandOptions& options);
int run_serve_command(const ServeCommandOptions& options, std::ostream& out, std::ostream& err);

CLI::App* add_worker_command(CLI::App& app, WorkerProcessOptions& options);

CLI::App* add_keygen_command(CLI::App& app, KeygenCommandOptions& options);
int run_keygen_command(const KeygenCommandOptions& options, std::ostream& out);

}  // namespace gradwire
