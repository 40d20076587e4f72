// `gradwire run --processes`: the same run as `gradwire run`, with the network in this process
// (an EmulatorService on a loopback port) and every worker (and the parameter server) in its
// own `gradwire worker` process. Results are written exactly as an in-process run writes
// them; with compute.mode fixed or profile they are the same bit for bit.
#pragma once

#include <iosfwd>
#include <string>

#include "sim/engine/Engine.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

struct ProcessRunOptions {
  std::string executable;           ///< the gradwire binary to start workers from ("" = this one)
  double client_timeout_s = 300;    ///< longest a worker may take to answer one command
  double register_timeout_s = 300;  ///< workers load their data before they report
};

/// Runs `scenario` with one process per host. ConfigError for topologies that need every
/// worker's model in one place (gossip, leader); std::runtime_error when the run fails (a
/// worker process died or stopped answering: the message says which); outputs only on success.
RunResult run_with_processes(const Scenario& scenario, const std::string& out_dir,
                             std::ostream* progress, std::ostream& err,
                             const ProcessRunOptions& options = {});

}  // namespace gradwire
