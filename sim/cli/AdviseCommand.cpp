#include "sim/cli/AdviseCommand.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "common/AtomicOutput.h"
#include "common/ConfigError.h"
#include "common/SelfExecutable.h"
#include "sim/cli/AnalysisScripts.h"
#include "sim/cli/Cli.h"
#include "sim/cli/OptionChecks.h"
#include "sim/engine/ComputeTime.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/study/CodecScreening.h"
#include "sim/study/SweepRunner.h"

namespace gradwire {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Wall seconds kept aside for the projection and the report after the screening.
constexpr double kReportSeconds = 15;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o.precision(s < 10 ? 2 : 3);
  o << s << " s";
  return o.str();
}

SweepOutcome run_sweep(const nlohmann::json& doc, const std::string& parent, int jobs,
                       std::ostream* progress, SweepPlan* plan_out) {
  SweepPlan plan = SweepPlan::expand(doc, ".");
  if (plan_out) *plan_out = plan;
  SweepOptions options;
  options.jobs = jobs;
  options.out_dir = parent;
  options.executable = self_executable();
  SweepRunner runner(std::move(plan), options);
  return runner.run(progress);
}

// Wall seconds of the pilot's whole process: measured when it ran now, else (a resumed advise)
// its recorded run time plus the start-up a run of this kind takes here.
double pilot_elapsed(const std::string& run_dir, bool ran_now, double measured) {
  if (ran_now) return measured;
  std::ifstream in(run_dir + "/summary.json");
  const auto summary = nlohmann::json::parse(in, nullptr, false);
  const bool recorded = summary.is_object() && summary.contains("wall_time_s") &&
                        summary["wall_time_s"].is_number();
  return (recorded ? summary["wall_time_s"].get<double>() : 0.0) + 1.0;
}

}  // namespace

CLI::App* add_advise_command(CLI::App& app, AdviseCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "advise", "Rank codec families by projected time to the scenario's target (screening runs)");
  cmd->add_option("file", o.file, "scenario JSON file (with training.target_accuracy)")->required();
  cmd->add_option("--budget", o.budget_minutes, "wall-clock minutes for the whole advice (default 10)")
      ->check(finite_number())
      ->check(CLI::Range(0.1, 10080.0));
  cmd->add_option("-j,--jobs", o.jobs, "screening runs at once (default: one per core)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--out", o.out_dir, "parent of the advise-<name> folder (default: output.dir)");
  cmd->add_option("--set", o.overrides, "override a scenario value: path.to.key=value (repeatable)");
  cmd->add_flag("--quiet,-q", o.quiet, "no progress lines");
  cmd->add_option("--rank-by", o.rank_by,
                  "rank by time to target (default) or energy to target (workers on named "
                  "device profiles)")
      ->check(CLI::IsMember({"time", "energy"}));
  return cmd;
}

