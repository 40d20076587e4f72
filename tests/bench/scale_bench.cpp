// Wall time per simulated training step at scale, with and without segment offload: dense
// ring all-reduce of an MLP sized to each gradient, compute fixed at 10 ms (the real forward
// and backward still run, batch 1, on one LibTorch thread: with more, OpenMP's idle threads
// spin and take CPU from the simulation), buckets off, 1500-byte MTU, through `gradwire run`.
//
//   scale_bench [--gradwire PATH] [--workers 4,16,64] [--mb 0.25,7.45,45,100] [--gbps 1,10]
//               [--steps 3] [--warmup 1] [--offload off,on] [--topology ring] [--keep DIR]
// prints one row per run: workers, gradient MB, Gbps, offload, simulated seconds per step,
// wall seconds per step after the first --warmup steps (start-up left out; the first steps
// also grow the heap: gradients, optimizer state and receive buffers are touched for the
// first time) and that over the simulated step of those same steps,
// ns-3's wall seconds per step and its share of the run's wall time, and the run's CPU
// seconds per step (user + system, start-up included: on a machine that other work loads,
// the column to compare). Runs that would need more than half of this machine's memory
// (every worker and the evaluation model hold ~20 bytes per parameter) are skipped and say so;
// a run that fails prints its exit code.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "BenchArguments.h"

namespace {

using gradwire::testing::number_list;
using gradwire::testing::split_list;

// One hidden layer over 32 synthetic features and 10 classes: (32 + 1 + 10) * h + 10
// parameters, 4 bytes each.
std::int64_t hidden_for(double megabytes) {
  const double parameters = megabytes * 1e6 / 4;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>((parameters - 10) / 43 + 0.5));
}

}  // namespace

