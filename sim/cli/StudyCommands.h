// `gradwire sweep` and `gradwire report`: families of runs and their plotted reports.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gradwire {

struct SweepCommandOptions {
  std::string file;
  int jobs = 1;
  std::string out_dir = "runs";
  bool emit_slurm = false;
  bool collect = false;
  bool quiet = false;
  bool no_replay = false;
};

struct ReportCommandOptions {
  std::vector<std::string> dirs;
  std::string out_dir;
  std::string reference;
};

CLI::App* add_sweep_command(CLI::App& app, SweepCommandOptions& options);
int run_sweep_command(const SweepCommandOptions& options, std::ostream& out, std::ostream& err);

CLI::App* add_report_command(CLI::App& app, ReportCommandOptions& options);
int run_report_command(const ReportCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gradwire
