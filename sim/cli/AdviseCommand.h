// `gradwire advise SCENARIO`: which codec gets this scenario to its target fastest? Screens one
// codec per family on a prefix of the scenario within a wall-time budget, projects each to the
// target (analysis/advise.py), ranks them and writes advice.md, advice.json and a report.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gradwire {

struct AdviseCommandOptions {
  std::string file;
  double budget_minutes = 10;
  int jobs = 0;  ///< 0: one run per core
  std::string out_dir;  ///< parent of advise-<name>/ (default: the scenario's output.dir)
  std::vector<std::string> overrides;
  bool quiet = false;
  std::string rank_by = "time";  ///< "time" or "energy" (to target)
};

CLI::App* add_advise_command(CLI::App& app, AdviseCommandOptions& options);
int run_advise_command(const AdviseCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gradwire
