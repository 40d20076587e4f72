// `gradwire emulate SCENARIO [options] [--host N -- CMD...]... -- COMMAND ARGS...`: runs an
// unmodified program once per host of the scenario's network, each in its own network
// namespace joined to ns-3 in real time (sim/emulate/Emulation.h). Its arguments are read here
// rather than by CLI11, because the commands carry options of their own and a host's command
// ends at the next `--`.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gradwire {

/// The usage text (`gradwire emulate --help`).
std::string emulate_usage();

/// `args`: everything after `emulate`. Returns the exit status.
int run_emulate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gradwire
