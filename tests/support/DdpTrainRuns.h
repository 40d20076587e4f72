// examples/emulate/ddp_train.py, an unmodified PyTorch DDP training job, held against
// `gradwire run`: the job for real on the hosts of a RealKernelNetwork and under `gradwire
// emulate`, the same job with one rank for its compute time per step (DDP with one rank
// all-reduces nothing), and a scenario of the same model and batch that `gradwire run`
// simulates with that compute time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "GlooAllReduceRuns.h"
#include "MetricsLines.h"
#include "RealKernelNetwork.h"
#include "ReferencePython.h"
#include "RunGradwire.h"

namespace gradwire::testing {

/// ddp_train.py's defaults, which the scenario's model and dataset repeat.
constexpr std::int64_t kDdpFeatures = 256;
constexpr std::int64_t kDdpClasses = 10;

/// Parameters of ddp_train.py's model (features -> H -> H -> classes, every Linear with a bias);
/// gradwire's `mlp` with hidden [H, H] has the same layers.
inline std::int64_t ddp_parameters(std::int64_t hidden) {
  return (kDdpFeatures + 1) * hidden + (hidden + 1) * hidden + (hidden + 1) * kDdpClasses;
}

/// The hidden width H whose gradient (4 bytes a parameter) is nearest `megabytes` MB.
inline std::int64_t ddp_hidden_for(double megabytes) {
  // P = H^2 + (F + C + 2) H + C: the positive root, then whichever neighbour is nearer.
  const double b = static_cast<double>(kDdpFeatures + kDdpClasses + 2);
  const double target = megabytes * 1e6 / 4;
  const double root = (-b + std::sqrt(b * b + 4 * (target - kDdpClasses))) / 2;
  auto h = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(root)));
  if (std::abs(ddp_parameters(h + 1) - target) < std::abs(ddp_parameters(h) - target)) ++h;
  return h;
}

inline std::string ddp_train_command(std::int64_t hidden, int batch, int steps) {
  return reference_python() + " " + std::string(GRADWIRE_SOURCE_DIR) +
         "/examples/emulate/ddp_train.py --hidden " + std::to_string(hidden) + " --batch " +
         std::to_string(batch) + " --steps " + std::to_string(steps) + " --log-every " +
         std::to_string(steps);
}

struct DdpTrainRun {
  std::vector<double> slowest;   ///< per complete repetition, its slowest rank's mean_step_s
  std::int64_t gradient_bytes = 0;  ///< as the job reported it (4 x its parameters)
  std::string output;            ///< what the ranks of failed repetitions printed

  /// The shortest complete repetition; -1 when none was.
  double best() const { return slowest.empty() ? -1 : *std::min_element(slowest.begin(), slowest.end()); }
};

/// Every rank's mean_step_s in one run's output, and the gradient bytes the job reported.
struct RankSteps {
  std::vector<double> means;
  std::int64_t gradient_bytes = 0;
};

inline RankSteps rank_steps(const std::string& output) {
  RankSteps steps;
  for (const auto& line : json_lines_with(output, "mean_step_s")) {
    steps.means.push_back(line.value("mean_step_s", 0.0));
    steps.gradient_bytes = line.value("gradient_bytes", std::int64_t{0});
  }
  return steps;
}

/// Folds one repetition's output, from `ranks` ranks, into `run`.
inline void add_ddp_repetition(DdpTrainRun& run, const std::string& output, int ranks) {
  const RankSteps steps = rank_steps(output);
  if (!steps.means.empty()) run.gradient_bytes = steps.gradient_bytes;
  if (static_cast<int>(steps.means.size()) == ranks) {
    run.slowest.push_back(*std::max_element(steps.means.begin(), steps.means.end()));
  } else {
    run.output += output;
  }
}

/// The job on every host of `net`, `repeats` times, each rank bound to its host's veth.
inline DdpTrainRun kernel_ddp_train(const RealKernelNetwork& net, int hosts, std::int64_t hidden,
                                    int batch, int steps, int repeats, int timeout_s) {
  DdpTrainRun run;
  for (int k = 0; k < repeats; ++k) {
    // A port of its own per repetition: the last one's store may still hold its port in TIME_WAIT.
    std::vector<std::string> commands;
    for (int h = 0; h < hosts; ++h) {
      commands.push_back(RealKernelNetwork::rank_environment(h, hosts, 29500 + k) +
                         ddp_train_command(hidden, batch, steps));
    }
    std::string all;
    for (const auto& out : net.run_on_hosts(commands, timeout_s)) all += out;
    add_ddp_repetition(run, all, hosts);
  }
  return run;
}

/// The job under `gradwire emulate` over the scenario at `path` (one host a rank), `repeats`
/// times. --max-lag as the all-reduce runs: a step's buckets are megabytes at 100 Mbit/s, and a
/// loaded machine's ns-3 thread falls behind by more than the default before it catches up.
inline DdpTrainRun emulated_ddp_train(const std::string& path, int hosts, std::int64_t hidden,
                                      int batch, int steps, int repeats, int timeout_s) {
  DdpTrainRun run;
  for (int k = 0; k < repeats; ++k) {
    const auto r = run_gradwire("emulate " + path + " --timeout " + std::to_string(timeout_s) +
                                " --max-lag 250 -- " + ddp_train_command(hidden, batch, steps));
    if (r.code == 0) add_ddp_repetition(run, r.output, hosts);
    else run.output += r.output;
  }
  return run;
}

