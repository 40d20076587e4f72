#include "sim/study/SweepRunner.h"


#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "common/AtomicOutput.h"
#include "common/FileLock.h"
#include "common/InterruptCleanup.h"
#include "sim/engine/ReplaySafety.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/engine/StepTraceFile.h"

namespace gradwire {

namespace {

namespace fs = std::filesystem;

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Numbers as people read them and as the report prints them: integers exactly, other numbers
// with 6 significant digits (C's %.6g, identical to Python's '%.6g').
std::string csv_number(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<long long>(d)) && std::fabs(d) < 1e15) {
      return std::to_string(static_cast<long long>(d));
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", d);
    return buf;
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// One word for bash, whatever the path holds: single quotes, a ' written as '\''.
std::string shell_word(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

pid_t start_run(const std::string& exe, const std::string& scenario, const std::string& out,
                const std::string& log, const std::vector<std::string>& extra) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("sweep: fork failed");
  if (pid == 0) {
    InterruptCleanup::prepare_child();  // the run dies with the sweep
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    std::vector<const char*> argv = {exe.c_str(), "run", scenario.c_str(), "--out", out.c_str()};
    for (const std::string& a : extra) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), const_cast<char* const*>(argv.data()));
    std::perror("exec gradwire");
    ::_exit(127);
  }
  return pid;
}

/// The run a summary.json says it replayed: the run folder of "<sweep>/<run>/trace/steps.gwtrace".
std::string replayed_run(const nlohmann::json& summary) {
  if (!summary.is_object() || !summary.contains("replayed_from") ||
      !summary["replayed_from"].is_string()) {
    return "";
  }
  const fs::path trace = summary["replayed_from"].get<std::string>();
  const fs::path run = trace.parent_path().parent_path();
  return trace.filename() == "steps.gwtrace" && trace.parent_path().filename() == "trace"
             ? run.filename().string()
             : trace.string();
}

}  // namespace

const std::vector<std::string>& SweepRunner::summary_columns() {
  static const std::vector<std::string> kColumns = {
      "final_accuracy", "time_to_target_s", "sim_time_s",       "mean_step_compute_s",
      "mean_step_comm_s", "mean_step_codec_s", "bytes_on_wire",  "payload_bytes",    "compression_ratio",
      "wall_time_s",      "ns3_wall_time_s", "lost_gradient_fraction", "final_top5_accuracy",
      "final_perplexity", "energy_j",         "energy_to_target_j"};
  return kColumns;
}

void SweepRunner::plan_replays() {
  replays_.assign(plan_.runs.size(), -1);
  records_.assign(plan_.runs.size(), false);
  if (!options_.replay || options_.emit_slurm) return;
  std::map<std::string, std::size_t> first;  // training identity -> the run that trains
  for (std::size_t i = 0; i < plan_.runs.size(); ++i) {
    Scenario scenario;
    try {
      scenario = load_scenario(plan_.runs[i].scenario);
    } catch (const std::exception&) {
      continue;  // the run reports its own error when it runs
    }
    if (replay_refusal(scenario)) continue;
    const auto [it, added] = first.emplace(training_identity(scenario.resolved).dump(), i);
    if (added) continue;
    replays_[i] = static_cast<long>(it->second);
    records_[it->second] = true;
  }
}

SweepRunner::SweepRunner(SweepPlan plan, SweepOptions options)
    : plan_(std::move(plan)), options_(std::move(options)) {
  dir_ = (fs::path(options_.out_dir) / plan_.name).string();
  status_.assign(plan_.runs.size(), "pending");
  replays_.assign(plan_.runs.size(), -1);
  records_.assign(plan_.runs.size(), false);
  options_.jobs = std::max(1, options_.jobs);
  // Parallel runs share the cores: unless a scenario pins LibTorch's thread count, give each
  // run its share so N runs do not oversubscribe the machine N-fold. Measured compute keeps
  // its own default of one thread, whose CPU time it charges (ComputeSpec::intra_op_threads).
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int share = std::max(1, cores / options_.jobs);
  for (auto& run : plan_.runs) {
    auto& compute = run.scenario["compute"];
    if (compute.is_null()) compute = nlohmann::json::object();
    if (compute.value("threads", 0) == 0 && compute.contains("mode") &&
        compute["mode"] != "measured") {
      compute["threads"] = share;
    }
  }
}

void SweepRunner::write_scenarios() const {
  fs::create_directories(fs::path(dir_) / "scenarios");
  fs::create_directories(fs::path(dir_) / "logs");
  for (const auto& run : plan_.runs) {
    write_file_atomically((fs::path(dir_) / "scenarios" / (run.name + ".json")).string(),
                          run.scenario.dump(2) + "\n");
  }
  const fs::path question = fs::path(dir_) / "question.json";
  if (!plan_.question.is_null()) {
    write_file_atomically(question.string(), plan_.question.dump(2) + "\n");
  } else {
    fs::remove(question);
  }
}