int main(int argc, char** argv) {
  std::string gradwire = GRADWIRE_BINARY;
  std::vector<double> workers = {4, 16, 64};
  std::vector<double> megabytes = {0.25, 7.45, 45, 100};
  std::vector<double> gbps = {1, 10};
  std::vector<std::string> offload = {"off", "on"};
  std::string topology = "ring";
  std::string keep;
  int steps = 3;
  int warmup = 1;
  // Flags come in pairs: a lone one (--help included) prints the usage instead of starting a
  // grid that runs for an hour.
  if (argc % 2 == 0) {
    std::fprintf(stderr,
                 "usage: scale_bench [--gradwire PATH] [--workers 4,16,64]\n"
                 "                   [--mb 0.25,7.45,45,100] [--gbps 1,10] [--steps 3]\n"
                 "                   [--warmup 1] [--offload off,on] [--topology ring]\n"
                 "                   [--keep DIR]\n");
    return std::string(argv[argc - 1]) == "--help" ? 0 : 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--gradwire") gradwire = value;
    else if (flag == "--workers") workers = number_list(value);
    else if (flag == "--mb") megabytes = number_list(value);
    else if (flag == "--gbps") gbps = number_list(value);
    else if (flag == "--steps") steps = std::stoi(value);
    else if (flag == "--warmup") warmup = std::stoi(value);
    else if (flag == "--offload") offload = split_list(value);
    else if (flag == "--topology") topology = value;
    else if (flag == "--keep") keep = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (warmup < 1 || warmup >= steps) {
    std::fprintf(stderr, "--warmup must be at least 1 and less than --steps (%d)\n", steps);
    return 2;
  }
  char dir_template[] = "/tmp/scale_bench.XXXXXX";
  const std::string dir = keep.empty() ? std::string(::mkdtemp(dir_template)) : keep;
  std::filesystem::create_directories(dir);  // --keep may name a folder that is not there yet
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                        static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::printf("%7s %8s %5s %7s %10s %10s %9s %10s %9s %10s\n", "workers", "grad_MB", "Gbps",
              "offload", "sim_s/st", "wall_s/st", "wall/sim", "ns3_s/st", "ns3_share",
              "cpu_s/st");
  std::fflush(stdout);
  for (const double n : workers) {
    for (const double mb : megabytes) {
      for (const double rate : gbps) {
        const double needs = 20.0 * mb / 4 * 1e6 * (n + 1);
        if (needs > memory / 2) {
          std::printf("%7.0f %8.2f %5.0f   skipped (needs ~%.0f GB of memory)\n", n, mb, rate,
                      needs / 1e9);
          std::fflush(stdout);
          continue;
        }
        for (const auto& mode : offload) {
          std::ostringstream name;
          name << "scale-" << n << "w-" << mb << "mb-" << rate << "g-" << mode;
          const nlohmann::json scenario = {
              {"gradwire", 1},
              {"name", name.str()},
              {"seed", 1},
              {"model", {{"kind", "mlp"}, {"hidden", {hidden_for(mb)}}}},
              {"dataset",
               {{"kind", "synthetic"}, {"features", 32}, {"train_samples", 256},
                {"test_samples", 16}}},
              {"training",
               {{"workers", static_cast<int>(n)}, {"steps", steps}, {"batch", 1},
                {"eval_every", steps}, {"eval_samples", 16}, {"buckets", "none"}}},
              {"compute", {{"mode", "fixed"}, {"seconds", 0.01}, {"threads", 1}}},
              {"codec", {{"kind", "none"}}},
              {"topology", {{"kind", topology}}},
              {"network",
               {{"family", "ethernet"}, {"rate", std::to_string(rate) + "Gbps"},
                {"offload", mode == "on"}}},
          };
          const std::string file = dir + "/" + name.str() + ".json";
          std::ofstream(file) << scenario.dump(2);
          const std::string cmd =
              gradwire + " run " + file + " --out " + dir + " -q > " + dir + "/log.txt 2>&1";
          const auto cpu_seconds = [] {
            rusage usage{};
            ::getrusage(RUSAGE_CHILDREN, &usage);
            return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                   1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
          };
          const double cpu_before = cpu_seconds();
          const int status = std::system(cmd.c_str());
          const double cpu = cpu_seconds() - cpu_before;
          std::ifstream summary_file(dir + "/" + name.str() + "/summary.json");
          if (status != 0 || !summary_file) {
            std::printf("%7.0f %8.2f %5.0f %7s   failed (status %d, see %s/log.txt)\n", n, mb,
                        rate, mode.c_str(), status, dir.c_str());
            std::fflush(stdout);
            continue;
          }
          nlohmann::json summary;
          summary_file >> summary;
          const double recorded = summary.at("steps").get<double>();
          const double sim = summary.at("sim_time_s").get<double>() / recorded;
          const double wall = summary.at("wall_time_s").get<double>() / recorded;
          // Steady state: wall and simulated time between the end of the last warm-up step and
          // the last step's end (start-up, connection set-up and the warm-up left out).
          double first_end = -1, last_end = -1, first_sim = 0, last_sim = 0;
          int step_lines = 0;
          std::ifstream metrics(dir + "/" + name.str() + "/metrics.jsonl");
          for (std::string line; std::getline(metrics, line);) {
            const auto m = nlohmann::json::parse(line, nullptr, false);
            if (m.is_discarded() || m.value("type", "") != "step") continue;
            const double at = m.value("wall_time_s", 0.0);
            if (++step_lines == warmup) {
              first_end = at;
              first_sim = m.value("sim_time_s", 0.0);
            }
            last_end = at;
            last_sim = m.value("sim_time_s", 0.0);
          }
          const int measured = step_lines - warmup;
          const double steady = measured > 0 ? (last_end - first_end) / measured : wall;
          const double steady_sim = measured > 0 ? (last_sim - first_sim) / measured : sim;
          const double ns3 = summary.at("ns3_wall_time_s").get<double>();
          std::printf("%7.0f %8.2f %5.0f %7s %10.4f %10.3f %9.1f %10.3f %8.0f%% %10.3f\n", n,
                      mb, rate, mode.c_str(), sim, steady, steady / steady_sim, ns3 / recorded,
                      100 * ns3 / summary.at("wall_time_s").get<double>(), cpu / recorded);
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}
