// What emulators that no longer run left behind: a gradwire emulate killed with SIGKILL (or a
// machine's OOM killer) cannot remove its namespaces, and the processes its commands detached
// keep running inside them. Namespaces are named gradwire-<pid>-h<i> and TAPs gw<pid>t<i>
// after the emulator's pid; an emulator is gone when its lease (EmulationLease) is free, or,
// without a lease file, when no process has its pid.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace gradwire {

struct StaleEmulation {
  pid_t emulator = 0;
  std::vector<std::string> namespaces;  ///< removed (`ip netns del`)
  std::vector<std::string> taps;        ///< removed (`ip link del`)
  std::size_t processes = 0;            ///< killed inside those namespaces
  std::vector<std::string> failures;    ///< what could not be removed, and why
};

/// Finds and removes everything of emulators that no longer run: their processes (SIGKILL to
/// every process in their namespaces), their namespaces, their TAPs and their lease files.
/// Never touches a live emulator's. Call before this process makes namespaces of its own: a
/// namespace named after this process's pid is taken for a dead predecessor's.
std::vector<StaleEmulation> remove_stale_emulations();

/// One line per emulator on `err` saying what was removed ("emulate: removed ...").
void report_stale_emulations(const std::vector<StaleEmulation>& removed, std::ostream& err);

}  // namespace gradwire
