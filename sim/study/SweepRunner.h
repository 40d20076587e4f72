// Runs a SweepPlan: up to `jobs` `gradwire run` processes at once, each with its own scenario
// file and log, skipping runs whose summary.json already exists (resume), recording failures
// without stopping the others, and keeping <out>/<sweep>/results.csv current.
//
// Layout of <out>/<sweep>/:
//   scenarios/<run>.json   the exact scenario each run used
//   logs/<run>.log         its stdout + stderr
//   <run>/                 its outputs (scenario.json, metrics.jsonl, summary.json)
//   results.csv            one row per run: axis values, status, summary figures, and the run
//                          whose training a replayed run replayed (replayed_from)
//   question.json          the sweep's question, when it has one (answered by the report)
//   sweep.slurm            with --emit-slurm only
//   locks/                 one flock per running run; results.lock while --collect writes
#pragma once

#include <iosfwd>
#include <string>

#include "sim/study/SweepPlan.h"

namespace gradwire {

struct SweepOptions {
  int jobs = 1;
  std::string out_dir = "runs";
  std::string executable;  ///< the gradwire binary to start for each run
  /// The sweep file the plan came from: sweep.slurm's tasks read it again to collect results.
  std::string sweep_file;
  bool emit_slurm = false;
  /// Run nothing: rewrite results.csv from the summary.json files present ("ok") and absent
  /// ("pending"). Each task of the Slurm array does this when it ends; a lock serialises them
  /// so the last one to end leaves results.csv complete.
  bool collect = false;
  /// Train once, replay every network: runs that differ only in their network (other than its
  /// transport) and name share one training; the first records a step trace, the others
  /// replay it (sim/engine/StepTrace.h). Runs that cannot be replayed train in full. Not with
  /// emit_slurm (each task trains its own run).
  bool replay = true;
};

struct SweepOutcome {
  int finished = 0;  ///< ran now and succeeded
  int skipped = 0;   ///< already had results
  int failed = 0;
  int busy = 0;      ///< being run by another sweep process on the same folder (not run here)
  int runs = 0;      ///< in the plan
  std::string directory;
};

class SweepRunner {
 public:
  SweepRunner(SweepPlan plan, SweepOptions options);
  /// Progress lines go to `progress` (may be null).
  SweepOutcome run(std::ostream* progress);

  /// Columns of results.csv after the axes and status.
  static const std::vector<std::string>& summary_columns();

 private:
  void write_scenarios() const;
  void write_results() const;
  void write_slurm() const;
  void collect_results();
  /// For each run, the run whose training it replays (or -1), and which runs record a trace.
  void plan_replays();

  SweepPlan plan_;
  SweepOptions options_;
  std::string dir_;
  std::vector<std::string> status_;  // per run: "ok", "failed (exit N)", "pending"
  std::vector<long> replays_;        // per run: the run whose trace it replays, or -1
  std::vector<bool> records_;        // per run: records a step trace for others
};

}  // namespace gradwire
