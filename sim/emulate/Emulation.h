// `gradwire emulate`: the scenario's network in ns-3's real-time simulator, one Linux network
// namespace per host whose TAP device is joined to that host's ns-3 device (TapLink), and the
// user's unmodified program run once per host inside its namespace (CommandRunner). The lag of
// ns-3 behind the wall clock is watched all run long (RealTimeMonitor). Namespaces, TAPs and
// processes are removed on every exit path, and what an emulator killed with SIGKILL left is
// removed by the next one (StaleEmulations); the run folder gets summary.json (lag, per-host
// bytes and packets, exit codes) and the resolved scenario.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace gradwire {

struct Scenario;

/// The default of --max-lag, milliseconds.
constexpr double kDefaultMaxLagMs = 10;

struct EmulationOptions {
  std::vector<std::string> command;  ///< the default command (every host without its own)
  std::map<std::size_t, std::vector<std::string>> host_commands;  ///< --host N -- ...
  std::string out_dir;      ///< parent of the run folder
  double max_lag_s = kDefaultMaxLagMs / 1e3;  ///< stop when ns-3 falls this far behind the wall clock
  double timeout_s = 0;     ///< stop the commands after this many seconds; 0: never
  int master_port = 29500;  ///< MASTER_PORT
  /// The hosts' TCP congestion control (CongestionControl.h); empty: the simulator's CUBIC.
  std::string congestion_control;
  bool quiet = false;       ///< no progress lines
};

/// Exit statuses of an emulation besides the commands' own.
constexpr int kEmulationTimedOut = 124;  ///< as timeout(1)
constexpr int kEmulationLagged = 3;      ///< ns-3 fell behind --max-lag

struct EmulationResult {
  int exit_code = 0;
  std::string directory;  ///< the run folder
};

/// Checks the commands against the scenario's hosts (ConfigError naming the option).
void check_emulation_commands(const Scenario& scenario, const EmulationOptions& options);

/// Runs the emulation. Command output goes to `out`, the emulator's own lines to `err`.
/// EmulationError when the machine refuses a setup step (nothing is left behind).
EmulationResult run_emulation(const Scenario& scenario, const EmulationOptions& options,
                              std::ostream& out, std::ostream& err);

}  // namespace gradwire
