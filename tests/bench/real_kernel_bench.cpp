// gloo's all_reduce of DDP's gradient sizes three ways: on real Linux TCP (namespaces, veths, a
// bridge and tbf: tests/support/RealKernelNetwork.h), under `gradwire emulate`, and through the
// simulator running gloo's own ring schedule over the same `ethernet` scenario. Prints a Markdown
// table of the shortest repetition's time (each repetition until its slowest rank is done) and
// the ratios simulated / real and emulated / simulated. "real on a wire" is the kernel's time
// plus tbf's head start after idle, times 1538 / 1514 (the framing a veth does not charge and a
// wire does); docs/fidelity.md explains both.
//
// --ddp: whole DDP training steps instead of single all-reduces. The unmodified PyTorch job
// examples/emulate/ddp_train.py (gloo, batch 64, a model of 256 features -> H -> H -> 10 classes,
// H chosen so that its gradient is each size) runs on the same real network and under
// `gradwire emulate` (unless --no-emulate), and `gradwire run` simulates a scenario of the same
// model with each step's compute fixed at the job's measured step with one rank (no
// all-reduce) and DDP's buckets, gradwire's default. A real step is the
// slowest rank's mean over steps 2..N, shortest of the repetitions; "real on a wire" stretches
// only its communication, the step less that compute, by 1538 / 1514. The all-reduce mode's
// head start for tbf's bucket is not added: a step's buckets leave while backward still runs,
// so how much of the bucket is spent idle is not known.
//
// Usage (root, from the repository root, after building gradwire and this benchmark):
//   build/tests/bench/real_kernel_bench [--sizes-mb 1.6,5.3,19,45] [--ranks 4,8]
//       [--repeats 3] [--rate-mbit 100] [--no-emulate]
//   build/tests/bench/real_kernel_bench --ddp [--sizes-mb 1.6,5.3,19,45] [--ranks 4,8]
//       [--repeats 3] [--steps 10] [--rate-mbit 100] [--no-emulate | --no-real]
//       [--contended-compute]
// --no-real leaves the kernel's runs out of the --ddp table: emulated against simulated alone.
// --contended-compute gives the simulation the compute as the ranks see it on this machine:
// as many one-rank copies of the job side by side as the row has ranks (where ranks outnumber
// cores, each computes for longer than one rank alone), measured per row.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "BenchArguments.h"
#include "CubicAllowed.h"
#include "DdpTrainRuns.h"
#include "EmulationFolder.h"
#include "GlooAllReduceRuns.h"
#include "RealKernelNetwork.h"
#include "SimulatedReference.h"

namespace fs = std::filesystem;
using gradwire::testing::RealKernelNetwork;