void SweepRunner::write_results() const {
  std::ostringstream csv;
  csv << "run,status";
  for (const auto& a : plan_.axes) csv << "," << csv_field(a);
  for (const auto& c : summary_columns()) csv << "," << c;
  csv << ",replayed_from\n";
  for (std::size_t i = 0; i < plan_.runs.size(); ++i) {
    const SweepRun& run = plan_.runs[i];
    csv << csv_field(run.name) << "," << csv_field(status_[i]);
    for (const auto& v : run.axis_values) csv << "," << csv_field(v);
    nlohmann::json summary;
    std::ifstream in(fs::path(dir_) / run.name / "summary.json");
    if (in) {
      try {
        summary = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception&) {
        summary = nullptr;
      }
    }
    for (const auto& c : summary_columns()) {
      csv << "," << (summary.is_object() && summary.contains(c) ? csv_field(csv_number(summary[c])) : "");
    }
    csv << "," << csv_field(replayed_run(summary)) << "\n";
  }
  write_file_atomically((fs::path(dir_) / "results.csv").string(), csv.str());
}

void SweepRunner::write_slurm() const {
  const std::string exe = shell_word(fs::absolute(options_.executable).string());
  const std::string dir = fs::absolute(dir_).string();
  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# Slurm array job for sweep '" << plan_.name << "': one task per run. Resume-safe: a task\n"
    << "# whose run already has summary.json does not run it again, so the array can be\n"
    << "# resubmitted. Every task ends by rewriting results.csv from all runs' summary.json\n"
    << "# (gradwire sweep --collect, one task at a time), so the last task leaves it complete.\n"
    << "#SBATCH --job-name=gradwire-" << plan_.name << "\n"
    << "#SBATCH --array=0-" << plan_.runs.size() - 1 << "\n"
    << "#SBATCH --output=" << dir << "/logs/slurm-%A_%a.log\n"
    << "#SBATCH --cpus-per-task=2\n"
    << "set -uo pipefail\n"
    << "RUNS=(\n";
  for (const auto& run : plan_.runs) s << "  " << shell_word(run.name) << "\n";
  s << ")\n"
    << "RUN=${RUNS[$SLURM_ARRAY_TASK_ID]}\n"
    << "DIR=" << shell_word(dir) << "\n"
    << "STATUS=0\n"
    << "if [ -f \"$DIR/$RUN/summary.json\" ]; then\n"
    << "  echo \"$RUN: already done\"\n"
    << "else\n"
    << "  " << exe << " run \"$DIR/scenarios/$RUN.json\" --out \"$DIR\" || STATUS=$?\n"
    << "fi\n"
    << exe << " sweep " << shell_word(fs::absolute(options_.sweep_file).string()) << " --out "
    << shell_word(fs::absolute(options_.out_dir).string()) << " --collect --quiet ||\n"
    << "  if [ \"$STATUS\" -eq 0 ]; then STATUS=1; fi\n"
    << "exit \"$STATUS\"\n";
  const std::string path = (fs::path(dir_) / "sweep.slurm").string();
  write_file_atomically(path, s.str());
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
}

void SweepRunner::collect_results() {
  // Tasks of one array end at nearly the same moment: each reads every summary.json under this
  // lock, so whichever writes last has seen them all.
  fs::create_directories(fs::path(dir_) / "locks");
  const std::string lock_path = (fs::path(dir_) / "locks" / "results.lock").string();
  std::optional<FileLock> lock;
  for (lock.emplace(lock_path); !lock->held(); lock.emplace(lock_path)) {
    lock.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::size_t i = 0; i < plan_.runs.size(); ++i) {
    status_[i] = fs::exists(fs::path(dir_) / plan_.runs[i].name / "summary.json") ? "ok"
                                                                                   : "pending";
  }
  write_results();
}