int run_advise_command(const AdviseCommandOptions& o, std::ostream& out, std::ostream& err) {
  const auto start = Clock::now();
  const double budget_s = o.budget_minutes * 60;
  nlohmann::json document = read_scenario_file(o.file);
  apply_overrides(document, o.overrides);
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int jobs = o.jobs > 0 ? o.jobs : cores;
  // The pilot prices a step for the screening, so it runs with the screening's share of the
  // cores (a sweep gives each of its runs cores / jobs threads unless the scenario pins them);
  // measured compute keeps its one thread, whose CPU time it charges.
  if (!document.contains("compute") || !document["compute"].is_object()) {
    document["compute"] = nlohmann::json::object();
  }
  if (document["compute"].value("threads", 0) == 0 &&
      document["compute"].contains("mode") && document["compute"]["mode"] != "measured") {
    document["compute"]["threads"] = std::max(1, cores / jobs);
  }
  const Scenario scenario = load_scenario(document);
  // Energy is charged on named devices; the screening fixes measured compute, so only profile
  // compute keeps them.
  if (o.rank_by == "energy" &&
      (scenario.compute.mode != "profile" || worker_device(scenario.compute, 0) == nullptr)) {
    throw ConfigError("--rank-by", "energy needs the workers on named devices (compute.mode "
                                   "\"profile\" with compute.profile)");
  }
  CodecScreening screening(document, scenario);

  const std::string parent = o.out_dir.empty() ? scenario.output_dir : o.out_dir;
  const std::string folder = (fs::path(parent) / ("advise-" + scenario.name)).string();
  const std::string problem = prepare_output_parent(folder);
  if (!problem.empty()) {
    throw ConfigError(o.out_dir.empty() ? "output.dir" : "--out",
                      "expected a folder where the advice can be written; " + folder + ": " + problem);
  }
  const std::string python = find_python();
  if (python.empty()) {
    err << "error: advise needs Python 3 for its projection (tried $GRADWIRE_PYTHON, "
           "/usr/bin/python3, python3)\n";
    return kExitFailure;
  }
  std::ostream* progress = o.quiet ? nullptr : &err;

  // 1. The pilot: dense, alone, a few steps, to price steps and evaluations on this machine.
  if (progress) {
    *progress << "advise: pilot run (dense, " << screening.pilot_steps()
              << " steps) to price a step on this machine\n";
  }
  SweepPlan pilot_plan;
  const auto pilot_start = Clock::now();
  const SweepOutcome pilot = run_sweep(screening.pilot_sweep(), folder, 1, nullptr, &pilot_plan);
  const std::string pilot_run = pilot.directory + "/" + pilot_plan.runs.front().name;
  if (pilot.failed) {
    err << "error: the pilot run failed; see " << pilot.directory << "/logs/"
        << pilot_plan.runs.front().name << ".log\n";
    return kExitFailure;
  }
  const RunCost cost =
      RunCost::from_run(pilot_run, pilot_elapsed(pilot_run, pilot.finished > 0, seconds_since(pilot_start)));

  if (scenario.compute.mode == "measured") {
    screening.fix_compute(cost.step_compute_s);
    if (progress) {
      *progress << "advise: compute fixed at the pilot's " << seconds_text(cost.step_compute_s)
                << " per step (measured alone), so parallel screening runs do not time each "
                   "other's load\n";
    }
  }

  // 2. The screening: as many steps as the rest of the budget allows, never more than the run.
  const int parallel = std::min(jobs, cores);
  const double left = budget_s - seconds_since(start) - kReportSeconds;
  const std::int64_t steps = left > 0 ? screening.steps_within(cost, left, parallel) : 0;
  const auto n = screening.candidates().size();
  if (steps == 0) {
    const double needed = screening.planned_s(cost, screening.minimum_steps(), parallel) /
                              CodecScreening::kPlannedShare +
                          seconds_since(start) + kReportSeconds;
    std::ostringstream msg;
    msg << "expected at least " << std::ceil(needed / 6.0) / 10.0 << " minutes: screening " << n
        << " codecs for " << screening.minimum_steps() << " steps each takes about "
        << seconds_text(needed) << " on this machine (a step costs " << seconds_text(cost.step_s)
        << " of wall time, an evaluation " << seconds_text(cost.eval_s) << ")";
    throw ConfigError("--budget", msg.str());
  }
  const std::int64_t eval_every = screening.eval_every(steps);
  if (progress) {
    *progress << "advise: screening " << n << " codecs for " << steps << " of "
              << screening.full_steps() << " steps (evaluating every " << eval_every << "), "
              << jobs << " at once, planned " << seconds_text(screening.planned_s(cost, steps, parallel))
              << " of the " << seconds_text(budget_s) << " budget\n";
  }
  SweepPlan plan;
  const SweepOutcome screened = run_sweep(screening.sweep(steps), folder, jobs, progress, &plan);

  // 3. The projection and the ranking (analysis/advise.py), then the report.
  nlohmann::json candidates = nlohmann::json::array();
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const auto& c = screening.candidates()[i];
    candidates.push_back({{"run", plan.runs[i].name}, {"family", c.family}, {"label", c.label},
                          {"codec", c.codec}, {"settled_after", c.settled_after}});
  }
  const nlohmann::json plan_doc = {
      {"scenario", o.file},
      {"name", scenario.name},
      {"full_steps", screening.full_steps()},
      {"eval_every", scenario.training.eval_every},
      {"screening_steps", steps},
      {"screening_eval_every", eval_every},
      {"screening", screened.directory},
      {"budget_s", budget_s},
      {"fixed_compute_s", scenario.compute.mode == "measured" ? nlohmann::json(cost.step_compute_s)
                                                               : nlohmann::json(nullptr)},
      {"candidates", candidates},
  };
  write_file_atomically(folder + "/plan.json", plan_doc.dump(2) + "\n");
  out.flush();
  err.flush();
  const int code = run_child_process(
      {python, analysis_dir() + "/advise.py", "--plan", folder + "/plan.json", "--elapsed-s",
       std::to_string(seconds_since(start)), "--rank-by", o.rank_by},
      false);
  if (code == 2) return kExitBadInput;  // advise.py named the unreadable input and why
  if (code != 0) {
    err << "error: the projection failed (analysis/advise.py exit " << code << ")\n";
    return kExitFailure;
  }
  const std::string plotting = find_matplotlib_python();
  if (plotting.empty()) {
    err << "advise: no report (no Python with matplotlib; sudo apt-get install python3-matplotlib)\n";
  } else if (run_child_process({plotting, analysis_dir() + "/report.py", "--out", folder + "/report",
                                screened.directory},
                               true) != 0) {
    err << "advise: the report could not be drawn; the advice stands\n";
  }
  std::ifstream advice(folder + "/advice.md");
  out << advice.rdbuf() << "\nadvice: " << folder << "/advice.md\n";
  if (!plotting.empty()) out << "report: " << folder << "/report/report.html\n";
  out << "advise took " << seconds_text(seconds_since(start)) << " of its "
      << seconds_text(budget_s) << " budget\n";
  if (screened.failed) {
    err << "advise: " << screened.failed << " screening run(s) failed; their logs are in "
        << screened.directory << "/logs/\n";
  }
  return kExitOk;
}

}  // namespace gradwire