/// The job with one rank in the machine's own namespace, its store on `port` of loopback.
inline std::string one_rank_command(int port, std::int64_t hidden, int batch, int steps, int timeout_s) {
  return "timeout -k 2 " + std::to_string(timeout_s) +
         " env RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
         " GLOO_SOCKET_IFNAME=lo " + ddp_train_command(hidden, batch, steps);
}

/// The machine's namespace is shared with whatever else runs here: ports from this process's
/// id rather than gloo's usual 29500.
inline int one_rank_base_port() { return 20000 + ::getpid() % 10000; }

/// The job with one rank: its step is compute alone.
inline DdpTrainRun single_rank_ddp_train(std::int64_t hidden, int batch, int steps, int timeout_s) {
  DdpTrainRun run;
  add_ddp_repetition(run, RealKernelNetwork::run(one_rank_command(one_rank_base_port(), hidden,
                                                                  batch, steps, timeout_s)),
                     1);
  return run;
}

/// The job's compute as `ranks` ranks on this machine see it: `ranks` one-rank copies side by
/// side in the machine's own namespace, each all-reducing nothing. A DDP step's ranks compute
/// at the same moments, so where ranks outnumber cores each one's compute takes longer than
/// the one-rank time; the copies share the cores as they do. `best()` is the mean over the
/// copies of their mean steps (one value); -1 when any copy failed.
inline DdpTrainRun contended_ddp_compute(std::int64_t hidden, int batch, int steps, int ranks,
                                         int timeout_s) {
  // Ports of their own per call: an earlier call's stores may still hold theirs in TIME_WAIT.
  static int calls = 0;
  const int first = one_rank_base_port() + 1 + (calls++ % 64) * ranks;
  std::string commands;
  for (int r = 0; r < ranks; ++r) {
    commands += one_rank_command(first + r, hidden, batch, steps, timeout_s) + " & ";
  }
  const std::string output = RealKernelNetwork::run(commands + "wait");
  const RankSteps copies = rank_steps(output);
  DdpTrainRun run;
  run.gradient_bytes = copies.gradient_bytes;
  if (static_cast<int>(copies.means.size()) == ranks) {
    run.slowest.push_back(std::accumulate(copies.means.begin(), copies.means.end(), 0.0) / ranks);
  } else {
    run.output = output;
  }
  return run;
}

struct SimulatedDdpSteps {
  double mean_step_s = -1;       ///< mean simulated step over steps 2..N; -1 when the run failed
  std::int64_t parameters = 0;   ///< the model's, from summary.json
  std::string output;            ///< gradwire's output when the run failed
};

/// `gradwire run` of ddp_train.py's model, data shape and batch among `ranks` workers on a ring
/// over `rate_mbit` Ethernet, each step's compute fixed at `compute_s`, DDP's buckets (gradwire's
/// default), no codec. The scenario and its run folder go under `dir`.
inline SimulatedDdpSteps simulated_ddp_steps(const std::filesystem::path& dir, int ranks,
                                             std::int64_t hidden, int batch, int steps,
                                             double compute_s, int rate_mbit) {
  namespace fs = std::filesystem;
  const std::string name = "ddp-" + std::to_string(ranks) + "-h" + std::to_string(hidden);
  const nlohmann::json doc = {
      {"gradwire", 1},
      {"name", name},
      {"model", {{"kind", "mlp"}, {"hidden", {hidden, hidden}}}},
      {"dataset",
       {{"kind", "synthetic"}, {"features", kDdpFeatures}, {"classes", kDdpClasses},
        {"train_samples", 4096}, {"test_samples", 128}}},
      {"training", {{"workers", ranks}, {"steps", steps}, {"batch", batch}, {"eval_every", 100}}},
      {"compute", {{"mode", "fixed"}, {"seconds", compute_s}, {"threads", 1}}},
      {"codec", {{"kind", "none"}}},
      {"topology", {{"kind", "ring"}}},
      {"network",
       {{"family", "ethernet"}, {"rate", std::to_string(rate_mbit) + "Mbps"}, {"delay", "0us"}}},
      {"output", {{"dir", (dir / "runs").string()}}}};
  const fs::path path = dir / (name + ".json");
  std::ofstream(path) << doc.dump(2);
  fs::remove_all(dir / "runs" / name);  // a folder of an earlier row with the same name

  SimulatedDdpSteps sim;
  const auto r = run_gradwire("run " + path.string() + " -q");
  std::ifstream metrics(dir / "runs" / name / "metrics.jsonl");
  std::ifstream summary(dir / "runs" / name / "summary.json");
  std::stringstream text;
  text << metrics.rdbuf();
  std::vector<double> at;
  for (const auto& line : lines_of(text.str(), "step")) at.push_back(line.value("sim_time_s", 0.0));
  if (r.code != 0 || static_cast<int>(at.size()) != steps || steps < 2 || !summary) {
    sim.output = r.output;
    return sim;
  }
  const auto facts = nlohmann::json::parse(summary, nullptr, false);
  if (facts.is_object()) sim.parameters = facts.value("parameters", std::int64_t{0});
  sim.mean_step_s = (at.back() - at.front()) / (steps - 1);  // the mean of steps 2..N's lengths
  return sim;
}

}  // namespace gradwire::testing
