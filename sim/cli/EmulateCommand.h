// `gradwire emulate SCENARIO [options] [--host N -- CMD...]... -- COMMAND ARGS...`: runs an
// unmodified program once per host of the scenario's network, each in its own network
// namespace joined to ns-3 in real time (sim/emulate/Emulation.h). Its arguments are read here
// rather than by CLI11, because the commands carry options of their own and a host's command
// ends at the next `--`.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gradwire {

struct Scenario;

/// The usage text (`gradwire emulate --help`).
std::string emulate_usage();

/// Loads a scenario for emulation. Emulation trains nothing: of a scenario it uses the network
/// and training.workers. A scenario that names neither a dataset nor a model gets synthetic data
/// and an MLP instead of the defaults, so that it does not depend on Fashion-MNIST's folder
/// existing on this machine; a dataset or model it does name is validated as `gradwire run`
/// would.
Scenario load_emulation_scenario(nlohmann::json document);

/// `args`: everything after `emulate`. Returns the exit status.
int run_emulate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gradwire
