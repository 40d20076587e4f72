// iproute2's `ip`, run as a child process: the one tool that makes and configures network
// namespaces, links, addresses, routes and neighbours the way an administrator would, so what
// the emulator sets up can be inspected and reproduced with the same commands.
#pragma once

#include <string>
#include <vector>

#include "sim/emulate/EmulationError.h"

namespace gradwire {

/// Runs `ip ARGS...`; EmulationError quoting the command and what `ip` printed when it fails.
void run_ip(const std::vector<std::string>& args);

/// Runs `ip ARGS...` for clean-up: returns whether it succeeded and never throws.
bool try_ip(const std::vector<std::string>& args) noexcept;

/// Whether an `ip` program is on PATH.
bool ip_available();

}  // namespace gradwire