namespace {

int usage(const std::string& what) {
  std::fprintf(stderr,
               "real_kernel_bench: %s\nusage: real_kernel_bench [--sizes-mb 1.6,5.3,19,45] "
               "[--ranks 4,8] [--repeats 3] [--rate-mbit 100] [--no-emulate]\n"
               "       real_kernel_bench --ddp [--sizes-mb 1.6,5.3,19,45] [--ranks 4,8] "
               "[--repeats 3] [--steps 10] [--rate-mbit 100] [--no-emulate | --no-real]\n"
               "                         [--contended-compute]\n",
               what.c_str());
  return 2;
}

std::string scenario(const fs::path& dir, int ranks, int rate_mbit) {
  return gradwire::testing::write_scenario(
      dir, "kernel-reference-" + std::to_string(ranks), ranks,
      {{"family", "ethernet"}, {"rate", std::to_string(rate_mbit) + "Mbps"}, {"delay", "0us"}});
}

std::string seconds_cell(double s) {
  if (s < 0) return "failed";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

std::string ratio_cell(double a, double b) {
  if (a < 0 || b <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", a / b);
  return buf;
}

/// Every repetition's step on stderr: the shortest is kept, and the spread says how much the
/// machine's load moved the others. What the ranks of incomplete repetitions printed follows.
void report_repetitions(const char* where, int ranks, double mb,
                        const gradwire::testing::DdpTrainRun& run, int repeats) {
  std::string spread;
  for (double s : run.slowest) spread += " " + seconds_cell(s);
  std::fprintf(stderr, "%s, %d ranks, %.1f MB: repetitions%s s\n", where, ranks, mb, spread.c_str());
  if (!run.output.empty()) {
    std::fprintf(stderr, "%s, %d ranks, %.1f MB (%zu of %d repetitions complete):\n%s\n", where,
                 ranks, mb, run.slowest.size(), repeats, run.output.c_str());
  }
}

/// The --ddp table: a DDP training step on the real kernel's network, emulated and simulated.
int ddp_steps(const fs::path& dir, const std::vector<double>& sizes_mb,
              const std::vector<double>& ranks_list, int repeats, int steps, int rate_mbit,
              bool emulate, bool real, bool contended) {
  using namespace gradwire::testing;
  constexpr int kBatch = 64;
  // Generous: eight ranks start Python and torch on a few cores, and a 45 MB step at 100 Mbit/s
  // takes seconds.
  const int timeout_s = 120 + 40 * steps;
  // The compute time per size, measured the first time the size comes up (-2: not yet).
  std::vector<double> compute_s(sizes_mb.size(), -2);
  std::vector<std::int64_t> job_parameters(sizes_mb.size(), 0), sim_parameters(sizes_mb.size(), 0);

  std::printf("| ranks | gradient | real DDP step (s) | real on a wire (s) | emulated step (s) | "
              "simulated step (s) | simulated / real | emulated / simulated |\n"
              "|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  std::string congestion_control = "(not run)";
  std::string contended_notes;  // the compute each row was given, with --contended-compute
  for (double r : ranks_list) {
    const int ranks = static_cast<int>(r);
    for (std::size_t i = 0; i < sizes_mb.size(); ++i) {
      const double mb = sizes_mb[i];
      const std::int64_t hidden = ddp_hidden_for(mb);
      if (compute_s[i] == -2) {
        const auto alone = single_rank_ddp_train(hidden, kBatch, steps, timeout_s);
        compute_s[i] = alone.best();
        job_parameters[i] = alone.gradient_bytes / 4;
        if (compute_s[i] < 0) std::fprintf(stderr, "one rank, %.1f MB:\n%s\n", mb, alone.output.c_str());
      }
      double real_s = -1;
      if (real) {
        RealKernelNetwork net(ranks, rate_mbit);
        if (!net.error().empty()) {
          std::fprintf(stderr, "cannot build the kernel's network: %s\n", net.error().c_str());
          return 1;
        }
        congestion_control = net.congestion_control();
        const auto run = kernel_ddp_train(net, ranks, hidden, kBatch, steps, repeats, timeout_s);
        real_s = run.best();
        report_repetitions("real kernel", ranks, mb, run, repeats);
      }
      double compute = compute_s[i];
      if (contended) {
        const auto side_by_side = contended_ddp_compute(hidden, kBatch, steps, ranks, timeout_s);
        compute = side_by_side.best();
        if (compute < 0) {
          std::fprintf(stderr, "%d one-rank copies, %.1f MB:\n%s\n", ranks, mb, side_by_side.output.c_str());
        }
        char note[160];
        std::snprintf(note, sizeof note, "%d ranks, %.1f MB: compute %.6f s per step side by side "
                      "(one rank alone %.6f s)\n", ranks, mb, compute, compute_s[i]);
        contended_notes += note;
        std::fputs(note, stderr);
      }
      const double wire_s =
          real_s < 0 || compute < 0 ? -1 : compute + (real_s - compute) * RealKernelNetwork::kFrameRatio;
      double simulated_s = -1;
      if (compute >= 0) {
        const auto sim = simulated_ddp_steps(dir, ranks, hidden, kBatch, steps, compute, rate_mbit);
        simulated_s = sim.mean_step_s;
        sim_parameters[i] = sim.parameters;
        if (simulated_s < 0) std::fprintf(stderr, "simulated, %d ranks, %.1f MB:\n%s\n", ranks, mb, sim.output.c_str());
      }
      double emulated_s = -1;
      if (emulate) {
        const auto run = emulated_ddp_train(scenario(dir, ranks, rate_mbit), ranks, hidden, kBatch,
                                            steps, repeats, timeout_s);
        emulated_s = run.best();
        report_repetitions("emulated", ranks, mb, run, repeats);
      }
      std::printf("| %d | %.1f MB | %s | %s | %s | %s | %s | %s |\n", ranks, mb,
                  real ? seconds_cell(real_s).c_str() : "-", real ? seconds_cell(wire_s).c_str() : "-",
                  emulate ? seconds_cell(emulated_s).c_str() : "-", seconds_cell(simulated_s).c_str(),
                  ratio_cell(simulated_s, wire_s).c_str(),
                  emulate ? ratio_cell(emulated_s, simulated_s).c_str() : "-");
      std::fflush(stdout);
    }
  }
  std::printf("\n%d Mbit/s; kernel TCP congestion control %s. real: examples/emulate/ddp_train.py "
              "(gloo, batch %d, %d steps), the slowest rank's mean step over steps 2..%d, shortest "
              "of %d repetitions. real on a wire: compute + (real - compute) x 1538 / 1514 (tbf "
              "charges 1514 bytes per full frame, a wire 1538), compute being the job's mean step "
              "with one rank in the machine's own namespace (no all-reduce). emulated: the same job "
              "under gradwire emulate over the simulated network, measured as real. simulated: "
              "gradwire run, mlp [H, H], compute fixed at that time, DDP buckets, ring, the mean "
              "of steps 2..%d.\n",
              rate_mbit, congestion_control.c_str(), kBatch, steps, steps, repeats, steps);
  if (contended) {
    std::printf("compute: --contended-compute, as many one-rank copies side by side as the row "
                "has ranks; the mean of their mean steps is the simulation's compute and the "
                "compute in \"real on a wire\":\n%s", contended_notes.c_str());
  }
  for (std::size_t i = 0; i < sizes_mb.size(); ++i) {
    const std::int64_t hidden = ddp_hidden_for(sizes_mb[i]);
    std::printf("%.1f MB: H %lld, %lld parameters (%.2f MB); ddp_train.py reported %lld, gradwire's "
                "mlp %lld%s; compute %s s per step\n",
                sizes_mb[i], static_cast<long long>(hidden), static_cast<long long>(ddp_parameters(hidden)),
                4e-6 * static_cast<double>(ddp_parameters(hidden)),
                static_cast<long long>(job_parameters[i]), static_cast<long long>(sim_parameters[i]),
                job_parameters[i] == sim_parameters[i] ? "" : " (DIFFERENT)",
                compute_s[i] < 0 ? "failed" : std::to_string(compute_s[i]).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> sizes_mb = {1.6, 5.3, 19, 45};
  std::vector<double> ranks_list = {4, 8};
  int repeats = 3;
  int rate_mbit = 100;
  bool emulate = true;
  bool real = true;
  bool contended = false;
  bool ddp = false;
  int steps = 0;  // 0: not given (10 with --ddp)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-emulate") {
      emulate = false;
      continue;
    }
    if (a == "--contended-compute") {
      contended = true;
      continue;
    }
    if (a == "--no-real") {
      real = false;
      continue;
    }
    if (a == "--ddp") {
      ddp = true;
      continue;
    }
    if (a != "--sizes-mb" && a != "--ranks" && a != "--repeats" && a != "--rate-mbit" && a != "--steps") {
      return usage("unknown option " + a);
    }
    if (i + 1 >= argc) return usage(a + " needs a value");
    const std::string value = argv[++i];
    std::vector<double> numbers;
    try {
      numbers = gradwire::testing::number_list(value);
    } catch (const std::exception&) {
      numbers.clear();
    }
    const bool whole = a != "--sizes-mb";
    bool good = !numbers.empty() && (a == "--sizes-mb" || a == "--ranks" || numbers.size() == 1);
    for (double n : numbers) {
      // A mean over steps 2..N needs two steps.
      good = good && n > 0 && (!whole || n == static_cast<int>(n)) &&
             (a != "--ranks" || n >= 2) && (a != "--steps" || n >= 2);
    }
    if (!good) {
      return usage(a + " expects " +
                   (a == "--sizes-mb"  ? std::string("positive sizes in MB, comma-separated")
                    : a == "--ranks"   ? std::string("whole numbers of ranks >= 2, comma-separated")
                    : a == "--steps"   ? std::string("one whole number >= 2")
                                       : std::string("one positive whole number")) +
                   ", not '" + value + "'");
    }
    if (a == "--sizes-mb") sizes_mb = numbers;
    else if (a == "--ranks") ranks_list = numbers;
    else if (a == "--repeats") repeats = static_cast<int>(numbers[0]);
    else if (a == "--steps") steps = static_cast<int>(numbers[0]);
    else rate_mbit = static_cast<int>(numbers[0]);
  }
  // Each flag of one mode only, so that a mistyped command line does not measure something else.
  if (steps != 0 && !ddp) return usage("--steps needs --ddp");
  if (!real && !ddp) return usage("--no-real needs --ddp");
  if (contended && !ddp) return usage("--contended-compute needs --ddp");
  if (!real && !emulate) return usage("--no-real and --no-emulate leave nothing to hold the simulator against");
  if (::geteuid() != 0) return usage("needs root (network namespaces, veths, a bridge, tc)");
  // The kernel's hosts and the emulator's run CUBIC, as the simulator does, where the kernel has it.
  const gradwire::testing::CubicAllowed cubic;

  const fs::path dir = fs::temp_directory_path() / ("gradwire-real-kernel-bench-" + std::to_string(::getpid()));
  gradwire::testing::make_open_folder(dir);
  if (ddp) {
    const int code =
        ddp_steps(dir, sizes_mb, ranks_list, repeats, steps == 0 ? 10 : steps, rate_mbit, emulate, real,
                  contended);
    fs::remove_all(dir);
    return code;
  }
  const double burst_s = RealKernelNetwork::kBurstBytes * 8 / (rate_mbit * 1e6);

  std::printf("| ranks | gradient | real (s) | real on a wire (s) | emulated (s) | simulated (s) | "
              "simulated / real | emulated / simulated |\n|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  std::string congestion_control;
  for (double r : ranks_list) {
    const int ranks = static_cast<int>(r);
    const std::string path = scenario(dir, ranks, rate_mbit);
    for (double mb : sizes_mb) {
      const auto elements = static_cast<std::int64_t>(mb * 1e6 / 4);
      double real_s = -1;
      {
        RealKernelNetwork net(ranks, rate_mbit);
        if (!net.error().empty()) {
          std::fprintf(stderr, "cannot build the kernel's network: %s\n", net.error().c_str());
          fs::remove_all(dir);
          return 1;
        }
        congestion_control = net.congestion_control();
        const auto run = gradwire::testing::kernel_gloo_all_reduce(net, ranks, elements, repeats, 300);
        if (run.ranks == ranks && run.correct) real_s = run.best();
        else std::fprintf(stderr, "real kernel, %d ranks, %.1f MB:\n%s\n", ranks, mb, run.output.c_str());
      }
      const double wire_s = real_s < 0 ? -1 : (real_s + burst_s) * RealKernelNetwork::kFrameRatio;
      double emulated_s = -1;
      if (emulate) {
        const auto run = gradwire::testing::emulated_gloo_all_reduce(path, elements, repeats, 300);
        if (run.exit_code == 0 && run.ranks == ranks && run.correct) emulated_s = run.best();
        else std::fprintf(stderr, "emulated, %d ranks, %.1f MB:\n%s\n", ranks, mb, run.output.c_str());
      }
      const double simulated_s = gradwire::testing::simulated_all_reduce(path, elements, true, ranks);
      std::printf("| %d | %.1f MB | %s | %s | %s | %s | %s | %s |\n", ranks, mb,
                  seconds_cell(real_s).c_str(), seconds_cell(wire_s).c_str(),
                  emulate ? seconds_cell(emulated_s).c_str() : "-", seconds_cell(simulated_s).c_str(),
                  ratio_cell(simulated_s, wire_s).c_str(),
                  emulate ? ratio_cell(emulated_s, simulated_s).c_str() : "-");
      std::fflush(stdout);
    }
  }
  std::printf("\n%d Mbit/s; kernel TCP congestion control %s; shortest of %d repetitions.\n",
              rate_mbit, congestion_control.c_str(), repeats);
  fs::remove_all(dir);
  return 0;
}
