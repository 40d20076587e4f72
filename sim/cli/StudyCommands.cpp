#include "sim/cli/StudyCommands.h"

#include <cstdlib>
#include <filesystem>
#include <ostream>

#include <CLI/CLI.hpp>

#include "common/AtomicOutput.h"
#include "common/ConfigError.h"
#include "common/SelfExecutable.h"
#include "sim/cli/AnalysisScripts.h"
#include "sim/cli/Cli.h"
#include "sim/study/SweepRunner.h"

namespace gradwire {

namespace fs = std::filesystem;

CLI::App* add_sweep_command(CLI::App& app, SweepCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run a family of scenarios (grid/zip axes, seeds) in parallel, resumable");
  cmd->add_option("file", o.file, "sweep JSON file")->required();
  cmd->add_option("-j,--jobs", o.jobs, "runs at once (default 1)")->check(CLI::Range(1, 256));
  cmd->add_option("--out", o.out_dir, "parent folder of the sweep folder (default runs)");
  CLI::Option* slurm = cmd->add_flag(
      "--emit-slurm", o.emit_slurm,
      "write <sweep>/sweep.slurm (a Slurm array job) instead of running");
  cmd->add_flag("--collect", o.collect,
                "run nothing: rewrite results.csv from the runs' summary.json files (each task "
                "of the Slurm array does this when it ends)")
      ->excludes(slurm);
  cmd->add_flag("--quiet,-q", o.quiet, "no progress lines");
  cmd->add_flag("--no-replay", o.no_replay,
                "train every run, even runs that differ only in their network (by default the "
                "first of them trains and records a step trace and the others replay it)");
  return cmd;
}

int run_sweep_command(const SweepCommandOptions& o, std::ostream& out, std::ostream& err) {
  SweepPlan plan = SweepPlan::load(o.file);
  // Checked as `run` checks its folder, before anything is written: a file, a read-only mount
  // or /proc is a clear exit 2, not a filesystem error from deep in the runner.
  // The sweep folder itself too: a file of the sweep's name there is no place for its runs.
  const std::string folder = (fs::path(o.out_dir) / plan.name).string();
  for (const std::string& dir : {o.out_dir, folder}) {
    const std::string problem = prepare_output_parent(dir);
    if (!problem.empty()) {
      throw ConfigError("--out", "expected a folder where the sweep folder can be made; " + dir +
                                     ": " + problem);
    }
  }
  SweepOptions options;
  options.jobs = o.jobs;
  options.out_dir = o.out_dir;
  options.executable = self_executable();
  options.sweep_file = o.file;
  options.emit_slurm = o.emit_slurm;
  options.collect = o.collect;
  options.replay = !o.no_replay;
  SweepRunner runner(std::move(plan), options);
  const SweepOutcome outcome = runner.run(o.quiet ? nullptr : &err);
  if (o.collect) {
    out << "results: " << outcome.directory << "/results.csv (" << outcome.skipped << " of "
        << outcome.runs << " runs have results)\n";
    return kExitOk;
  }
  out << "results: " << outcome.directory << "/results.csv (" << outcome.finished << " ran, "
      << outcome.skipped << " skipped, " << outcome.failed << " failed";
  if (outcome.busy) out << ", " << outcome.busy << " running in another sweep process";
  out << ")\n";
  return outcome.failed ? kExitFailure : kExitOk;
}

CLI::App* add_report_command(CLI::App& app, ReportCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "report", "Plot run or sweep folders into report.html with PNG/SVG figures");
  cmd->add_option("dirs", o.dirs, "run folders, sweep folders, or folders holding them")
      ->required();
  cmd->add_option("--out", o.out_dir, "report folder")->required();
  cmd->add_option("--reference", o.reference,
                  "reference for speedups, e.g. codec=none,rate=10Gbps or name=RUN "
                  "(default: dense on the fastest network)");
  return cmd;
}

int run_report_command(const ReportCommandOptions& o, std::ostream& out, std::ostream& err) {
  for (const auto& d : o.dirs) {
    if (!fs::is_directory(d)) throw ConfigError("(report)", "expected a folder, got " + d);
  }
  const std::string python = find_matplotlib_python();
  if (python.empty()) {
    err << "error: no Python with matplotlib found (tried $GRADWIRE_PYTHON, /usr/bin/python3, "
           "python3). Install it with: sudo apt-get install python3-matplotlib\n";
    return kExitFailure;
  }
  std::vector<std::string> argv = {python, analysis_dir() + "/report.py", "--out", o.out_dir};
  if (!o.reference.empty()) {
    argv.push_back("--reference");
    argv.push_back(o.reference);
  }
  argv.insert(argv.end(), o.dirs.begin(), o.dirs.end());
  const int code = run_child_process(argv, false);
  if (code == 2) return kExitBadInput;  // report.py named the input and what it expected
  if (code != 0) {
    err << "error: report generation failed (exit " << code << ")\n";
    return kExitFailure;
  }
  out << "report: " << o.out_dir << "/report.html\n";
  return kExitOk;
}

}  // namespace gradwire
