// Runs one command per emulated host and watches them: each in its own process group inside
// its host's namespace (`ip netns exec`), stdout and stderr streamed line by line with the
// host's label in front (a line longer than kMaxOutputLineBytes is cut, with a marker). The
// first command to fail decides the exit status, and the others are then stopped (a
// distributed job whose peer died would otherwise wait forever); so are all of them on an
// interruption, an abort or the timeout. SIGTERM first, SIGKILL to the whole process group
// after a grace period, and at the end SIGKILL to every group and to every process left in
// the hosts' namespaces (detached ones included), so nothing outlives the run.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <mutex>
#include <string>
#include <vector>

#include "sim/emulate/HostCommand.h"

namespace gradwire {

/// The longest output line passed on whole; the rest of a longer line is dropped and counted
/// ("[... N bytes cut]"), so a command printing without newlines costs bounded memory.
constexpr std::size_t kMaxOutputLineBytes = 64 * 1024;

enum class RunOutcome {
  kCompleted,      ///< every command ended (successfully or not) on its own
  kTimedOut,       ///< --timeout passed
  kInterrupted,    ///< SIGINT / SIGTERM to the emulator
  kAborted,        ///< the emulator stopped them (ns-3 fell behind the wall clock)
};

struct CommandResult {
  bool started = false;
  bool finished = false;
  int exit_code = -1;  ///< exit status, or 128 + signal
  double wall_s = 0;   ///< from start to exit
};

class CommandRunner {
 public:
  /// `timeout_s` <= 0: no timeout.
  CommandRunner(std::ostream& out, double timeout_s);
  ~CommandRunner();
  CommandRunner(const CommandRunner&) = delete;
  CommandRunner& operator=(const CommandRunner&) = delete;

  /// Thread-safe signals to run(): the network is up (start the commands), the emulator was
  /// interrupted, or it must stop.
  void notify_ready();
  void interrupt(int signal);
  void abort();

  /// Blocks until the network is ready (or a stop arrives), runs the commands and returns
  /// when every one has ended.
  void run(const std::vector<HostCommand>& commands);

  RunOutcome outcome() const { return outcome_; }
  int interrupt_signal() const { return signal_; }
  const std::vector<CommandResult>& results() const { return results_; }
  /// Index of the first command that failed, or -1.
  int first_failure() const { return first_failure_; }

 private:
  struct Child;
  void post(char message);
  void start(const std::vector<HostCommand>& commands, std::vector<Child>& children);
  void stop_all(std::vector<Child>& children, int signal);
  void pump(Child& child, const std::string& label);
  void end_line(Child& child, const std::string& label);
  void kill_namespaces(const std::vector<HostCommand>& commands);

  std::ostream& out_;
  std::mutex out_mutex_;
  double timeout_s_;
  int control_[2] = {-1, -1};
  RunOutcome outcome_ = RunOutcome::kCompleted;
  std::atomic<int> signal_{0};
  std::vector<CommandResult> results_;
  int first_failure_ = -1;
};

}  // namespace gradwire
