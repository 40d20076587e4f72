#include "sim/cli/ServiceCommands.h"

#include <ostream>

#include <CLI/CLI.hpp>

#include "common/InterruptCleanup.h"
#include "sim/cli/Cli.h"
#include "sim/cli/OptionChecks.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/service/CurveKeys.h"
#include "sim/service/EmulatorService.h"

namespace gradwire {

CLI::App* add_serve_command(CLI::App& app, ServeCommandOptions& o) {
  CLI::App* c = app.add_subcommand(
      "serve", "Serve a scenario's simulated network to external clients over ZeroMQ");
  c->add_option("file", o.file, "scenario JSON file (its network, workers and topology)")->required();
  c->add_option("--set", o.overrides, "override a scenario value: path.to.key=value (repeatable)");
  c->add_option("--bind", o.bind,
                "ZeroMQ endpoint (default tcp://127.0.0.1:5555; non-loopback needs "
                "--curve-secret-key)")
      ->check(endpoint_port());
  c->add_option("--out", o.out_dir, "parent folder for the run folder (default: output.dir)");
  c->add_option("--max-message-bytes", o.max_message_bytes,
                "larger client messages get a too_large error (default 64 MiB)")
      ->check(CLI::PositiveNumber);
  c->add_option("--client-timeout", o.client_timeout_s,
                "seconds a client may take to answer a command (its welcome included) before "
                "it is reported lost (or, before the run, its host is freed)")
      ->check(duration_seconds());
  c->add_option("--register-timeout", o.register_timeout_s,
                "seconds for every host to register")
      ->check(duration_seconds());
  c->add_option("--curve-secret-key", o.curve_secret_key_file,
                "Z85 CURVE secret key file (from `gradwire curve-keygen`): encrypt, and let only "
                "clients that know the public key connect");
  c->add_flag("--quiet,-q", o.quiet, "no progress lines on stderr");
  return c;
}

int run_serve_command(const ServeCommandOptions& o, std::ostream& out, std::ostream& err) {
  nlohmann::json doc = read_scenario_file(o.file);
  apply_overrides(doc, o.overrides);
  Scenario scenario = load_scenario(doc);
  const std::string parent = o.out_dir.empty() ? scenario.output_dir : o.out_dir;
  ServiceOptions so;
  so.bind = o.bind;
  so.max_message_bytes = o.max_message_bytes;
  so.client_timeout_s = o.client_timeout_s;
  so.register_timeout_s = o.register_timeout_s;
  so.curve_secret_key_file = o.curve_secret_key_file;
  EmulatorService service(scenario, so);
  // Once the run folder is in place the run has succeeded: a late SIGINT is not exit 130.
  InterruptCleanup::finish_with_commit();
  const std::string endpoint = service.bind();
  // One line on stdout, flushed, so scripts can wait for it before starting clients.
  out << "serving " << scenario.name << " on " << endpoint << std::endl;
  const ServiceResult r = service.serve(parent, o.quiet ? nullptr : &err, &err);
  if (!r.complete) {
    err << "error: the run did not complete (" << r.reason << "): " << r.message << "\n";
    return kExitFailure;
  }
  out << "results: " << r.directory << "\n";
  return kExitOk;
}

CLI::App* add_worker_command(CLI::App& app, WorkerProcessOptions& o) {
  CLI::App* c = app.add_subcommand(
      "worker", "Run one worker (or the parameter server) of a served scenario as this process");
  c->add_option("--connect", o.connect, "the service's endpoint, e.g. tcp://127.0.0.1:5555")
      ->required()
      ->check(endpoint_port());
  auto* rank = c->add_option("--rank", o.rank, "worker rank to play")->check(CLI::NonNegativeNumber);
  auto* server = c->add_flag("--server", o.server, "play the parameter server host");
  rank->excludes(server);
  c->add_option("--timeout", o.timeout_s, "seconds to wait for the service's next command")
      ->check(duration_seconds());
  c->add_option("--curve-server-key", o.server_key_file,
                "the service's Z85 CURVE public key file (services on non-loopback addresses)");
  c->add_option("--threads", o.threads, "LibTorch threads (default: compute.threads, else 1)")
      ->check(CLI::NonNegativeNumber);
  c->add_flag("--quiet,-q", o.quiet, "say nothing on success");
  c->add_flag("--exit-with-parent", o.exit_with_parent,
              "end when the parent process ends (used by `run --processes`)");
  return c;
}

CLI::App* add_keygen_command(CLI::App& app, KeygenCommandOptions& o) {
  CLI::App* c = app.add_subcommand(
      "curve-keygen", "Write a ZeroMQ CURVE key pair PREFIX.secret / PREFIX.public for `serve`");
  c->add_option("prefix", o.prefix, "path prefix of the two key files")->required();
  return c;
}

int run_keygen_command(const KeygenCommandOptions& o, std::ostream& out) {
  const CurveKeyPair keys = write_curve_keypair(o.prefix);
  out << "wrote " << o.prefix << ".secret (keep it private) and " << o.prefix
      << ".public (give it to clients): " << keys.public_key << "\n";
  return kExitOk;
}

}  // namespace gradwire
