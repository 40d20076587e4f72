// `gradwire worker`: one host of a scenario (a worker rank, or the parameter server) as its own
// process, against an emulator service (`gradwire serve`). It gets the scenario from the
// service's welcome, builds the same model, shard, codec and scheme an in-process run builds
// (TrainingSetup), and runs its Worker application on a local ns-3 simulator that has no
// network: its event queue is the process's clock. The service says when that clock may
// advance ("advance to t", with any message that arrived at t); the process runs its events up
// to t, then reports what it sent and when its next event is due.
#pragma once

#include <iosfwd>
#include <string>

namespace gradwire {

struct WorkerProcessOptions {
  std::string connect;          ///< service endpoint
  int rank = -1;                ///< worker rank, or -1 with `server`
  bool server = false;          ///< play the parameter server host
  double timeout_s = 300;       ///< longest wait for the service's next command
  std::string server_key_file;  ///< CURVE public key of the service (non-loopback services)
  int threads = 0;              ///< LibTorch threads; 0: compute.threads, else 1
  bool quiet = false;
  /// End with the parent process (`run --processes` starts workers so; Linux prctl).
  bool exit_with_parent = false;
};

/// Runs the process's part of the run. Returns an exit code: 0 when the service ended the run
/// as complete, 2 for bad input (refused registration, unsupported scenario), 1 otherwise.
int run_worker_process(const WorkerProcessOptions& options, std::ostream& err);

}  // namespace gradwire
