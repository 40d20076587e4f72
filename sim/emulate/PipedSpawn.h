// Starts a program with stdin on /dev/null and stdout and stderr on one pipe, the way the
// emulator runs both `ip` and the hosts' commands. The signals InterruptCleanup blocks in every
// thread are unblocked and set to their defaults in the child, and the child is killed
// (SIGKILL) when the thread that started it ends, so a gradwire killed with SIGKILL takes its
// commands with it (their own children are found by namespace: NamespaceProcesses.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gradwire {

struct PipedProcess {
  pid_t pid = -1;
  int output = -1;    ///< read end of the child's stdout + stderr (close-on-exec)
  std::string error;  ///< why it could not start; empty when pid > 0
};

/// `argv[0]` is looked up on PATH. `environment` null: this process's environment.
/// `own_group`: the child leads a process group of its own, so a signal to -pid reaches
/// everything it starts.
PipedProcess spawn_piped(const std::vector<std::string>& argv,
                         const std::vector<std::string>* environment, bool own_group);

}  // namespace gradwire