SweepOutcome SweepRunner::run(std::ostream* progress) {
  SweepOutcome outcome;
  outcome.directory = dir_;
  outcome.runs = static_cast<int>(plan_.runs.size());
  if (options_.collect) {
    collect_results();
    outcome.skipped = static_cast<int>(std::count(status_.begin(), status_.end(), "ok"));
    return outcome;
  }
  write_scenarios();
  if (options_.emit_slurm) {
    write_slurm();
    write_results();
    if (progress) {
      *progress << "[" << plan_.name << "] wrote " << dir_ << "/sweep.slurm (" << plan_.runs.size()
                << " tasks); submit with: sbatch " << dir_ << "/sweep.slurm\n";
    }
    return outcome;
  }

  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < plan_.runs.size(); ++i) {
    if (fs::exists(fs::path(dir_) / plan_.runs[i].name / "summary.json")) {
      status_[i] = "ok";
      ++outcome.skipped;
    } else {
      todo.push_back(i);
    }
  }
  write_results();
  const auto start = std::chrono::steady_clock::now();
  auto report = [&](const std::string& what) {
    if (!progress) return;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int ran = outcome.finished + outcome.failed;
    const int done = ran + outcome.skipped + outcome.busy;
    char buf[160];
    std::snprintf(buf, sizeof buf, "] %d/%zu done, %d failed, %d skipped, wall %.0f s",
                  done, plan_.runs.size(), outcome.failed, outcome.skipped + outcome.busy, wall);
    std::string eta;
    if (ran > 0 && static_cast<std::size_t>(done) < plan_.runs.size()) {
      // The pace so far, parallel jobs included, applied to the runs still to go.
      const double left = wall / ran * static_cast<double>(plan_.runs.size() - done);
      char e[48];
      if (left < 120) {
        std::snprintf(e, sizeof e, ", ETA %.0f s", left);
      } else {
        std::snprintf(e, sizeof e, ", ETA %.0f min", left / 60);
      }
      eta = e;
    }
    *progress << "[" << plan_.name << buf << eta << ": " << what << "\n" << std::flush;
  };
  if (outcome.skipped) report("resuming; finished runs are skipped");

  plan_replays();
  std::map<pid_t, std::size_t> running;
  std::map<pid_t, FileLock> locks;  // each running run's lock, released when it ends
  fs::create_directories(fs::path(dir_) / "locks");
  // A replay waits for the run whose training it replays; everything else starts in order.
  const auto ready = [&](std::size_t i) {
    const long source = replays_[i];
    return source < 0 || (status_[static_cast<std::size_t>(source)] != "pending" &&
                          status_[static_cast<std::size_t>(source)] != "running");
  };
  while (!todo.empty() || !running.empty()) {
    while (static_cast<int>(running.size()) < options_.jobs) {
      const auto pick = std::find_if(todo.begin(), todo.end(), ready);
      if (pick == todo.end()) break;
      const std::size_t i = *pick;
      todo.erase(pick);
      const SweepRun& run = plan_.runs[i];
      // Another sweep process on the same folder may be running this run: never twice at once.
      FileLock lock((fs::path(dir_) / "locks" / (run.name + ".lock")).string());
      if (!lock.held()) {
        status_[i] = "running elsewhere";
        ++outcome.busy;
        report("skipped " + run.name + ": another sweep process is running it");
        continue;
      }
      std::vector<std::string> extra;
      std::string how;
      if (records_[i]) {
        extra.push_back("--trace");
        how = ", recording its training for runs on other networks";
      }
      if (replays_[i] >= 0) {
        const std::string& source = plan_.runs[static_cast<std::size_t>(replays_[i])].name;
        const fs::path trace = fs::path(dir_) / source / kStepTraceFile;
        if (fs::exists(trace)) {
          extra.push_back("--replay");
          extra.push_back(trace.string());
          how = ", replaying the training of " + source;
        } else {
          how = ", training in full (" + source + " left no step trace)";
        }
      }
      const pid_t pid = start_run(options_.executable,
                                  (fs::path(dir_) / "scenarios" / (run.name + ".json")).string(),
                                  dir_, (fs::path(dir_) / "logs" / (run.name + ".log")).string(),
                                  extra);
      InterruptCleanup::remember_child(pid);
      running[pid] = i;
      locks.emplace(pid, std::move(lock));
      status_[i] = "running";
      report("started " + run.name + how);
    }
    int wstatus = 0;
    const pid_t pid = ::waitpid(-1, &wstatus, 0);
    if (pid < 0) break;
    InterruptCleanup::forget_child(pid);
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t i = it->second;
    running.erase(it);
    locks.erase(pid);
    const bool ok = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 &&
                    fs::exists(fs::path(dir_) / plan_.runs[i].name / "summary.json");
    // Every run was validated, so a replay that exits 2 refused its trace (a codec time it
    // cannot replay) before writing anything: it trains in full instead.
    if (!ok && replays_[i] >= 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 2) {
      report(plan_.runs[i].name + ": its replay was refused (logs/" + plan_.runs[i].name +
             ".replay-refused.log), training it in full");
      fs::rename(fs::path(dir_) / "logs" / (plan_.runs[i].name + ".log"),
                 fs::path(dir_) / "logs" / (plan_.runs[i].name + ".replay-refused.log"));
      replays_[i] = -1;
      status_[i] = "pending";
      todo.insert(todo.begin(), i);
      continue;
    }
    if (ok) {
      status_[i] = "ok";
      ++outcome.finished;
      report("finished " + plan_.runs[i].name);
    } else {
      status_[i] = WIFEXITED(wstatus) ? "failed (exit " + std::to_string(WEXITSTATUS(wstatus)) + ")"
                                      : "failed (signal " + std::to_string(WTERMSIG(wstatus)) + ")";
      ++outcome.failed;
      report("FAILED " + plan_.runs[i].name + ", see logs/" + plan_.runs[i].name + ".log");
    }
    write_results();
  }
  write_results();
  return outcome;
}

}  // namespace gradwire
